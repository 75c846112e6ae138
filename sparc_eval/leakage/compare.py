""""A leaks more than B", with its uncertainty.

Two cells are compared by the difference of their EERs (b - a) and its bootstrap CI:

- paired on trials, when both scored the same trials (two ECAPA attackers on one split, two
  text scorers on one trial list): every resample draws the same trials for both;
- paired on speakers, when their trials differ but their test speakers are the same (a text
  and an ECAPA attacker on one corpus; one attacker with and without shared text): every
  resample draws the same speakers for both;
- unpaired otherwise (two corpora): each cell is resampled on its own.

Pairing lets what makes a trial or a speaker easy cancel in the difference.

The resampling unit is the test speaker by default: trials of one speaker are not independent,
and corpora differ above all in their speakers.
"""

from __future__ import annotations

import numpy as np

from ..metrics import paired_bootstrap, speaker_paired_bootstrap, unpaired_bootstrap


def _keys(trials: dict) -> np.ndarray:
    return np.char.add(np.char.add(trials["enroll"].astype(str), "\t"), trials["test"].astype(str))


def _finite(trials: dict) -> dict:
    keep = np.isfinite(trials["scores"])
    return {k: v[keep] for k, v in trials.items()}


def compare_cells(a: dict, b: dict, *, n_boot: int, seed: int, unit: str = "speaker") -> dict:
    """``a`` and ``b``: trials of two cells (:func:`.cells.cell_trials`). Returns the EERs, the
    difference b - a with its 95% CI and p-value, and how it was computed."""
    ka, kb = _keys(a), _keys(b)
    same_trials = ka.size == kb.size and np.array_equal(np.sort(ka), np.sort(kb))
    if same_trials:
        a = {k: v[np.argsort(ka)] for k, v in a.items()}
        b = {k: v[np.argsort(kb)] for k, v in b.items()}
        same_trials = bool(np.array_equal(a["labels"], b["labels"]))
    paired = False
    if same_trials:  # keep the trials both scored (an LLM judge may leave a few unscored)
        paired = "trials"
        both = np.isfinite(a["scores"]) & np.isfinite(b["scores"])
        result = paired_bootstrap(a["scores"][both], b["scores"][both], a["labels"][both], n_boot=n_boot, seed=seed,
                                  unit=unit, groups=a["test_speaker"][both] if unit == "speaker" else None)
        a, b = ({k: v[both] for k, v in x.items()} for x in (a, b))
    elif unit == "speaker" and set(_finite(a)["test_speaker"].tolist()) == set(_finite(b)["test_speaker"].tolist()):
        paired = "speakers"
        a, b = _finite(a), _finite(b)
        result = speaker_paired_bootstrap(a["scores"], a["labels"], a["test_speaker"], b["scores"], b["labels"],
                                          b["test_speaker"], n_boot=n_boot, seed=seed)
    else:
        a, b = _finite(a), _finite(b)
        result = unpaired_bootstrap(a["scores"], a["labels"], b["scores"], b["labels"], n_boot=n_boot, seed=seed,
                                    unit=unit, groups_a=a["test_speaker"] if unit == "speaker" else None,
                                    groups_b=b["test_speaker"] if unit == "speaker" else None)
    d = result.as_dict()
    return {"paired": paired, "unit": unit, "n_boot": n_boot, "n_valid": d["n_valid"],
            "eer_a": d["a"]["eer"], "eer_b": d["b"]["eer"], "eer_diff": d["diff"]["eer"],
            "eer_diff_ci95": d["ci95"]["eer"], "eer_p_value": d["p_value"]["eer"],
            "auc_diff": d["diff"]["auc"], "auc_diff_ci95": d["ci95"]["auc"],
            "n_trials_a": int(a["scores"].size), "n_trials_b": int(b["scores"].size)}


def verdict(comparison: dict, name_a: str, name_b: str, verb: str = "leaks more") -> str:
    """A sentence a reader can quote: which leaks more (corpora) or which identifies speakers
    better (attackers), or that the data cannot tell."""
    lo, hi = comparison["eer_diff_ci95"]
    if lo is None or hi is None or comparison["eer_diff"] is None:
        return "no interval (too few valid resamples)"
    if hi < 0:
        return f"{name_b} {verb} (lower EER)"
    if lo > 0:
        return f"{name_a} {verb} (lower EER)"
    return "no significant difference (the 95% CI contains 0)"
