"""Ablations and scorer comparisons of a text evaluation, as the paper reports them.

- :func:`ablation_deltas`: the change of every metric from the base setting (P200 L20, paper
  Tables 3 and 9-12) to each other setting, per scorer, task and condition (setting - base).
  At a fixed P the trials are the same for every L, so an L ablation compares the same trials;
  a P ablation compares other probes of the same speakers.
- :func:`scorer_comparisons`: when one run scores the same trials with several scorers, the
  paired bootstrap difference (b - a) of each pair per task, setting and condition
  (:func:`sparc_eval.metrics.paired_bootstrap`, resampling the run's bootstrap unit: by default
  the speakers on both sides, the probes' and the enrollments').
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from ...text_trials.trials import TRIAL_CONDITIONS

BASE_SETTING = (200, 20)
METRICS = ("eer", "auc", "min_dcf")


def _delta(block: dict, base: dict) -> dict:
    out = {m: None if block[m] is None or base[m] is None else block[m] - base[m] for m in METRICS}
    out["tpr_at_fpr"] = {
        k: None if v is None or base["tpr_at_fpr"].get(k) is None else v - base["tpr_at_fpr"][k]
        for k, v in block["tpr_at_fpr"].items()
    }
    return out


def ablation_deltas(results_by_scorer: dict, base_key: str) -> dict:
    """``{scorer: {task: {setting: {condition: {"eer": d, "auc": d, "min_dcf": d, "tpr_at_fpr": {..}} | None}}}}``
    for every setting other than ``base_key``; None where either condition is n/a."""
    out = {}
    for name, tasks in results_by_scorer.items():
        out[name] = {}
        for task, by_setting in tasks.items():
            base = by_setting.get(base_key)
            if not base:
                continue
            out[name][task] = {
                key: {
                    c: (
                        _delta(block["conditions"][c], base["conditions"][c])
                        if block["conditions"].get(c) and base["conditions"].get(c)
                        else None
                    )
                    for c in TRIAL_CONDITIONS
                }
                for key, block in by_setting.items()
                if key != base_key and block
            }
    return out


def probe_speakers(trials, idx) -> np.ndarray:
    """The probe speaker of trials ``idx`` (the test speaker of a text trial)."""
    from ...errors import DataError

    out = trials.column("probe_speaker")[np.asarray(idx, dtype=np.int64)].tolist()
    if any(s is None for s in out):
        raise DataError(
            "a speaker-level bootstrap needs each trial's probe speaker",
            hint="these trials carry none: set bootstrap_unit: trial",
        )
    return np.asarray(out, dtype=str)


NO_ENROLLED = (
    "held fixed: some trials carry no enrolled speaker, so the probes' speakers alone are resampled"
)


def speaker_sides(trials, idx, unit: str) -> tuple:
    """``(unit, probe speakers, enrolled speakers)`` of trials ``idx`` for a bootstrap of ``unit``:
    two-way needs every trial's enrolled speaker and falls back to ``"speaker"`` (the enrolled
    side held fixed) where one is missing; None where a unit reads none."""
    if unit == "trial":
        return unit, None, None
    probes = probe_speakers(trials, idx)
    if unit == "speaker":
        return unit, probes, None
    enrolled = trials.column("enroll_speaker")[np.asarray(idx, dtype=np.int64)].tolist()
    if any(s is None for s in enrolled):
        return "speaker", probes, None
    return unit, probes, np.asarray(enrolled, dtype=str)


def scorer_comparisons(
    trials, scores: dict, *, where: dict, n_boot: int, seed: int, unit: str
) -> list:
    """Paired bootstrap of every pair of scorers on the trials both scored, per condition
    (``where``: task and setting, copied into each row); conditions without both classes are skipped."""
    from ...metrics import paired_bootstrap
    from ...metrics.settings import BootstrapSettings
    from ...metrics.small import few_speakers_reason

    rows = []
    for a, b in combinations(list(scores), 2):
        both = np.isfinite(scores[a]) & np.isfinite(scores[b])
        for cond in TRIAL_CONDITIONS:
            idx = np.flatnonzero(trials.condition_mask(cond) & both)
            y = trials.labels[idx]
            if y.size == 0 or y.all() or not y.any():
                continue
            used, groups, enrolled = speaker_sides(trials, idx, unit)
            res = paired_bootstrap(
                scores[a][idx],
                scores[b][idx],
                y,
                groups=groups,
                enroll_groups=enrolled,
                boot=BootstrapSettings(n_boot=n_boot, seed=seed, unit=used),
            )
            n_speakers = None if groups is None else len(set(groups.tolist()))
            rows.append(
                {
                    **where,
                    "condition": cond,
                    "scorer_a": a,
                    "scorer_b": b,
                    "n_trials": int(idx.size),
                    **res.as_dict(),
                    "n_speakers": n_speakers,
                    "small": few_speakers_reason(n_speakers, n_speakers),
                    **({"enrollment_side": NO_ENROLLED} if used != unit else {}),
                }
            )
    return rows
