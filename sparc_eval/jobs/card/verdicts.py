"""What the card concludes from its cells: content rows, voice leakage beyond content, the
headline privacy figure, attacker strength, same-sex EERs, and anonymizers compared pairwise.

Content (content-leakage paper, Table 1): the phone-only attacker on the G2P of the original
transcripts is the **content bound** (``content.bound``, kept with that meaning), what a perfect
voice anonymizer (error-free STT-TTS) still leaves; the same attacker on the words the anonymized
speech says is the **content this anonymizer leaves**. Any words-only attacker's EER is at best an
upper bound on what the words allow, so the **content reference** (``content.reference``) lists
every words-only attacker on the card's utterance trials, and an audio attacker is read against
all of them (:mod:`.reference`: an intersection-union test for "finds more than every words-only
attacker here", Holm over K for "<words attacker> finds more than <audio attacker> here",
"within" otherwise). The card's flags bind its verdicts (:mod:`.flags`).
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

from ...attack.cell_results import cell_trials
from ...attack.compare import ci_verdict, compare_cells
from ...attack.compare import verdict as eer_verdict
from ...errors import DataError
from ...metrics.small import too_few
from .flags import Flags, cell_flags, semi_informed_ran
from .reference import beyond_words_verdict, cross_fitted, probe_level, reads_words, words_only
from .settings import CardSettings

ORIGINAL = "original"


class CellTrials:
    """Each finished cell's trials, read once."""

    def __init__(self, root: Path, cells: dict, flags: Flags | None = None):
        self.root, self.cells, self._trials = Path(root), cells, {}
        self.flags = flags

    def ok(self, where, attacker, scenario) -> bool:
        return self.cells.get(where, {}).get(attacker, {}).get(scenario, {}).get("status") == "ok"

    def cell(self, where, attacker, scenario) -> dict:
        return self.cells[where][attacker][scenario]

    def trials(self, folder: str):
        if folder not in self._trials:
            self._trials[folder] = cell_trials(self.root / folder)
        return self._trials[folder]

    def compare_folders(self, folder_a: str, folder_b: str, card: CardSettings):
        """b - a for two finished cells given by their folders (relative to the card's folder)."""
        boot = card.evaluation.bootstrap
        if boot.n_boot <= 0:
            return None
        try:
            return compare_cells(self.trials(folder_a), self.trials(folder_b), card.evaluation)
        except DataError:
            return None

    def compare(self, a, b, card: CardSettings):
        """b - a for two cells (where, attacker, scenario); None when either did not run."""
        if not (self.ok(*a) and self.ok(*b)):
            return None
        found = self.compare_folders(self.cell(*a)["folder"], self.cell(*b)["folder"], card)
        if found is not None and self.flags is not None:  # the card's flags bind (issue 61)
            found["withheld"] = self.flags.withheld(cells=(a, b), attackers=(a[1], b[1]))
        return found


def _eer(cell: dict) -> dict | None:
    if not cell or cell.get("status") != "ok":
        return None
    overall = cell["overall"]
    return {
        "eer": overall["eer"],
        "ci95": overall["ci95"]["eer"] if overall.get("ci95") else None,
        "n_trial_speakers": cell.get("n_trial_speakers"),
        "small": overall.get("small_evaluation"),
    }


def _tpr_at_1pct(cell: dict) -> dict | None:
    """The cell's TPR at 1% FPR with its CI, or None (not run, or too few non-targets for it)."""
    cell = cell or {}
    overall = cell.get("overall") or {}
    tpr = (overall.get("tpr_at_fpr") or {}).get("0.01")
    if cell.get("status") != "ok" or tpr is None:
        return None
    ci = ((overall.get("ci95") or {}).get("tpr_at_fpr") or {}).get("0.01")
    return {"tpr": tpr, "ci95": ci}


def _highest_tpr(by: dict) -> dict | None:
    """The utterance-trial cell with the highest TPR at 1% FPR (it need not be the lowest-EER one)."""
    found = [
        {**t, "attacker": attacker, "scenario": sc}
        for attacker, by_sc in by.items()
        for sc, cell in by_sc.items()
        if not probe_level(cell) and (t := _tpr_at_1pct(cell)) is not None
    ]
    return max(found, key=lambda x: x["tpr"]) if found else None


def _needs(cell: dict, what: str) -> bool:
    return bool((cell.get("needs") or {}).get(what))


def _is_text(cell: dict) -> bool:
    return _needs(cell, "words") and not _needs(cell, "split")


