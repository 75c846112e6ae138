"""The anonymizer card: ``card.md`` (one screen) and its figures, from results.json's document.

Figures: ``eer_by_attacker.png`` (EER with CIs per attacker and scenario, against the content
lines), ``det.png`` (overlaid DET curves per anonymizer), ``per_speaker.png`` (per-speaker EER,
original against anonymized speech, for each anonymizer's headline attacker). With
``pseudonymise`` the card and figures name speakers ``S01, S02, ...`` and show no attributes.
``table.csv`` and ``table.tex`` (:mod:`sparc_eval.jobs.tables`) hold the cells' numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...atomic import write_text
from ...metrics.bootstrap import UNIT_WORDS
from ...metrics.plots import pyplot, save_figure
from ...metrics.small import small_label
from ..tables import (
    DEFAULT_TABLES,
    TableOptions,
    cell_speakers,
    grid_cells,
    pseudonyms,
    served_by_back_end,
    write_tables,
)
from .utility_report import utility_section

ORIGINAL = "original"


def _save(fig, path) -> Path:
    try:
        return save_figure(fig, path)
    finally:
        pyplot().close(fig)


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _eer_ci(e) -> str:
    if not e:
        return "n/a"
    ci, small = e.get("ci95"), e.get("small")
    text = _pct(e["eer"]) + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "")
    if (
        small
    ):  # a degenerate or few-speaker interval is not a narrow one: the counted bound beside it
        text += f" ({small_label(small)})"
    return text


def _cell_text(cell: dict) -> str:
    if cell.get("status") == "ok":
        o = cell["overall"]
        text = _eer_ci(
            {
                "eer": o["eer"],
                "ci95": (o.get("ci95") or {}).get("eer"),
                "small": o.get("small_evaluation"),
            }
        )
        return text + (" (back-end)" if served_by_back_end(cell) else "")
    return "n/a" if cell.get("status") == "not_applicable" else "failed"


def _back_end_notes(doc: dict) -> list:
    cells = [
        (*t.labels[1:], t.cell)
        for t in grid_cells(doc)
        if t.cell.get("status") == "ok" and served_by_back_end(t.cell)
    ]
    if not cells:
        return []
    lines = [
        "- (back-end): semi-informed by back-end adaptation: a pretrained encoder whose PLDA was "
        "fitted on anonymized training speech, weaker than VoicePrivacy's semi-informed attacker "
        "(which retrains or fine-tunes the whole verifier); read it beside a trained one, not instead"
    ]
    for a, sc, c in cells:
        backend = (c.get("attacker_notes") or {}).get("backend") or {}
        if backend and not backend.get("beats_cosine", True):
            lines.append(
                f"- {a} / {sc}: PLDA did not beat cosine scoring on the same trials (EER "
                f"{_pct(backend['plda_eer'])} against {_pct(backend['cosine_eer'])})"
            )
    return lines


def _singling_out(doc: dict) -> list:
    rows = [
        (*t.labels, t.cell["singling_out"])
        for t in grid_cells(doc)
        if t.cell.get("status") == "ok" and "rate" in (t.cell.get("singling_out") or {})
    ]
    if not rows:
        return []
    lines = [
        "## Singling out (attackers that give embeddings)",
        "",
        "Share of enrolled speakers the attacker isolates among N test speakers (Vauquier et al. "
        "2025; chance tends to 1/e): rate [95% CI, resampling enrolled speakers], chance at that N.",
        "",
        "| speech | attacker | scenario | N | rate [95% CI] | chance |",
        "|---|---|---|---|---|---|",
    ]
    for name, a, sc, so in rows:
        lo, hi = so.get("ci95") or (None, None)
        ci = f" [{_pct(lo)}, {_pct(hi)}]" if lo is not None else ""
        lines.append(
            f"| {name} | {a} | {sc} | {so['N']} | {_pct(so['rate'])}{ci} | {_pct(so['chance'])} |"
        )
    return lines + [""]


def _headline(doc: dict) -> list:
    lines = [
        "## Headline",
        "",
        "Lowest EER of the attacker x scenario cells on the anonymized speech's utterance trials "
        "(higher is more private). A selected minimum is biased low and its CI ignores the selection: the "
        "cross-fitted value picks the best cell on half the test speakers and reads it on the other half, "
        "each half on the trials whose enrolled and tested speakers are both in it. "
        "Anonymizers are compared cell by cell (below), never by headline.",
        "",
    ]
    if (doc.get("run") or {}).get("synthetic_speech"):
        lines += [
            "The evaluated speech is synthetic (a demo corpus, espeak-ng voices): every number on this "
            "card is a smoke test of the pipeline, not a finding about the anonymizer.",
            "",
        ]
    for name, h in doc["headline"].items():
        if "not_applicable" in h:
            lines.append(f"- **{name}**: {h['not_applicable']}")
            continue
        bound = h.get("content_bound")
        if "attacker" in h:
            cross = h.get("cross_fitted")
            lines.append(
                f"- **{name}**: {_eer_ci(h)}{_cell_mark(doc, h['attacker'], name, h['scenario'])}, "
                f"lowest of {h['n_cells']} cells ({h['attacker']}{_marks(doc, h['attacker'])}, "
                f"{h['scenario']}; selected"
                + ("" if h.get("semi_informed", True) else "; no semi-informed attack among them")
                + ")"
                + (_cross_fitted_text(cross) if cross else "")
                + (f"; content bound {_pct(bound)}" if bound is not None else "")
                + _tpr_text(h.get("tpr_at_1pct"))
                + _beyond_eer_text(h.get("beyond_eer"))
            )
            lines += _highest_tpr_line(name, h, doc)
        probe = h.get("probe_level")
        if probe:
            lines.append(
                f"- **{name}**, probe-level text attack ({probe['attacker']}{_marks(doc, probe['attacker'])}, "
                "its own P-word probes, "
                f"{probe['scenario']}): {_eer_ci(probe)}"
            )
    return lines + [""]


def _cross_fitted_text(cross: dict) -> str:
    """The headline's cross-fitted part, flagged when a half has too few speakers for a verdict,
    or when the halves could not keep each other's enrolled speakers out (no ``enroll2spk``)."""
    notes = []
    if cross.get("small"):
        per = "-".join(str(n) for n in sorted(set(cross.get("n_speakers") or []))) or "too few"
        notes.append(f"small: {per} speakers per half, no verdict")
    side = cross.get("enrollment_side")
    if side and not side.startswith("same half"):
        notes.append(f"enrollment {side}")
    return f"; cross-fitted {_pct(cross['eer'])}" + (f" ({'; '.join(notes)})" if notes else "")


