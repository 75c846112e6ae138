"""A multilingual VoicePrivacy preset (``vpc2026_track2``) run without ``--language`` over a root
that holds several languages: one run per language, each in ``<output_folder>/<language>/``, and
beside them ``languages.json`` and ``languages.md``: every run's per-list rows in one table (the
challenge's table: one row per language x split x list)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from ..atomic import write_json, write_text


def languages_to_run(hp: dict) -> list:
    """The languages a run covers: ``[None]`` (one run, as set) unless ``hp`` names a
    multilingual preset, no ``language``, and a data folder holding several of its languages."""
    from ..data.vpc import languages_under, preset_of

    name = hp.get("vpc_preset")
    if not name or hp.get("language") or not hp.get("data_folder"):
        return [None]
    preset = preset_of(name)
    found = languages_under(hp["data_folder"], preset) if preset.languages else []
    return found if len(found) > 1 else [None]


def each_language(hp: dict, run_one) -> Optional[str]:
    """``run_one(language, output_folder)`` (it returns a results.json path, None on a DDP rank
    other than the main one) per language of :func:`languages_to_run`: the one run's path, or
    with several the combined table's (``languages.json``)."""
    languages = languages_to_run(hp)
    if languages == [None]:
        path = run_one(None, None)
        return None if path is None else str(path)
    out = Path(hp["output_folder"])
    results = {}
    for code in languages:
        path = run_one(code, str(out / code))
        if path is not None:  # None: a DDP rank other than the main one, which writes nothing
            results[code] = str(path)
            print(results[code])
    return str(write_language_table(out, hp["vpc_preset"], results)) if results else None


def list_rows(doc: dict) -> list:
    """(where, attacker, scenario, row) of every per-list row of a results.json: an attacker
    run's ``lists.rows`` or a card's ``lists[where][attacker][scenario].rows``."""
    lists = doc.get("lists") or {}
    if "rows" in lists:
        run = doc.get("run") or {}
        return [
            (run.get("anonymizer") or "original", run.get("attacker"), run.get("scenario"), r)
            for r in lists["rows"]
        ]
    return [
        (where, attacker, scenario, row)
        for where, by_attacker in lists.items()
        for attacker, by_scenario in by_attacker.items()
        for scenario, table in by_scenario.items()
        for row in table.get("rows", [])
    ]


def write_language_table(out: Path, preset: str, results: dict) -> Path:
    """``languages.json`` (each language's results path and rows) and ``languages.md``."""
    rows = []
    for code, path in results.items():
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        for where, attacker, scenario, row in list_rows(doc):
            books = row.get("books") or {}
            rows.append(
                {
                    "language": code,
                    "speech": where,
                    "attacker": attacker,
                    "scenario": scenario,
                    "trial_list": row["trial_list"],
                    "n_target": row.get("n_target"),
                    "n_nontarget": row.get("n_nontarget"),
                    "eer": row.get("eer"),
                    "ci95": row.get("ci95"),
                    "target_share_same_book": books.get("target_share_same_book"),
                }
            )
    write_json(out / "languages.json", {"preset": preset, "results": results, "rows": rows})
    write_text(out / "languages.md", _markdown(preset, rows))
    return out / "languages.json"


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _markdown(preset: str, rows: list) -> str:
    lines = [
        f"# {preset}: one row per language x list",
        "",
        "EER in %, its 95% CI; same book: the share of target trials whose enrollment shares a "
        "book with the trial utterance (Multilingual LibriSpeech). Each language's own report is in "
        "its folder.",
        "",
        "| language | speech | attacker | scenario | list | target | non-target | EER | 95% CI | same book |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ci = r["ci95"] or [None, None]
        lines.append(
            f"| {r['language']} | {r['speech']} | {r['attacker']} | {r['scenario']} | "
            f"{r['trial_list']} | {r['n_target']} | {r['n_nontarget']} | {_pct(r['eer'])} | "
            f"{_pct(ci[0])}-{_pct(ci[1])} | {_pct(r['target_share_same_book'])} |"
        )
    return "\n".join(lines) + "\n"