def content_rows(card: CardSettings, cells: dict) -> dict:
    reference = content_reference(cells)
    if card.content_attacker is None:
        return {"not_applicable": "no content_attacker is set", "reference": reference}
    bound = _eer(cells[ORIGINAL][card.content_attacker][ORIGINAL])
    left = {
        name: {sc: _eer(by[card.content_attacker][sc]) for sc in card.scenarios}
        for name, by in cells.items()
        if name != ORIGINAL
    }
    text = {}
    for attacker, by in cells[ORIGINAL].items():
        if _is_text(by[ORIGINAL]):
            text[attacker] = {
                "original": _eer(by[ORIGINAL]),
                **{
                    name: _eer(c[attacker].get("lazy-informed"))
                    for name, c in cells.items()
                    if name != ORIGINAL
                },
            }
    return {
        "attacker": card.content_attacker,
        "bound": bound,
        "left": left,
        "text": text,
        "reference": reference,
    }


def content_reference(cells: dict) -> dict:
    """Every words-only attacker's EER on the card's utterance trials, per speech and scenario, the
    lowest of the K named (a selected minimum: biased low, an upper bound on what the words allow)."""
    out = {}
    for where, by in cells.items():
        found = {}
        for attacker, by_sc in by.items():
            for sc, cell in by_sc.items():
                if words_only(cell) and cell["overall"].get("eer") is not None:
                    found.setdefault(sc, {})[attacker] = _eer(cell)
        out[where] = {
            sc: {"eers": eers, "lowest": min(eers, key=lambda a: eers[a]["eer"]), "k": len(eers)}
            for sc, eers in found.items()
        }
    return out


def _against(found: dict, attacker: str) -> dict:
    return {
        "attacker": attacker,
        "eer": found["eer_a"],
        "diff": found["eer_diff"],
        "ci95": found["eer_diff_ci95"],
        "p_value": found["eer_p_value"],
        "paired": found["paired"],
        "small": found.get("small"),
        "withheld": found.get("withheld"),
        **({"enrollment_side": found["enrollment_side"]} if "enrollment_side" in found else {}),
    }


def voice_beyond_content(card: CardSettings, cells: dict, reader: CellTrials) -> list:
    """Each audio attacker on anonymized speech against every words-only attacker on the same trials.
    ``content_eer``, ``diff``, ``ci95`` and ``paired`` keep their meaning (against the content
    attacker); ``against`` holds every words-only comparison, and the verdict reads them all but
    those flagged weak (``left_out``): another words-only attacker finds significantly more on
    the same trials, so the verdict no longer rests on the weak one (issue 61)."""
    weak = reader.flags.attackers if reader.flags is not None else {}
    rows = []
    for name, by in cells.items():
        if name == ORIGINAL:
            continue
        for attacker, by_scenario in by.items():
            for sc, cell in by_scenario.items():
                if not (_needs(cell, "audio") and cell.get("status") == "ok"):
                    continue
                words = [w for w, w_by in by.items() if words_only(w_by.get(sc, {}))]
                against = [
                    _against(found, w)
                    for w in words
                    if (found := reader.compare((name, w, sc), (name, attacker, sc), card))
                ]
                if not against:
                    continue
                content = (
                    next((c for c in against if c["attacker"] == card.content_attacker), None) or {}
                )
                left_out = {
                    c["attacker"]: weak[c["attacker"]]["weak"]
                    for c in against
                    if "weak" in weak.get(c["attacker"], {})
                }
                verdict = beyond_words_verdict(
                    [c for c in against if c["attacker"] not in left_out],
                    attacker,
                    semi_informed_ran(cells, name),
                )
                rows.append(
                    {
                        "anonymizer": name,
                        "attacker": attacker,
                        "scenario": sc,
                        "eer": _eer(cell)["eer"],
                        "content_eer": content.get("eer"),
                        "diff": content.get("diff"),
                        "ci95": content.get("ci95"),
                        "paired": content.get("paired"),
                        "against": against,
                        "left_out": left_out,
                        "verdict": verdict
                        + (f" ({', '.join(left_out)}: flagged weak, left out)" if left_out else ""),
                    }
                )
    return rows