def _tpr_value(tpr: dict) -> str:
    ci = tpr.get("ci95")
    interval = f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci and ci[0] is not None else ""
    return _pct(tpr["tpr"]) + interval


def _tpr_text(tpr: dict | None) -> str:
    if not tpr:
        return "; TPR at 1% FPR: not reported (too few non-target trials, or not a target FPR)"
    return f"; TPR at 1% FPR {_tpr_value(tpr)}"


def _beyond_eer_text(panel: dict | None) -> str:
    parts = [
        f"{label} {panel[k]:.3f}"
        for k, label in (("min_cllr", "min Cllr"), ("linkability", "D<->sys"))
        if panel and panel.get(k) is not None
    ]
    return "; " + ", ".join(parts) if parts else ""


def _highest_tpr_line(name: str, h: dict, doc: dict) -> list:
    """The cell with the highest TPR at 1% FPR, when it is not the lowest-EER cell."""
    best = h.get("highest_tpr_at_1pct")
    if not best or (best["attacker"], best["scenario"]) == (h["attacker"], h["scenario"]):
        return []
    return [
        f"- **{name}**, highest TPR at 1% FPR of the {h['n_cells']} cells: {best['attacker']}"
        f"{_marks(doc, best['attacker'])} ({best['scenario']}) {_tpr_value(best)}"
    ]


