""" "A leaks more than B", with its uncertainty.

Two cells are compared by the difference of their EERs (b - a) and its bootstrap CI:

- paired on trials, when both scored the same trials (two ECAPA attackers on one split, two
  text scorers on one trial list): every resample draws the same trials for both;
- paired on speakers, when their trials differ but their test speakers are the same (a text
  and an ECAPA attacker on one corpus; one attacker with and without shared text): every
  resample draws the same speakers for both;
- unpaired otherwise (two corpora): each cell is resampled on its own.

Pairing lets what makes a trial or a speaker easy cancel in the difference.

The resampling unit is the speaker by default, on both sides of the trials (two-way: a non-target
score depends on the enrolled and the tested speaker): trials of one speaker are not independent,
and corpora differ above all in their speakers.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..attack.trials import Trials
from ..metrics import paired_bootstrap, speaker_paired_bootstrap, unpaired_bootstrap
from ..metrics.bootstrap import SPEAKER_UNITS
from ..metrics.settings import EvaluationSettings
from ..metrics.small import few_speakers_reason

FIXED_SIDE = (
    "held fixed: a cell's enrollment ids are not its enrolled speakers (a cell written before "
    "enroll2spk was kept; run it again to resample both sides)"
)


def compare_cells(
    a: Trials, b: Trials, settings: EvaluationSettings = EvaluationSettings()
) -> dict:
    """``a`` and ``b``: the scored trials of two cells (:func:`.cell_results.cell_trials`). Returns the
    EERs, the difference b - a with its 95% CI and p-value, and how it was computed, drawn as
    ``settings.bootstrap`` says; ``small`` says why no verdict is drawn when a cell has fewer than
    ``settings.min_verdict_speakers`` test speakers. A two-way comparison needs both cells'
    enrolled speakers; without them (cells written before they were kept) it resamples test
    speakers and says so under ``enrollment_side``."""
    unit, n_boot = settings.bootstrap.unit, settings.bootstrap.n_boot
    fallback = unit == "two_way" and not (a.enrolled_known() and b.enrolled_known())
    unit = "speaker" if fallback else unit
    boot = replace(settings.bootstrap, unit=unit)
    paired, a, b, result = _bootstrap(*_aligned(a, b), boot)
    d = result.as_dict()
    n_a, n_b = a.n_test_speakers(), b.n_test_speakers()
    return {
        "paired": paired,
        "unit": unit,
        **({"enrollment_side": FIXED_SIDE} if fallback else {}),
        "n_boot": n_boot,
        "n_valid": d["n_valid"],
        "eer_a": d["a"]["eer"],
        "eer_b": d["b"]["eer"],
        "eer_diff": d["diff"]["eer"],
        "eer_diff_ci95": d["ci95"]["eer"],
        "eer_p_value": d["p_value"]["eer"],
        "auc_diff": d["diff"]["auc"],
        "auc_diff_ci95": d["ci95"]["auc"],
        "n_trials_a": len(a),
        "n_trials_b": len(b),
        "n_speakers_a": n_a,
        "n_speakers_b": n_b,
        "small": few_speakers_reason(n_a, n_b, settings.min_verdict_speakers),
    }


def _aligned(a: Trials, b: Trials) -> tuple:
    """(a, b, same_trials): both in one trial order when they score the same labelled trials."""
    ka, kb = a.keys(), b.keys()
    if ka.size != kb.size or not np.array_equal(np.sort(ka), np.sort(kb)):
        return a, b, False
    a, b = a.select(np.argsort(ka)), b.select(np.argsort(kb))
    return a, b, bool(np.array_equal(a.label, b.label))


def _bootstrap(a: Trials, b: Trials, same_trials: bool, boot) -> tuple:
    """(pairing, a, b, result): paired on the same trials, on the same test speakers, or not."""
    unit = boot.unit

    def sides(t: Trials, suffix: str = "") -> dict:
        return {
            f"groups{suffix}": t.test_speaker if unit in SPEAKER_UNITS else None,
            f"enroll_groups{suffix}": t.enroll_speakers if unit == "two_way" else None,
        }

    if same_trials:  # keep the trials both scored (an LLM judge may leave a few unscored)
        both = np.isfinite(a.score) & np.isfinite(b.score)
        a, b = a.select(both), b.select(both)
        result = paired_bootstrap(a.score, b.score, a.label, **sides(a), boot=boot)
        return "trials", a, b, result
    a, b = a.scored(), b.scored()
    if unit in SPEAKER_UNITS and set(a.test_speaker.tolist()) == set(b.test_speaker.tolist()):
        enrolled = {k: v for k, v in {**sides(a, "_a"), **sides(b, "_b")}.items() if "enroll" in k}
        one, two = (a.score, a.label, a.test_speaker), (b.score, b.label, b.test_speaker)
        return "speakers", a, b, speaker_paired_bootstrap(*one, *two, **enrolled, boot=boot)
    result = unpaired_bootstrap(
        a.score, a.label, b.score, b.label, **sides(a, "_a"), **sides(b, "_b"), boot=boot
    )
    return False, a, b, result


def ci_verdict(comparison: dict, *, below: str, above: str, within: str) -> str:
    """One of three sentences by where the 95% CI of the EER difference (b - a) lies: below 0,
    above 0, or around it; none when the comparison is small (too few test speakers) or withheld
    (a flagged cell or attacker: ``withheld`` holds the sentence, issue 61)."""
    if comparison.get("small"):
        return f"no verdict: {comparison['small']}"
    if comparison.get("withheld"):
        return comparison["withheld"]
    lo, hi = comparison["eer_diff_ci95"]
    if lo is None or hi is None or comparison.get("eer_diff", 0) is None:
        return "no interval (too few valid resamples)"
    if hi < 0:
        return below
    if lo > 0:
        return above
    return within


def verdict(comparison: dict, name_a: str, name_b: str, verb: str = "leaks more") -> str:
    """A sentence a reader can quote: which leaks more (corpora) or which identifies speakers
    better (attackers), or that the data cannot tell."""
    return ci_verdict(
        comparison,
        below=f"{name_b} {verb} (lower EER)",
        above=f"{name_a} {verb} (lower EER)",
        within="no significant difference (the 95% CI contains 0)",
    )