def headlines(
    card: CardSettings, cells: dict, content: dict, reader: CellTrials | None = None
) -> dict:
    """Per anonymizer: the lowest EER of the N attacker x scenario cells on its utterance trials,
    named, with the cross-fitted value beside it (a selected minimum is biased low); the probe-level
    text attack (P-word probes) as its own line; the content bound."""
    out = {}
    for name, by in cells.items():
        if name == ORIGINAL:
            continue
        found = [
            (e["eer"], attacker, sc, e)
            for attacker, by_sc in by.items()
            for sc, cell in by_sc.items()
            if not probe_level(cell) and (e := _eer(cell)) is not None
        ]
        probes = [
            (e["eer"], attacker, sc, e)
            for attacker, by_sc in by.items()
            for sc, cell in by_sc.items()
            if probe_level(cell) and (e := _eer(cell)) is not None
        ]
        if not found and not probes:
            out[name] = {"not_applicable": "no attacker ran on this anonymizer's speech"}
            continue
        row = {
            "content_bound": (content.get("bound") or {}).get("eer"),
            "semi_informed": semi_informed_ran(cells, name),  # else the strongest attack is missing
        }
        if not found:  # text attackers alone: the probe-level cell is the headline (its keys kept)
            eer, attacker, sc, e = min(probes, key=lambda x: x[0])
            row.update(
                eer=eer,
                ci95=e["ci95"],
                small=e["small"],
                attacker=attacker,
                scenario=sc,
                n_cells=len(probes),
                selected=True,
                cross_fitted=None,
                trials="probe-level",
            )
        if found:
            eer, attacker, sc, e = min(found, key=lambda x: x[0])
            row.update(
                eer=eer,
                ci95=e["ci95"],
                small=e["small"],
                attacker=attacker,
                scenario=sc,
                n_cells=len(found),
                selected=True,
                cross_fitted=_cross_fit(card, by, reader) if reader is not None else None,
                tpr_at_1pct=_tpr_at_1pct(by[attacker][sc]),
                highest_tpr_at_1pct=_highest_tpr(by),
                beyond_eer={  # the selected cell's panel (sparc_eval.metrics.panel)
                    k: by[attacker][sc]["overall"].get(k) for k in ("min_cllr", "linkability")
                },
            )
        if probes:
            eer, attacker, sc, e = min(probes, key=lambda x: x[0])
            row["probe_level"] = {
                "eer": eer,
                "ci95": e["ci95"],
                "attacker": attacker,
                "scenario": sc,
                "n_cells": len(probes),
            }
        out[name] = row
    return out


def _cross_fit(card: CardSettings, by: dict, reader: CellTrials) -> dict | None:
    trials = {
        f"{attacker}/{sc}": reader.trials(cell["folder"]).scored()
        for attacker, by_sc in by.items()
        for sc, cell in by_sc.items()
        if cell.get("status") == "ok" and not probe_level(cell)
    }
    if not trials:
        return None
    return cross_fitted(
        trials, seed=card.seed, min_verdict_speakers=card.evaluation.min_verdict_speakers
    )


def _small_warnings(original: dict | None, anonymized: dict) -> list:
    """What a small evaluation can claim (sparc_eval.metrics.small): too few speakers or a degenerate
    interval, with the resampling-free bound of each such cell."""
    found = [("original speech", original)] + [
        (f"{name} {sc}", e) for name, by_sc in anonymized.items() for sc, e in by_sc.items()
    ]
    small = [(where, e["small"]) for where, e in found if e and e.get("small")]
    if not small:
        return []
    bounds = "; ".join(
        f"{where} EER {e['eer_bound95'][0]:.1%}-{e['eer_bound95'][1]:.1%}" for where, e in small
    )
    few = [e for _, e in small if too_few(e)]
    if few:
        return [
            f"too few speakers for any verdict: {few[0]['n_speakers']} test speakers (fewer than "
            f"{few[0]['min_speakers']}); a bootstrap over so few cannot show the uncertainty. Resampling-free "
            f"95% bounds over the effective number of test speakers: {bounds}"
        ]
    return [
        f"a degenerate interval (no resample can vary) is no narrow CI; no verdict rests on it. "
        f"Resampling-free 95% bounds over the effective number of test speakers: {bounds}"
    ]