MARKS = {"weak": "‡", "wide": "†", "small": "†", "learning": "§"}
MARK_LEGEND = {
    "‡": "an attacker flagged weak (Attacker strength): no verdict involves it",
    "†": "too few speakers, or a CI too wide or degenerate: no verdict involves this cell "
    "(Attacker strength)",
    "§": "its learning curve still falls: more training data would lower its EER",
}


ATTACKER_FLAGS = ("weak", "learning")  # wide and small are the cells' (_cell_mark)


def _marks(doc: dict, attacker: str) -> str:
    """The attacker's own marks: weak, still learning (and wide or small in a card written before
    the flags were per cell, which has no ``strength.*.cells``)."""
    st = (doc.get("strength") or {}).get(attacker) or {}
    own = ATTACKER_FLAGS if "cells" in st else MARKS
    return "".join(dict.fromkeys(MARKS[f] for f in st.get("flags") or [] if f in own))


def _cell_mark(doc: dict, attacker: str, where: str, scenario: str) -> str:
    """† on a cell flagged wide or small (issue 61: the flag is the cell's, not the attacker's)."""
    st = (doc.get("strength") or {}).get(attacker) or {}
    return "†" if ((st.get("cells") or {}).get(where) or {}).get(scenario) else ""


def _mark_legend(doc: dict) -> list:
    strength = doc.get("strength") or {}
    used = {m for a in strength for m in _marks(doc, a)}
    used |= {"†"} if any(st.get("cells") for st in strength.values()) else set()
    return [f"- {m}: {MARK_LEGEND[m]}" for m in MARK_LEGEND if m in used]


def _privacy_table(doc: dict) -> list:
    scenarios = doc["run"]["scenarios"][1:]
    lines = [
        "## Privacy: EER [95% CI] per attacker and scenario",
        "",
        "| anonymizer | attacker | original speech | " + " | ".join(scenarios) + " |",
        "|---|---|---|" + "---|" * len(scenarios),
    ]
    for name, by in doc["cells"].items():
        if name == ORIGINAL:
            continue
        for attacker, by_sc in by.items():
            original = doc["cells"][ORIGINAL][attacker][ORIGINAL]
            lines.append(
                f"| {name} | {attacker}{_marks(doc, attacker)} | {_cell_text(original)}"
                f"{_cell_mark(doc, attacker, ORIGINAL, ORIGINAL)} | "
                + " | ".join(
                    _cell_text(by_sc.get(sc, {})) + _cell_mark(doc, attacker, name, sc)
                    for sc in scenarios
                )
                + " |"
            )
    notes = sorted(
        {
            f"{a} / {sc}: {c['reason']}"
            for name, by in doc["cells"].items()
            for a, by_sc in by.items()
            for sc, c in by_sc.items()
            if c.get("status") != "ok"
        }
    )
    marks = _mark_legend(doc) + _back_end_notes(doc)
    return (
        lines
        + [""]
        + marks
        + [f"- n/a or failed: {n}" for n in notes[:8]]
        + ([""] if notes or marks else [])
    )


def _content(doc: dict) -> list:
    c = doc["content"]
    if "not_applicable" in c:
        reference = _reference(c.get("reference") or {}, doc)
        return (["## What the words give away", ""] + reference + [""]) if reference else []
    lines = [
        "## What the words give away",
        "",
        f"- Content bound ({c['attacker']} on the G2P of the original transcripts): {_eer_ci(c['bound'])}",
    ]
    for name, by_sc in c["left"].items():
        lines.append(
            f"- Content {name} leaves ({c['attacker']} on its speech's words): "
            + ", ".join(f"{sc} {_eer_ci(e)}" for sc, e in by_sc.items())
        )
    for attacker, by in c["text"].items():
        lines.append(
            f"- Text attacker {attacker} (its own P-word probes): original words {_eer_ci(by['original'])}; "
            + ", ".join(f"{n} words {_eer_ci(e)}" for n, e in by.items() if n != "original")
        )
    return lines + _reference(c.get("reference") or {}, doc) + [""]


