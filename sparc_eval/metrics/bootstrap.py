"""Bootstrap confidence intervals, vectorised: sort once, resample by multiplicities.

A resample is a vector of multiplicities over the trials (how often each trial was drawn).
The trials are sorted once (:func:`sparc_eval.metrics.core.sort_trials`); each trial has a fixed
bin ``code = 2 * distinct-score index + label``, so a resample's count table is one
``np.bincount`` of the drawn trials' bins (or of all bins weighted by multiplicity) and its
metrics come from cumulative sums (:func:`sparc_eval.metrics.core.metrics_from_counts`), with
no re-sort. Resamples are processed in chunks (a chunk holds at most ``chunk_elements`` drawn
values), so memory stays bounded.

Units:

- ``"trial"`` (default): trials drawn with replacement; with ``stratify=True`` (default) target
  and non-target trials are drawn separately, so every resample keeps the trial list's class
  counts (and never has one class);
- ``"speaker"``: speakers drawn with replacement (``groups`` gives each trial's speaker, by
  default the test speaker); every trial of a drawn speaker counts as often as it was drawn.
  Resamples left with one class are dropped (how many is reported).

Resample ``i`` draws from ``np.random.default_rng([seed, i])``, so a seed gives the same numbers
whatever the chunking. Intervals are percentile intervals (``level`` 0.95: the 2.5th and 97.5th
percentiles of the valid resamples).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import DataError
from .core import (Counts, MetricSettings, check_trials, compact, compute_metrics, group_counts, metrics_from_counts, point_metrics,
                   sort_trials)

BOOTSTRAP_UNITS = ("trial", "speaker")
DEFAULT_CHUNK_ELEMENTS = 1 << 18  # drawn values (or trial weights) held at once per chunk


@dataclass
class BootstrapResult:
    """Replicates of every metric: ``samples["eer"]`` etc. are arrays of length ``n_boot``
    (NaN for dropped one-class resamples); ``tpr_at_fpr`` maps each FPR target to an array."""

    samples: dict
    n_boot: int
    n_valid: int
    unit: str
    seed: int
    level: float = 0.95

    def ci(self) -> dict:
        """``{"eer": [lo, hi], "auc": ..., "tpr_at_fpr": {target: [lo, hi]}, "min_dcf": ...}``;
        a bound is None when no resample was valid."""
        out = {}
        for name, values in self.samples.items():
            if isinstance(values, dict):
                out[name] = {k: percentile_ci(v, self.level) for k, v in values.items()}
            else:
                out[name] = percentile_ci(values, self.level)
        return out


def percentile_ci(samples, level: float = 0.95):
    """``[lo, hi]`` percentile interval of the finite samples; ``[None, None]`` if none."""
    x = np.asarray(samples, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return [None, None]
    alpha = (1.0 - level) / 2.0
    lo, hi = np.percentile(x, [100 * alpha, 100 * (1 - alpha)])
    return [float(lo), float(hi)]


# ----------------------------------------------------------------------------- resampling plans


class _Plan:
    """How to draw resample ``i``: returns either drawn trial indices (trial unit) or per-trial
    multiplicities (speaker unit), for rows ``ids`` of the chunk."""

    def __init__(self, labels, unit: str, stratify: bool, groups, seed: int):
        if unit not in BOOTSTRAP_UNITS:
            raise ValueError(f"unit must be one of {BOOTSTRAP_UNITS}, not {unit!r}")
        self.unit = unit
        self.seed = int(seed)
        self.n = labels.size
        if unit == "trial":
            self.strata = [np.flatnonzero(labels), np.flatnonzero(~labels)] if stratify else [None]
            self.draws_per_resample = self.n
        else:
            if groups is None:
                raise DataError("a speaker-level bootstrap needs each trial's speaker",
                                hint="pass groups= (or --utt2spk on the command line)")
            g = np.asarray(groups)
            if g.shape != labels.shape:
                raise DataError(f"groups have shape {g.shape} but there are {labels.size} trials")
            _, self.group_index = np.unique(g, return_inverse=True)
            self.n_groups = int(self.group_index.max()) + 1
            self.draws_per_resample = self.n

    def rng(self, i: int):
        return np.random.default_rng([self.seed, int(i)])

    def trial_draws(self, ids) -> np.ndarray:
        """``(len(ids), n)`` drawn trial indices (trial unit)."""
        out = np.empty((len(ids), self.n), dtype=np.int64)
        for row, i in enumerate(ids):  # one generator per resample: chunk-independent streams
            rng = self.rng(i)
            lo = 0
            for stratum in self.strata:
                if stratum is None:
                    out[row] = rng.integers(0, self.n, size=self.n, dtype=np.int32)
                else:
                    k = stratum.size
                    out[row, lo:lo + k] = stratum[rng.integers(0, k, size=k, dtype=np.int32)]
                    lo += k
        return out

    def speaker_multiplicities(self, ids) -> np.ndarray:
        """``(len(ids), n_speakers)`` how often each speaker was drawn (speaker unit)."""
        k = self.n_groups
        draws = np.stack([self.rng(i).integers(0, k, size=k) for i in ids])
        offsets = (np.arange(len(ids)) * k)[:, None]
        return np.bincount((draws + offsets).ravel(), minlength=len(ids) * k).reshape(len(ids), k)


def _chunk_counts(plan: _Plan, codes_list, weights, m_list, ids):
    """Count tables ``(t, n)`` of shape ``(len(ids), m)`` for each system (same resamples)."""
    b = len(ids)
    out = []
    if plan.unit == "trial":
        draws = plan.trial_draws(ids)
        w = None if weights is None else weights[draws].ravel()
        for codes, m in zip(codes_list, m_list):
            binned = codes[draws] + (np.arange(b) * 2 * m)[:, None]
            table = np.bincount(binned.ravel(), weights=w, minlength=b * 2 * m).reshape(b, m, 2)
            out.append((table[..., 1], table[..., 0]))
    else:
        mult = plan.speaker_multiplicities(ids)
        w = mult[:, plan.group_index].astype(np.float64)  # (b, n) per-trial multiplicity
        if weights is not None:
            w *= weights
        for codes, m in zip(codes_list, m_list):
            binned = codes[None, :] + (np.arange(b) * 2 * m)[:, None]
            table = np.bincount(binned.ravel(), weights=w.ravel(), minlength=b * 2 * m).reshape(b, m, 2)
            out.append((table[..., 1], table[..., 0]))
    return out


def _empty_samples(settings: MetricSettings, n_boot: int) -> dict:
    return {
        "eer": np.full(n_boot, np.nan),
        "auc": np.full(n_boot, np.nan),
        "tpr_at_fpr": {x: np.full(n_boot, np.nan) for x in settings.fpr_targets},
        "min_dcf": np.full(n_boot, np.nan),
    }


def _store(samples: dict, lo: int, hi: int, values: dict) -> None:
    for name, v in values.items():
        if isinstance(v, dict):
            for k, arr in v.items():
                samples[name][k][lo:hi] = arr
        else:
            samples[name][lo:hi] = v


def _chunks(n_boot: int, per_resample: int, chunk_elements: int):
    size = max(1, int(chunk_elements) // max(1, per_resample))
    for lo in range(0, n_boot, size):
        yield lo, min(n_boot, lo + size)


def bootstrap_metrics(scores, labels, *, n_boot: int = 1000, seed: int = 0, unit: str = "trial",
              groups=None, stratify: bool = True, weights=None, level: float = 0.95,
              settings: MetricSettings = MetricSettings(),
              chunk_elements: int = DEFAULT_CHUNK_ELEMENTS) -> BootstrapResult:
    """Bootstrap replicates of every metric (see the module docstring for the units).

    ``weights`` (optional, original trial order) multiply the resampled multiplicities.
    """
    s, y, w = check_trials(scores, labels, weights)
    if n_boot < 1:
        raise ValueError("n_boot must be at least 1")
    st = sort_trials(s, y)
    plan = _Plan(y, unit, stratify, groups, seed)
    m = st.n_groups
    samples = _empty_samples(settings, n_boot)
    for lo, hi in _chunks(n_boot, plan.draws_per_resample, chunk_elements):
        (t, n), = _chunk_counts(plan, [st.code], w, [m], range(lo, hi))
        _store(samples, lo, hi, metrics_from_counts(t, n, settings))
    n_valid = int(np.isfinite(samples["auc"]).sum())
    return BootstrapResult(samples, n_boot, n_valid, unit, seed, level)


@dataclass
class PairedResult:
    """Two systems on the same trials: point values, their difference (b - a) and its CI."""

    a: dict
    b: dict
    diff: dict
    ci95: dict
    p_value: dict
    n_boot: int
    n_valid: int
    unit: str
    seed: int

    def as_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "diff": self.diff, "ci95": self.ci95, "p_value": self.p_value,
                "n_boot": self.n_boot, "n_valid": self.n_valid, "unit": self.unit, "seed": self.seed}


def paired_bootstrap(scores_a, scores_b, labels, *, n_boot: int = 1000, seed: int = 0,
                     unit: str = "trial", groups=None, stratify: bool = True, weights=None,
                     level: float = 0.95, settings: MetricSettings = MetricSettings(),
                     chunk_elements: int = DEFAULT_CHUNK_ELEMENTS) -> PairedResult:
    """Compare system b with system a on the same trials (same order, same labels).

    Every resample applies the same multiplicities to both systems; the difference b - a of
    each metric is taken per resample. Reported: the point values, the point difference, its
    percentile CI and a two-sided bootstrap p-value, 2 * min(P(diff* <= 0), P(diff* >= 0))
    capped at 1 (a rough test of "no difference").
    """
    sa, y, w = check_trials(scores_a, labels, weights)
    sb, yb, _ = check_trials(scores_b, labels, weights)
    if sa.shape != sb.shape:
        raise DataError(f"the two systems have {sa.size} and {sb.size} trials; they must share trials")
    st_a, st_b = sort_trials(sa, y), sort_trials(sb, y)
    plan = _Plan(y, unit, stratify, groups, seed)

    pa, pb = _point(st_a, w, settings), _point(st_b, w, settings)
    sam_a = _empty_samples(settings, n_boot)
    sam_b = _empty_samples(settings, n_boot)
    for lo, hi in _chunks(n_boot, 2 * plan.draws_per_resample, chunk_elements):
        (ta, na), (tb, nb) = _chunk_counts(plan, [st_a.code, st_b.code], w,
                                           [st_a.n_groups, st_b.n_groups], range(lo, hi))
        _store(sam_a, lo, hi, metrics_from_counts(ta, na, settings))
        _store(sam_b, lo, hi, metrics_from_counts(tb, nb, settings))

    diff, ci, pv = _differences(pa, pb, sam_a, sam_b, settings, level)
    valid = np.isfinite(sam_a["auc"]) & np.isfinite(sam_b["auc"])
    return PairedResult(pa, pb, diff, ci, pv, n_boot, int(valid.sum()), unit, int(seed))


def _point(st, weights, settings: MetricSettings) -> dict:
    t, n = group_counts(st, weights)
    pm = point_metrics(compact(Counts(st.unique, t, n)), settings)
    return {"eer": pm.eer, "auc": pm.auc, "tpr_at_fpr": dict(pm.tpr_at_fpr), "min_dcf": pm.min_dcf}


def speaker_paired_bootstrap(scores_a, labels_a, groups_a, scores_b, labels_b, groups_b, *, n_boot: int = 1000,
                             seed: int = 0, level: float = 0.95, settings: MetricSettings = MetricSettings(),
                             chunk_elements: int = DEFAULT_CHUNK_ELEMENTS) -> PairedResult:
    """Compare two systems scored on different trials of the same test speakers (a text and an
    ECAPA attacker on one corpus; one attacker with and without some utterances). Every resample
    draws test speakers with replacement, the same draw for both systems, and weights each
    system's trials by their speaker's multiplicity, so what makes a speaker easy or hard cancels
    in the difference, as trial-level pairing does in :func:`paired_bootstrap`."""
    sa, ya, _ = check_trials(scores_a, labels_a)
    sb, yb, _ = check_trials(scores_b, labels_b)
    ga, gb = np.asarray(groups_a).astype(str), np.asarray(groups_b).astype(str)
    if ga.shape != sa.shape or gb.shape != sb.shape:
        raise DataError("every trial of both systems needs its test speaker (groups)")
    plan = _Plan(np.concatenate([ya, yb]), "speaker", True, np.concatenate([ga, gb]), seed)
    index = (plan.group_index[:sa.size], plan.group_index[sa.size:])
    sorted_ = (sort_trials(sa, ya), sort_trials(sb, yb))
    points = [_point(st, None, settings) for st in sorted_]
    samples = [_empty_samples(settings, n_boot), _empty_samples(settings, n_boot)]
    for lo, hi in _chunks(n_boot, sa.size + sb.size, chunk_elements):
        mult = plan.speaker_multiplicities(range(lo, hi)).astype(np.float64)
        rows = np.arange(hi - lo)[:, None]
        for st, idx, sam in zip(sorted_, index, samples):
            m = st.n_groups
            binned = st.code[None, :] + rows * 2 * m
            table = np.bincount(binned.ravel(), weights=mult[:, idx].ravel(),
                                minlength=(hi - lo) * 2 * m).reshape(hi - lo, m, 2)
            _store(sam, lo, hi, metrics_from_counts(table[..., 1], table[..., 0], settings))
    diff, ci, pv = _differences(points[0], points[1], samples[0], samples[1], settings, level)
    valid = np.isfinite(samples[0]["auc"]) & np.isfinite(samples[1]["auc"])
    return PairedResult(points[0], points[1], diff, ci, pv, n_boot, int(valid.sum()), "speaker", int(seed))


def unpaired_bootstrap(scores_a, labels_a, scores_b, labels_b, *, n_boot: int = 1000, seed: int = 0,
                       unit: str = "trial", groups_a=None, groups_b=None, stratify: bool = True,
                       level: float = 0.95, settings: MetricSettings = MetricSettings()) -> PairedResult:
    """Compare system b with system a when they were evaluated on different trials (two corpora,
    or attackers whose trial lists differ): each system is resampled on its own, with independent
    draws, and the difference b - a is taken per resample. Same report as :func:`paired_bootstrap`;
    the interval is wider, as it must be, since nothing cancels between the two."""
    boots, points = [], []
    for k, (s, y, g) in enumerate(((scores_a, labels_a, groups_a), (scores_b, labels_b, groups_b))):
        boots.append(bootstrap_metrics(s, y, n_boot=n_boot, seed=int(seed) + k, unit=unit, groups=g,
                                       stratify=stratify, level=level, settings=settings))
        pm = compute_metrics(s, y, settings=settings)
        points.append({"eer": pm.eer, "auc": pm.auc, "tpr_at_fpr": dict(pm.tpr_at_fpr), "min_dcf": pm.min_dcf})
    diff, ci, pv = _differences(points[0], points[1], boots[0].samples, boots[1].samples, settings, level)
    valid = np.isfinite(boots[0].samples["auc"]) & np.isfinite(boots[1].samples["auc"])
    return PairedResult(points[0], points[1], diff, ci, pv, n_boot, int(valid.sum()), unit, int(seed))


def _differences(pa: dict, pb: dict, sam_a: dict, sam_b: dict, settings: MetricSettings, level: float):
    """Point difference b - a of every metric, its percentile CI and the bootstrap p-value."""
    def stats(a_val, b_val, a_s, b_s):
        d = b_s - a_s
        d = d[np.isfinite(d)]
        if d.size == 0 or a_val is None or b_val is None:
            return None if a_val is None or b_val is None else b_val - a_val, [None, None], None
        p = min(1.0, 2.0 * min(np.mean(d <= 0), np.mean(d >= 0)))
        return b_val - a_val, percentile_ci(d, level), float(p)

    diff, ci, pv = {}, {}, {}
    for name in ("eer", "auc", "min_dcf"):
        diff[name], ci[name], pv[name] = stats(pa[name], pb[name], sam_a[name], sam_b[name])
    diff["tpr_at_fpr"], ci["tpr_at_fpr"], pv["tpr_at_fpr"] = {}, {}, {}
    for x in settings.fpr_targets:
        diff["tpr_at_fpr"][x], ci["tpr_at_fpr"][x], pv["tpr_at_fpr"][x] = stats(
            pa["tpr_at_fpr"][x], pb["tpr_at_fpr"][x], sam_a["tpr_at_fpr"][x], sam_b["tpr_at_fpr"][x])
    return diff, ci, pv