def strength(card: CardSettings, cells: dict, reader: CellTrials | None = None) -> dict:
    """Each attacker's EER on original speech beside its anonymized EERs, the warnings a reader
    needs, ``flags`` (weak, wide, small) that mark its rows wherever they appear, and ``cells``:
    each of its cells' own flags (wide and small are per cell, weak per attacker: issue 61). A
    words-only attacker's high EER (utterance trials or its own probes) is a content finding, not
    weakness: it is flagged weak only when another words-only attacker is significantly better on
    the same trials (a learning curve that still falls marks it "learning", :func:`card_verdicts`)."""
    out = {}
    for attacker, by in cells[ORIGINAL].items():
        original = _eer(by[ORIGINAL])
        warnings, flags, notes, words_tests = [], [], [], 0
        anonymized = {
            name: {sc: _eer(c) for sc, c in cells[name][attacker].items()}
            for name in cells
            if name != ORIGINAL
        }
        if original is None:
            warnings.append(f"it did not run on original speech: {by[ORIGINAL].get('reason')}")
        elif reads_words(by[ORIGINAL]):
            better, tested = _better_words(card, cells, attacker, reader)
            words_tests += tested
            if better:
                flags.append("weak")
                warnings.append(
                    f"a weak words-only attacker: {', '.join(better)} finds significantly more from "
                    "the words on the same trials (paired 95% CI below 0)"
                )
            if original["eer"] >= card.weak_attacker_eer:
                notes.append(
                    f"the words identify few speakers: EER {original['eer']:.1%} on original speech "
                    "(a content finding, not a weak attacker)"
                )
        elif original["eer"] >= card.weak_attacker_eer:
            flags.append("weak")
            warnings.append(
                f"too weak to certify anything: EER {original['eer']:.1%} on original speech "
                f"(at least {card.weak_attacker_eer:.0%}, near chance)"
            )
        own = _cell_flags(card, cells, attacker)
        if any("wide" in f for by_sc in own.values() for f in by_sc.values()):
            flags.append("wide")
            warnings.append(
                f"no verdict involves {_where_list(own, 'wide')}: a 95% CI wider than "
                f"{card.max_ci_width:.0%} (too few speakers to tell)"
            )
        small = _small_warnings(original, anonymized)
        flags += ["small"] if small else []
        out[attacker] = {
            "original": original,
            "anonymized": anonymized,
            "warnings": warnings + small,
            "flags": flags,
            "notes": notes,
            "cells": own,
            "words_tests": words_tests,
        }
    return out


def _cell_flags(card: CardSettings, cells: dict, attacker: str) -> dict:
    """{where: {scenario: {flag: reason}}} of the attacker's flagged cells."""
    out = {}
    for where, by in cells.items():
        for sc, cell in (by.get(attacker) or {}).items():
            found = cell_flags(cell, card.max_ci_width)
            if found:
                out.setdefault(where, {})[sc] = found
    return out


def _where_list(own: dict, flag: str) -> str:
    return ", ".join(
        where if where == ORIGINAL else f"{where} {sc}"
        for where, by_sc in own.items()
        for sc, f in by_sc.items()
        if flag in f
    )


def _better_words(
    card: CardSettings, cells: dict, attacker: str, reader: CellTrials | None
) -> list:
    """The other words-only attackers significantly better than ``attacker`` on original speech, on
    the same trial design (utterance trials, or probe-level trials of their own), and how many
    comparisons were read."""
    if reader is None:
        return [], 0
    mine = cells[ORIGINAL][attacker][ORIGINAL]
    better, tested = [], 0
    for other, by in cells[ORIGINAL].items():
        theirs = by[ORIGINAL]
        if other == attacker or not reads_words(theirs):
            continue
        if probe_level(theirs) != probe_level(mine):
            continue
        found = reader.compare((ORIGINAL, attacker, ORIGINAL), (ORIGINAL, other, ORIGINAL), card)
        if not found or found.get("small") or found.get("withheld"):
            continue
        tested += 1
        upper = found["eer_diff_ci95"][1]
        if upper is not None and upper < 0:
            better.append(other)
    return better, tested


def _utility_comparisons(card: CardSettings, a: str, b: str, utility: dict, inputs: dict) -> dict:
    out = {}
    for metric_name, metric in card.utility.items():
        ra, rb = utility[a].get(metric_name, {}), utility[b].get(metric_name, {})
        if ra.get("value") is None or rb.get("value") is None:
            continue
        if callable(getattr(metric, "compare", None)):
            found = metric.compare(ra, rb, inputs[a], inputs[b])
        else:
            found = {"diff": rb["value"] - ra["value"], "ci95": None}
        if found.get("ci95"):
            higher = bool(ra.get("higher_is_better"))
            better = b if (found["diff"] > 0) == higher else a
            said = f"{better} keeps more utility ({'higher' if higher else 'lower'} {metric_name})"
            found["verdict"] = ci_verdict(
                {"eer_diff": found["diff"], "eer_diff_ci95": found["ci95"]},
                below=said,
                above=said,
                within="no significant difference (the 95% CI contains 0)",
            )
        out[metric_name] = found
    return out