def _reference(reference: dict, doc: dict) -> list:
    """Every words-only attacker on the utterance trials, the lowest of K named as selected."""
    lines = []
    for where, by_sc in reference.items():
        for sc, r in by_sc.items():
            each = ", ".join(f"{a}{_marks(doc, a)} {_eer_ci(e)}" for a, e in r["eers"].items())
            lowest = r["eers"][r["lowest"]]
            lines.append(
                f"- Words alone on the utterance trials, {where}"
                + ("" if sc == "original" else f" {sc}")
                + f": {each}; lowest of {r['k']} (selected): {r['lowest']} {_pct(lowest['eer'])}"
            )
    return lines


PAIRING = {"trials": "same trials", "speakers": "same speakers (other trials)", False: "unpaired"}


def _pairing(c: dict) -> str:
    """How a comparison was paired, and a fallback to test speakers where a cell had no enrolled
    ones (written before enroll2spk)."""
    held = "; enrolled side held fixed" if c.get("enrollment_side") else ""
    return f"{PAIRING.get(c['paired'], c['paired'])}{held}"


def _beyond(doc: dict) -> list:
    rows = doc["voice_beyond_content"]
    if not rows:
        return []
    lines = [
        "## Voice leakage beyond content",
        "",
        "Each audio attacker against every words-only attacker, EER difference (audio - words) with its paired "
        f"95% CI resampling {UNIT_WORDS.get(doc['run'].get('bootstrap_unit'), 'test speakers')}, and the "
        "pairing used. "
        '"Finds more than every words-only attacker": '
        "every two-sided 95% CI below 0 (intersection-union; each claim one-sided at 2.5%); "
        '"<words> finds more than <audio> here": some words-only attacker significantly lower '
        "(Holm over K at 5% two-sided, one direction counted: one-sided 2.5%), which says nothing "
        "about the voice beyond the words and is withheld when no semi-informed audio attack ran. "
        "A flagged cell or attacker gives no verdict.",
        "",
        "| anonymizer | attacker | scenario | EER | against each words-only attacker: EER, difference [CI], "
        "pairing | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        against = "; ".join(
            f"{c['attacker']}{_marks(doc, c['attacker'])} {_pct(c['eer'])}, {_diff(c)}, "
            f"{_pairing(c)}"
            + (" (weak: not in the verdict)" if c["attacker"] in (r.get("left_out") or {}) else "")
            for c in r["against"]
        )
        lines.append(
            f"| {r['anonymizer']} | {r['attacker']}{_marks(doc, r['attacker'])} | {r['scenario']} | "
            f"{_pct(r['eer'])} | {against} | {r['verdict']} |"
        )
    return lines + [""] + _mark_legend(doc) + [""]


def _diff(c: dict) -> str:
    ci = c.get("ci95") or [None, None]
    return f"{_pct(c['diff'])} [{_pct(ci[0])}, {_pct(ci[1])}]"


def _strength(doc: dict) -> list:
    warned = [(a, w) for a, st in doc["strength"].items() for w in st["warnings"]]
    notes = [(a, n) for a, st in doc["strength"].items() for n in st.get("notes") or []]
    lines = ["## Attacker strength", ""]
    if not warned:
        lines += [
            "No attacker is flagged, and every CI is narrow enough for a verdict."
            if notes
            else "Every attacker identifies speakers on original speech (EERs in the privacy table's "
            "'original speech' column), and every CI is narrow enough for a verdict."
        ]
    lines += [f"- **{a}**: {w}" for a, w in warned] + [f"- {a}: {n}" for a, n in notes]
    return lines + [""]


