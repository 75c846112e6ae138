"""What the card concludes from its cells: content rows, voice leakage beyond content, the
headline privacy figure, attacker strength, same-sex EERs, and anonymizers compared pairwise.

Content (content-leakage paper, Table 1): the phone-only attacker on the G2P of the original
transcripts is the **content bound** (``content.bound``, kept with that meaning), what a perfect
voice anonymizer (error-free STT-TTS) still leaves; the same attacker on the words the anonymized
speech says is the **content this anonymizer leaves**. Any words-only attacker's EER is at best an
upper bound on what the words allow, so the **content reference** (``content.reference``) lists
every words-only attacker on the card's utterance trials, and an audio attacker is read against
all of them (:mod:`.reference`: an intersection-union test for "finds more than every words-only
attacker here", Holm over K for "bounded by content", "within" otherwise).
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

from ...attack.cells import cell_trials
from ...errors import DataError
from ...metrics.small import too_few
from ..leakage.compare import ci_verdict, compare_cells
from ..leakage.compare import verdict as eer_verdict
from .reference import beyond_words_verdict, cross_fitted, probe_level, words_only
from .settings import CardSettings

ORIGINAL = "original"


class CellTrials:
    """Each finished cell's trials, read once."""

    def __init__(self, root: Path, cells: dict):
        self.root, self.cells, self._trials = Path(root), cells, {}

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
            return compare_cells(
                self.trials(folder_a),
                self.trials(folder_b),
                n_boot=boot.n_boot,
                seed=boot.seed,
                unit=boot.unit,
                min_speakers=card.evaluation.min_verdict_speakers,
            )
        except DataError:
            return None

    def compare(self, a, b, card: CardSettings):
        """b - a for two cells (where, attacker, scenario); None when either did not run."""
        if not (self.ok(*a) and self.ok(*b)):
            return None
        return self.compare_folders(self.cell(*a)["folder"], self.cell(*b)["folder"], card)


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
    }


def voice_beyond_content(card: CardSettings, cells: dict, reader: CellTrials) -> list:
    """Each audio attacker on anonymized speech against every words-only attacker on the same trials.
    ``content_eer``, ``diff``, ``ci95`` and ``paired`` keep their meaning (against the content
    attacker); ``against`` holds every words-only comparison, and the verdict reads them all."""
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
                        "verdict": beyond_words_verdict(against),
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
        row = {"content_bound": (content.get("bound") or {}).get("eer")}
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
    return cross_fitted(trials, seed=card.seed) if trials else None


def _too_wide(e: dict | None, width: float) -> bool:
    return bool(e and e["ci95"] and e["ci95"][1] - e["ci95"][0] > width)


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
            f"95% bounds, counted over speakers: {bounds}"
        ]
    return [
        f"a degenerate interval (no resample can vary) is no narrow CI; no verdict rests on it. "
        f"Resampling-free 95% bounds, counted over speakers: {bounds}"
    ]


def strength(card: CardSettings, cells: dict, reader: CellTrials | None = None) -> dict:
    """Each attacker's EER on original speech beside its anonymized EERs, the warnings a reader
    needs, and ``flags`` (weak, wide, small) that mark its rows wherever they appear. A words-only
    attacker's high EER is a content finding, not weakness: it is flagged weak only when another
    words-only attacker is significantly better on the same trials (or its learning curve still
    falls, :func:`card_verdicts`)."""
    out = {}
    for attacker, by in cells[ORIGINAL].items():
        original = _eer(by[ORIGINAL])
        warnings, flags, notes = [], [], []
        anonymized = {
            name: {sc: _eer(c) for sc, c in cells[name][attacker].items()}
            for name in cells
            if name != ORIGINAL
        }
        if original is None:
            warnings.append(f"it did not run on original speech: {by[ORIGINAL].get('reason')}")
        elif words_only(by[ORIGINAL]):
            better = _better_words(card, cells, attacker, reader)
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
        if _too_wide(original, card.max_ci_width) or any(
            _too_wide(e, card.max_ci_width) for by_sc in anonymized.values() for e in by_sc.values()
        ):
            flags.append("wide")
            warnings.append(
                f"too few speakers for any verdict: a 95% CI is wider than {card.max_ci_width:.0%}"
            )
        small = _small_warnings(original, anonymized)
        flags += ["small"] if small else []
        out[attacker] = {
            "original": original,
            "anonymized": anonymized,
            "warnings": warnings + small,
            "flags": flags,
            "notes": notes,
        }
    return out


def _better_words(
    card: CardSettings, cells: dict, attacker: str, reader: CellTrials | None
) -> list:
    """The other words-only attackers significantly better than ``attacker`` on original speech."""
    if reader is None:
        return []
    better = []
    for other, by in cells[ORIGINAL].items():
        if other == attacker or not words_only(by[ORIGINAL]):
            continue
        found = reader.compare((ORIGINAL, attacker, ORIGINAL), (ORIGINAL, other, ORIGINAL), card)
        if (
            found
            and not found.get("small")
            and found["eer_diff_ci95"][1] is not None
            and found["eer_diff_ci95"][1] < 0
        ):
            better.append(other)
    return better


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

    reader = CellTrials(card.output_folder, cells)
    content = content_rows(card, cells)
    curves = learning_curves(card, cells, learning or {}, reader)
    found = strength(card, cells, reader)
    for row in curves:
        if row["warning"]:
            found[row["attacker"]]["warnings"].append(row["warning"])
            found[row["attacker"]]["flags"].append("learning")
    return {
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