def anonymizer_comparisons(
    card: CardSettings, cells: dict, utility: dict, inputs: dict, reader: CellTrials
) -> list:
    """Every pair of anonymizers: EER differences per attacker and scenario (same trials: paired),
    and utility differences."""
    names = [n for n in cells if n != ORIGINAL]
    rows = []
    for a, b in combinations(names, 2):
        eers = []
        for attacker in cells[a]:
            for sc in card.scenarios:
                found = reader.compare((a, attacker, sc), (b, attacker, sc), card)
                if found:
                    eers.append(
                        {
                            "attacker": attacker,
                            "scenario": sc,
                            "eer_a": found["eer_a"],
                            "eer_b": found["eer_b"],
                            "diff": found["eer_diff"],
                            "ci95": found["eer_diff_ci95"],
                            "paired": found["paired"],
                            **(
                                {"enrollment_side": found["enrollment_side"]}
                                if "enrollment_side" in found
                                else {}
                            ),
                            "withheld": found.get("withheld"),
                            "verdict": eer_verdict(found, a, b, "is identified more easily"),
                        }
                    )
        rows.append(
            {
                "a": a,
                "b": b,
                "eer": eers,
                "utility": _utility_comparisons(card, a, b, utility, inputs),
            }
        )
    return rows


def card_verdicts(
    card: CardSettings,
    cells: dict,
    utility: dict,
    inputs: dict,
    learning: dict | None = None,
    speakers: dict | None = None,
) -> dict:
    from .learning import learning_curves
    from .same_sex import same_sex

    flags = Flags(cells, card.max_ci_width)
    reader = CellTrials(card.output_folder, cells, flags)
    content = content_rows(card, cells)
    found = strength(card, cells, reader)
    for attacker, st in found.items():  # weak binds every verdict that involves the attacker
        if "weak" in st["flags"]:
            flags.flag_attacker(attacker, "weak", st["warnings"][0])
    curves = learning_curves(card, cells, learning or {}, reader)
    for row in curves:
        if row["warning"]:
            found[row["attacker"]]["warnings"].append(row["warning"])
            found[row["attacker"]]["flags"].append("learning")
    out = {
        "headline": headlines(card, cells, content, reader),
        "content": content,
        "voice_beyond_content": voice_beyond_content(card, cells, reader),
        "strength": found,
        "learning_curves": curves
        if card.learning_curve
        else {"not_applicable": "learning_curve: False"},
        "comparisons": anonymizer_comparisons(card, cells, utility, inputs, reader),
        "same_sex": same_sex(card, cells, reader, speakers or {}),
    }
    out["verdict_tests"] = verdict_tests(out)
    return out


def _drawn(verdict: str | None) -> bool:
    return bool(verdict) and not verdict.startswith(("no verdict", "no interval", "no words-only"))


def _tally(items) -> tuple:
    """(tests drawn, tests withheld) over (number of tests, verdict) pairs."""
    items = list(items)
    drawn = sum(n for n, verdict in items if _drawn(verdict))
    return drawn, sum(n for n, _ in items) - drawn


def _curve_verdict(row: dict) -> str:
    if row.get("withheld"):
        return row["withheld"]
    return "no interval" if None in row["ci95"] else "drawn"


def verdict_tests(doc: dict) -> dict:
    """How many tests the card's verdicts read, per section, and how many were withheld (a flag,
    too few speakers, no interval, no semi-informed attack): each is at its own level (one-sided
    2.5% for a claim in one direction), none corrected for their number (issue 61)."""
    beyond = doc["voice_beyond_content"]
    eers = [e for row in doc["comparisons"] for e in row["eer"]]
    utility = [u for row in doc["comparisons"] for u in row["utility"].values() if "verdict" in u]
    curves = doc["learning_curves"] if isinstance(doc["learning_curves"], list) else []
    sections = {
        "voice_beyond_content": _tally(
            (len(r["against"]) - len(r["left_out"]), r["verdict"]) for r in beyond
        ),
        "anonymizer_eers": _tally((1, e["verdict"]) for e in eers),
        "anonymizer_utility": _tally((1, u["verdict"]) for u in utility),
        "words_strength": (sum(st.get("words_tests", 0) for st in doc["strength"].values()), 0),
        "learning_curves": _tally((1, _curve_verdict(r)) for r in curves if r.get("ci95")),
    }
    return {
        "drawn": sum(d for d, _ in sections.values()),
        "withheld": sum(w for _, w in sections.values()),
        "by_section": {k: {"drawn": d, "withheld": w} for k, (d, w) in sections.items()},
        "level": "two-sided 95% intervals; a claim in one direction is one-sided at 2.5%, each test at its own level",
    }