def _same_sex(doc: dict) -> list:
    found = doc.get("same_sex") or {}
    if not found or "not_applicable" in found:
        return []
    lines = [
        "## Same-sex trials",
        "",
        "VoicePrivacy scores per-sex lists (enrollment and trial speakers of one sex); the card's split pools "
        "both sexes and cross-sex trials. The verdicts above read the pooled EER.",
        "",
        "| speech | attacker | scenario | pooled | " + " | ".join(_sexes(found)) + " |",
        "|---|---|---|---|" + "---|" * len(_sexes(found)),
    ]
    for where, by in found.items():
        for attacker, by_sc in by.items():
            for sc, by_sex in by_sc.items():
                pooled = doc["cells"][where][attacker][sc]
                lines.append(
                    f"| {where} | {attacker} | {sc} | {_cell_text(pooled)} | "
                    + " | ".join(_sex_text(by_sex.get(x)) for x in _sexes(found))
                    + " |"
                )
    return lines + [""]


def _lists(doc: dict) -> list:
    """The challenge-shaped tables: one per cell that scored VoicePrivacy lists, each row a list."""
    from ...metrics.results import list_table_lines

    lines = []
    for where, by in (doc.get("lists") or {}).items():
        for _attacker, by_sc in by.items():
            for sc, table in by_sc.items():
                named = {**table, "label": f"{table['label']} ({where} speech, {sc})"}
                lines += list_table_lines(named)
    return lines + [""] if lines else []


def _sexes(found: dict) -> list:
    return sorted(
        {
            x
            for by in found.values()
            for by_sc in by.values()
            for by_sex in by_sc.values()
            for x in by_sex
        }
    )


def _sex_text(e) -> str:
    if not e:
        return "n/a"
    small = e.get("small_evaluation")  # says the speaker count itself
    return _eer_ci({"eer": e["eer"], "ci95": e["ci95"], "small": small}) + (
        "" if small else f" ({e['n_speakers']} speakers)"
    )


def _learning(doc: dict) -> list:
    rows = doc.get("learning_curves")
    if not isinstance(rows, list) or not rows:
        return []
    shares = sorted({k for r in rows for k in r["eer"]}, key=float)
    lines = [
        "## Learning curves (EER by share of the training speakers)",
        "",
        "The EER still falls when the paired 95% CI of (100% - 50%) lies below 0 (one-sided 2.5%).",
        "",
        "| attacker | speech | scenario | "
        + " | ".join(f"{float(k):.0%}" for k in shares)
        + " | 50% -> 100% | verdict |",
        "|---|---|---|" + "---|" * (len(shares) + 2),
    ]
    for r in rows:
        lines.append(
            f"| {r['attacker']}{_marks(doc, r['attacker'])} | {r['where']} | {r['scenario']} | "
            + " | ".join(_pct(r["eer"].get(k)) for k in shares)
            + f" | {_diff({'diff': r['diff_50_100'], 'ci95': r['ci95']}) if r.get('ci95') else 'n/a'}"
            + f" | {_curve_verdict(r)} |"
        )
    return lines + [""]


def _curve_verdict(r: dict) -> str:
    if r.get("withheld"):
        return r["withheld"]
    if r.get("warning"):
        return "still falls: more training data would likely lower the EER"
    return "no significant fall (the 95% CI reaches 0)" if r.get("ci95") else "n/a"


def _comparisons(doc: dict) -> list:
    if not doc["comparisons"]:
        return []
    lines = [
        "## Anonymizers compared (b - a, 95% CIs; the pairing used in brackets)",
        "",
        "A verdict in one direction is one-sided at 2.5%; a flagged cell or attacker gives none.",
        "",
    ]
    for row in doc["comparisons"]:
        for e in row["eer"]:
            ci = e["ci95"]
            lines.append(
                f"- {row['a']} vs {row['b']}, {e['attacker']}{_marks(doc, e['attacker'])} ({e['scenario']}): "
                f"EER {_pct(e['eer_a'])} vs "
                f"{_pct(e['eer_b'])}, difference {_pct(e['diff'])} [{_pct(ci[0])}, {_pct(ci[1])}] "
                f"({_pairing(e)}): {e['verdict']}"
            )
        for metric, u in row["utility"].items():
            if "diff" in u:
                ci = u.get("ci95")
                lines.append(
                    f"- {row['a']} vs {row['b']}, {metric}: difference {u['diff']:.3f}"
                    + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else " (no CI)")
                    + (f": {u['verdict']}" if u.get("verdict") else "")
                )
    return lines + [""]


def _speakers(doc: dict, pseudonyms: dict) -> list:
    """The headline cell's most identifiable speakers: the held-out EER of the ``k`` picked on one
    half of each speaker's test recordings and measured on the other (``worst_speakers``, as
    docs/definitions.md defines it) beside their in-sample EER, then the lowest per-speaker EERs
    on all trials, named and labelled in-sample (biased low)."""
    from ...metrics.panel import WORST_FLOOR, WORST_K

    lines = []
    for name, h in doc["headline"].items():
        if "attacker" not in h:
            continue
        cell = doc["cells"][name][h["attacker"]][h["scenario"]]
        per = cell.get("per_speaker") or {}
        overall = cell.get("overall") or {}
        ws = overall.get("worst_speakers")
        if ws:
            held = (
                f"held-out EER {_pct(ws['held_out_eer'])} of the {ws['k']} picked on the other half "
                f"of each speaker's test recordings (in-sample {_pct(ws['in_sample_eer'])}, biased "
                f"low; {ws['n_eligible']} eligible speakers)"
            )
        else:
            why = (cell.get("not_applicable") or {}).get("overall.worst_speakers")
            if why is None and "worst_speakers" not in overall:
                why = "the cell predates the held-out pick"
            elif why is None:
                why = (
                    f"fewer than {2 * WORST_K} speakers have {WORST_FLOOR}+ target trials in each "
                    "half of their test recordings, or there are no per-speaker EERs (the cell's "
                    "results.json, not_applicable)"
                )
            held = f"held-out EER not computed: {why}"
        worst = sorted((v["eer"], s) for s, v in per.items() if v.get("eer") is not None)[:3]
        named = (
            "; lowest per-speaker EERs, in-sample (biased low): "
            + ", ".join(f"{pseudonyms.get(s, s)} ({_pct(e)})" for e, s in worst)
            if worst
            else ""
        )
        if ws or worst:
            lines.append(
                f"- {name}: most identifiable speakers under {h['attacker']} ({h['scenario']}): "
                + held
                + named
            )
    return (["## Speakers", ""] + lines + [""]) if lines else []


def _footer(doc: dict) -> list:
    run = doc["run"]
    left = run["n_left_out"]
    lines = [
        "## Run",
        "",
        f"- Data: {run['dataset']}, {run['split']}, {run['n_enroll_speakers']} enrollment speakers, "
        f"{run['n_evaluated_utterances']} evaluated utterances"
        + (
            f"; {left} left out of every attacker alike (anonymizer failures: anonymized/<name>/eval/failures.jsonl)"
            if left
            else ""
        ),
        "- Time: " + ", ".join(f"{k} {v:.0f} s" for k, v in run["timings_s"].items()),
    ]
    lines += _draws(doc) + _verdict_count(doc)
    if run["deviations"]:
        first = sorted(run["deviations"], key=lambda k: (not k.startswith("scenarios"), k))
        lines += ["- Departures from the papers:"] + [
            f"  - `{k}`: {run['deviations'][k]}" for k in first
        ]
    return lines + [""]


def _verdict_count(doc: dict) -> list:
    """How many tests the verdicts read, and that none is corrected for their number."""
    found = doc.get("verdict_tests")
    if not found:
        return []
    parts = ", ".join(
        f"{k.replace('_', ' ')} {v['drawn']}"
        + (f" ({v['withheld']} withheld)" if v["withheld"] else "")
        for k, v in found["by_section"].items()
        if v["drawn"] or v["withheld"]
    )
    return [
        f"- Verdict tests: {found['drawn']} drawn"
        + (f" ({parts})" if parts else "")
        + f"; {found['withheld']} withheld (a flag, too few speakers, no interval, or no "
        "semi-informed attack). Each is at its own level (two-sided 95% intervals: a claim in one "
        "direction is one-sided at 2.5%), none corrected for their number: were every null true, "
        f"at most about {found['drawn'] * 0.05:.1f} of these {found['drawn']} tests would still "
        "show a difference."
    ]


def _draws(doc: dict) -> list:
    """Whose random draws made the attacker's enrollment and training speech, per anonymizer."""
    parts = []
    for name, record in (doc.get("anonymizers") or {}).items():
        draws = record.get("draws") or {}
        if draws:
            seed = (
                f", seed {draws['attacker_seed']}" if draws.get("attacker_seed") is not None else ""
            )
            parts.append(f"{name}: {draws['mode']}; the attacker used {draws['attacker']}{seed}")
    return ["- Draws: " + "; ".join(parts)] if parts else []


def pseudonyms_of(doc: dict) -> dict:
    return pseudonyms(cell_speakers(doc))


def render_card(doc: dict, figures: dict, pseudonymise: bool) -> str:
    pseudonyms = pseudonyms_of(doc) if pseudonymise else {}
    lines = [
        f"# Anonymizer card: {', '.join(doc['run']['anonymizers'])} on {doc['run']['dataset']}",
        "",
    ]
    for part in (
        _headline,
        _privacy_table,
        _content,
        _beyond,
        _singling_out,
        _strength,
        _lists,
        _same_sex,
        _learning,
        utility_section,
        _comparisons,
    ):
        lines += part(doc)
    lines += _speakers(doc, pseudonyms)
    lines += [f"![{name}]({path.name})" for name, path in figures.items() if path] + [""]
    return "\n".join(lines + _footer(doc))


# --- figures -------------------------------------------------------------------------------------

SCENARIO_COLOURS = {
    "original": "#bab0ac",
    "ignorant": "#4c78a8",
    "lazy-informed": "#f58518",
    "semi-informed": "#54a24b",
}


def _bars(doc: dict, name: str) -> list:
    """(label, scenario, eer, [below, above]) of every finished cell of one anonymizer, original first."""
    bars = []
    for attacker, by_sc in doc["cells"][name].items():
        for sc, cell in [(ORIGINAL, doc["cells"][ORIGINAL][attacker][ORIGINAL]), *by_sc.items()]:
            if cell.get("status") == "ok":
                o = cell["overall"]
                ci = (o.get("ci95") or {}).get("eer") or [o["eer"], o["eer"]]
                bars.append((attacker, sc, o["eer"], [o["eer"] - ci[0], ci[1] - o["eer"]]))
    return bars


def _legend(ax) -> None:
    """A legend only where something is labelled (matplotlib warns the user otherwise)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6)


def plot_eers(path, doc: dict):
    plt = pyplot()
    names = [n for n in doc["cells"] if n != ORIGINAL]
    fig, axes = plt.subplots(
        1, len(names), figsize=(5 * len(names), 3.6), squeeze=False, sharey=True
    )
    content = doc["content"]
    for ax, name in zip(axes[0], names):
        bars = _bars(doc, name)
        x = np.arange(len(bars))
        ax.bar(
            x,
            [b[2] for b in bars],
            yerr=np.array([b[3] for b in bars]).T if bars else None,
            capsize=3,
            color=[SCENARIO_COLOURS.get(b[1], "#72b7b2") for b in bars],
        )
        if (content.get("bound") or {}).get("eer") is not None:
            ax.axhline(
                content["bound"]["eer"], ls="--", color="#e45756", lw=1, label="content bound"
            )
        left = ((content.get("left") or {}).get(name) or {}).get("lazy-informed")
        if left and left.get("eer") is not None:
            ax.axhline(
                left["eer"], ls=":", color="black", lw=1, label="content it leaves (lazy-informed)"
            )
        ax.set_xticks(x, [f"{b[0]}\n{b[1]}" for b in bars], rotation=60, fontsize=6)
        ax.set_title(f"{name} (grey: original speech)", fontsize=9)
        ax.set_ylabel("EER")
        _legend(ax)
    return _save(fig, path)


def plot_det(path, doc: dict, root: Path):
    from scipy.stats import norm

    from ...attack.cell_results import cell_trials
    from ...metrics.core import counts, det_points

    plt = pyplot()
    names = [n for n in doc["cells"] if n != ORIGINAL]
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4), squeeze=False)
    ticks = np.array([0.001, 0.01, 0.05, 0.2, 0.5])
    low, high = norm.ppf(5e-4), norm.ppf(0.7)
    for ax, name in zip(axes[0], names):
        for attacker, by_sc in doc["cells"][name].items():
            for sc, cell in by_sc.items():
                if cell.get("status") != "ok":
                    continue
                t = cell_trials(root / cell["folder"]).scored()
                far, frr = (
                    np.clip(x, 1e-4, 1 - 1e-4) for x in det_points(counts(t.score, t.label))[:2]
                )
                ax.plot(norm.ppf(far), norm.ppf(frr), label=f"{attacker} ({sc})", lw=1)
        ax.set_xticks(norm.ppf(ticks), [f"{t:.1%}" for t in ticks])
        ax.set_yticks(norm.ppf(ticks), [f"{t:.1%}" for t in ticks])
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.set_xlabel("false acceptance")
        ax.set_ylabel("false rejection")
        ax.set_title(f"DET, {name}")
        _legend(ax)
    return _save(fig, path)


def plot_per_speaker(path, doc: dict, pseudonyms: dict):
    plt = pyplot()
    heads = {n: h for n, h in doc["headline"].items() if "attacker" in h}
    if not heads:
        return None
    fig, axes = plt.subplots(1, len(heads), figsize=(4.2 * len(heads), 4), squeeze=False)
    for ax, (name, h) in zip(axes[0], heads.items()):
        anon = doc["cells"][name][h["attacker"]][h["scenario"]].get("per_speaker") or {}
        orig = doc["cells"][ORIGINAL][h["attacker"]][ORIGINAL].get("per_speaker") or {}
        both = [
            s
            for s in anon
            if s in orig and anon[s].get("eer") is not None and orig[s].get("eer") is not None
        ]
        x, y = [orig[s]["eer"] for s in both], [anon[s]["eer"] for s in both]
        ax.scatter(x, y, s=14)
        ax.plot([0, 0.6], [0, 0.6], ls=":", color="grey")
        for s in sorted(both, key=lambda s: anon[s]["eer"])[:3]:
            ax.annotate(pseudonyms.get(s, s), (orig[s]["eer"], anon[s]["eer"]), fontsize=6)
        ax.set_xlabel("per-speaker EER, original speech")
        ax.set_ylabel(f"per-speaker EER, {name}")
        ax.set_title(f"{h['attacker']} ({h['scenario']})", fontsize=8)
    return _save(fig, path)


CARD_LABELS = ("anonymizer", "attacker", "scenario")
CARD_CAPTION = (
    "Anonymizer card: EER per anonymizer, attacker and scenario (original: the attacker on "
    "original speech; higher is more private)."
)


def write_card(out_dir, doc: dict, card) -> Path:
    return render_card_folder(out_dir, doc, pseudonymise=card.pseudonymise, plots=card.plots)


def render_card_folder(
    out_dir, doc: dict, *, pseudonymise: bool, plots: bool, tables: TableOptions = DEFAULT_TABLES
) -> Path:
    """card.md, table.csv, table.tex and the figures from results.json's document (and, for the
    DET curves, the cells' scores): what a run writes, and what ``sparc-eval report`` rewrites."""
    out_dir = Path(out_dir)
    # the tables first: an unknown metric stops before any file is written
    write_tables(out_dir, CARD_LABELS, grid_cells(doc), CARD_CAPTION, tables)
    figures = {}
    if plots:
        pseudonyms = pseudonyms_of(doc) if pseudonymise else {}
        figures = {
            "EER per attacker and scenario": plot_eers(out_dir / "eer_by_attacker.png", doc),
            "DET curves": plot_det(out_dir / "det.png", doc, out_dir),
            "per-speaker EER": plot_per_speaker(out_dir / "per_speaker.png", doc, pseudonyms),
        }
    path = out_dir / "card.md"
    write_text(path, render_card(doc, figures, pseudonymise))
    return path
