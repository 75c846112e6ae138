"""Bootstrap confidence intervals, vectorised: sort once, resample count tables.

Every metric depends only on the per-threshold counts of target and non-target trials, so a
resample is a count table, never a re-sorted list. Two ways to draw one (``method``):

- ``"exact"``: a vector of multiplicities over the trials (how often each trial was drawn). The
  trials are sorted once (:func:`sparc_eval.metrics.core.sort_trials`); each trial has a fixed
  bin ``code = 2 * distinct-score index + label``, so a resample's count table is one
  ``np.bincount`` of the drawn trials' bins (O(n) per resample). Resample ``i`` draws from
  ``np.random.default_rng([seed, i])``.
- ``"binned"``: the trial bootstrap stratified by label is a multinomial draw of the target
  count over the target counts per score bin and of the non-target count over the non-target
  counts (an unstratified one: of all trials over the (bin, label) cells), so a resample costs
  O(B) for B bins, whatever the number of trials. A multinomial is drawn as log2(B) vectorised
  binomial splits of a binary tree over the bins. Block ``j`` of 64 resamples draws from
  ``np.random.default_rng([seed, j, 1])``. The speaker unit uses per-speaker count tables
  (speakers x bins, sparse: one cell per speaker, bin and label that holds trials, so its size
  grows with the trials, not speakers x bins): a resample's table is its speaker multiplicities
  times that matrix, with the same speaker draws as the exact path. The two-way unit weights
  each trial by its speakers' multiplicities and sums the weights per (bin, label) cell: O(trials)
  per resample, since a non-target's weight depends on two speakers.
- ``"auto"`` (default): exact up to 20,000 trials (where it costs no more, and small files keep
  the numbers they always had) and with weights; binned above.

Bins (at most B: 2,048 for the trial unit, 4,096 for the speaker units). With at most B distinct
scores, each distinct score is its own bin and the binned bootstrap is the exact bootstrap in
distribution (other random numbers). Otherwise consecutive distinct scores are grouped: a new
bin starts where either class's cumulative share enters a new cell of width 1/k, and a distinct
score holding at least 1/k of a class's trials is a bin of its own. So a bin holding more than
one distinct score (a *mixed* bin) holds less than 2/k of either class's trials (about 1/k with
continuous scores). k is finer in *focus windows* (:func:`focus_windows`): the distinct scores
within 4 bootstrap standard deviations of the rates that place the point estimate's EER,
TPR@FPR and minDCF thresholds, where the resamples' thresholds fall. They get 75% of the bins
for the trial unit and 30% for the speaker unit (whose AUC needs the rest of the scale fine);
k is lowered until there are at most B bins.

Error bound. Within a mixed bin the order of target and non-target scores is lost; the binned
operating points are the exact ones at the bin edges. Couple each binned resample with the
trial-level resample it aggregates. With tau_k, nu_k the resample's target and non-target
shares of bin k (zero for a bin of one distinct score), the exact replicate lies within:

- EER (SpeechBrain's): +-(tau_k + nu_k) / 2 for the bin k where FAR - FRR first drops to <= 0:
  the exact threshold lies inside bin k, the binned one at one of its edges, so both have
  FAR - FRR within bin k's span (tau_k + nu_k), and (FAR + FRR) / 2 moves by at most half the
  change of FAR - FRR; plus 1e-6 for SpeechBrain's float32 tie-breaking. At most the largest
  mixed bin's share of either class;
- ROCCH-EER: [-max_k tau_k nu_k / (tau_k + nu_k), 0] (the binned hull is above the exact one);
- TPR@FPR: [0, +tau_k] for the bin k of the binned threshold (the exact one lies in it);
- minDCF: [-(binned minDCF - min(accept all, min_k L_k)), 0], L_k the lowest cost any threshold
  inside bin k can have (FRR at the bin's lower edge, FAR at its upper edge);
- AUC, speaker unit: +-sum_k tau_k nu_k / 2 (within-bin pairs counted as ties);
- AUC, trial unit: given the table, the trials drawn into bin k are uniform over its trials, so
  the AUC's expectation given the table adds t_k n_k (a_k - 1/2) / (T N) per bin, a_k the share
  of bin k's (target, non-target) pairs ordered right (:meth:`Binning.order`); that is the value
  used. What is left has mean zero, and one drawn trial moves it by at most the other class's
  count in its bin over T N, so by McDiarmid's inequality it exceeds
  sqrt(ln(2 / 1e-6) / 2 * sum_k t_k n_k (t_k + n_k)) / (T N) with probability < 1e-6 per
  resample (1e-3 over 1,000): the one probabilistic bound.

These are computed for every resample (:attr:`BootstrapResult.bounds`). A percentile is
monotone in each sample, so each exact CI endpoint lies between the percentiles of the lower and
the upper ends; :meth:`BootstrapResult.ci_error_bound` reports the largest distance from the
binned endpoints (0 when the bins are exact); results.json records it (``run.bootstrap``). At
10^6 continuous trials (10% targets) it is about 5e-5 for the EER, the TPRs and minDCF and 2e-5
for the AUC, against CI half-widths of 1.5e-3 (``benchmarks/bench_metrics.py``). Point
estimates never use bins.

Units:

- ``"trial"`` (default): trials drawn with replacement; with ``stratify=True`` (default) target
  and non-target trials are drawn separately, so every resample keeps the trial list's class
  counts (and never has one class);
- ``"two_way"``: speakers drawn with replacement on both sides of a trial (Owen's pigeonhole
  bootstrap for crossed designs, Ann. Appl. Stat. 1(2), 2007): ``groups`` gives each trial's
  test speaker, ``enroll_groups`` its enrolled speaker. When the two sides share speakers (every
  enrolled speaker also tested, as in the card's split and the VoicePrivacy lists) one draw over
  their union serves both: speaker i drawn m_i times gives every trial between enrolled i and
  tested j the weight m_i m_j, a target trial of speaker i included (m_i^2: the pigeonhole's
  diagonal cell, row i and column i each copied m_i times). When no speaker is on both sides the
  two sides are drawn independently. A non-target score depends on both speakers, so holding
  the enrolled side fixed makes intervals too narrow. Owen's pigeonhole bootstrap is mildly
  conservative (Owen and Eckles, Ann. Appl. Stat. 6(3), 2012); weighing a target trial m_i
  instead (one person, counted once) covers only 91-92% at 20-24 speakers, since a drawn speaker
  never meets its own copies in a non-target (docs: "How well the intervals cover").
- ``"speaker"``: test speakers drawn with replacement (``groups`` gives each trial's speaker, by
  default the test speaker), the enrolled side held fixed; every trial of a drawn speaker counts
  as often as it was drawn.

Speaker-unit resamples left with one class are dropped (how many is reported). A paired
comparison applies one set of draws to both systems.

A seed gives the same numbers whatever the chunking. Intervals are percentile intervals
(``level`` 0.95: the 2.5th and 97.5th percentiles of the valid resamples).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Optional

import numpy as np

from ..errors import DataError
from .core import (
    Counts,
    MetricSettings,
    Rates,
    check_trials,
    compact,
    compute_metrics,
    fpr_key,
    group_counts,
    metrics_from_counts,
    metrics_from_rates,
    point_metrics,
    sort_trials,
    tpr_at_fpr_of_rates,
)
from .settings import (  # noqa: F401 (BOOTSTRAP_UNITS, DEFAULT_BOOTSTRAP_UNIT: read from here before)
    BOOTSTRAP_METHODS,
    BOOTSTRAP_UNITS,
    DEFAULT_BOOTSTRAP_UNIT,
    DEFAULT_CHUNK_ELEMENTS,
    TRIAL_BOOTSTRAP,
    BootstrapSettings,
)

# the units, methods and their defaults are defined with the settings (sparc_eval.metrics.settings)
SPEAKER_UNITS = ("two_way", "speaker")
UNIT_WORDS = {  # what a resample draws, as the reports say it ("resamples of ...")
    "two_way": "the speakers on both sides of the trials, enrolled and tested",
    "speaker": "test speakers",
    "trial": "trials",
}
DEFAULT_BINS = {
    "trial": 2048,
    "speaker": 4096,
    "two_way": 4096,
}  # the speaker units' AUC bound needs the finer table
AUTO_EXACT_MAX_TRIALS = 20_000  # "auto" keeps the exact draws up to here (no slower there)
BLOCK = 64  # binned resamples per generator (fixed, so the chunking never changes the numbers)
FOCUS_Z = 4.0  # focus windows span this many bootstrap standard deviations around each threshold
FOCUS_SHARE = {
    "trial": 0.75,
    "speaker": 0.3,
    "two_way": 0.3,
}  # of the bins, for the focus windows (the rest serve the AUC)
AUC_FAILURE = 1e-6  # the trial unit's AUC bound holds for a resample with probability >= 1 - this
EER_FLOAT_SLACK = 1e-6  # SpeechBrain's float32 tie-breaking may pick a near-minimal threshold


@dataclass
class BootstrapResult:
    """Replicates of every metric: ``samples["eer"]`` etc. are arrays of length ``n_boot``
    (NaN for dropped one-class resamples); ``tpr_at_fpr`` maps each FPR target to an array.

    ``method`` is ``"exact"`` or ``"binned"`` (then ``bins`` bins, ``exact_bins`` when each is
    one distinct score); ``bounds`` is ``(below, above)``, two dicts shaped like ``samples``: the
    exact replicate lies in ``[sample - below, sample + above]`` (None for the exact method)."""

    samples: dict
    n_boot: int
    n_valid: int
    unit: str
    seed: int
    level: float = 0.95
    method: str = "exact"
    bins: Optional[int] = None
    exact_bins: bool = True
    bounds: Optional[tuple] = None
    extra: Optional[dict] = None  # replicates of the caller's extra metrics (``extra=`` below)
    sides: Optional[str] = None  # two-way: "one draw" (shared speakers) or "independent draws"

    def ci(self) -> dict:
        """``{"eer": [lo, hi], "auc": ..., "tpr_at_fpr": {target: [lo, hi]}, "min_dcf": ...}``;
        a bound is None when no resample was valid."""
        return _map_metrics(lambda v: percentile_ci(v, self.level), self.samples)

    def extra_ci(self) -> dict:
        """Percentile intervals of the extra metrics' replicates (empty without them)."""
        return {k: percentile_ci(v, self.level) for k, v in (self.extra or {}).items()}

    def ci_error_bound(self) -> Optional[dict]:
        """Per metric, the largest distance of an exact-bootstrap CI endpoint from this one's
        (see the module docstring); None for the exact method."""
        if self.bounds is None:
            return None
        return _map_metrics(
            lambda sba: _endpoint_error(*sba, self.level), _zip_metrics(self.samples, *self.bounds)
        )

    def info(self) -> dict:
        """What results.json records about the bootstrap."""
        out = {
            "method": self.method,
            "resamples": self.n_boot,
            "valid_resamples": self.n_valid,
            "unit": self.unit,
            "seed": self.seed,
        }
        if self.sides is not None:
            out["sides"] = self.sides
        if self.method == "binned":
            bound = self.ci_error_bound()
            bound["tpr_at_fpr"] = {fpr_key(k): v for k, v in bound["tpr_at_fpr"].items()}
            out.update(
                bins=self.bins,
                exact_bins=self.exact_bins,
                ci_error_bound=bound,
                auc_bound_failure_probability=0.0
                if self.exact_bins or self.unit != "trial"
                else min(1.0, AUC_FAILURE * self.n_boot),
            )
        return out


def _map_metrics(fn, metrics: dict) -> dict:
    return {
        name: ({k: fn(x) for k, x in v.items()} if isinstance(v, dict) else fn(v))
        for name, v in metrics.items()
    }


def _zip_metrics(*parts: dict) -> dict:
    """Dicts shaped like ``samples`` -> one dict of tuples."""
    first = parts[0]
    return {
        name: (
            {k: tuple(p[name][k] for p in parts) for k in v}
            if isinstance(v, dict)
            else tuple(p[name] for p in parts)
        )
        for name, v in first.items()
    }


def _endpoint_error(samples, below, above, level: float):
    """Largest shift of a percentile endpoint when each sample may move within its bounds."""
    base = percentile_ci(samples, level)
    if base[0] is None:
        return None
    lo = percentile_ci(np.asarray(samples) - below, level)
    hi = percentile_ci(np.asarray(samples) + above, level)
    return float(max(base[0] - lo[0], hi[0] - base[0], base[1] - lo[1], hi[1] - base[1]))


def percentile_ci(samples, level: float = 0.95):
    """``[lo, hi]`` percentile interval of the finite samples; ``[None, None]`` if none."""
    x = np.asarray(samples, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return [None, None]
    alpha = (1.0 - level) / 2.0
    lo, hi = np.percentile(x, [100 * alpha, 100 * (1 - alpha)])
    return [float(lo), float(hi)]


# ----------------------------------------------------------------------------- score bins


@dataclass(frozen=True)
class Binning:
    """Consecutive distinct scores grouped into bins: ``of_group[g]`` is the bin of distinct
    score g; ``mixed[k]`` says bin k holds more than one distinct score (only those lose order)."""

    of_group: np.ndarray
    mixed: np.ndarray

    @property
    def n_bins(self) -> int:
        return int(self.mixed.size)

    @property
    def exact(self) -> bool:
        return not bool(self.mixed.any())

    @cached_property
    def starts(self) -> np.ndarray:
        """The first distinct score of each bin."""
        return np.flatnonzero(np.r_[True, self.of_group[1:] != self.of_group[:-1]])

    def table(self, weights) -> np.ndarray:
        """Per-bin sums of per-distinct-score counts ``(..., m)`` -> ``(..., n_bins)``."""
        return np.add.reduceat(np.asarray(weights, dtype=np.float64), self.starts, axis=-1)

    def order(self, t, n) -> np.ndarray:
        """Per bin, the share of its (target, non-target) trial pairs with the target scored
        higher, ties counted one half (0.5 without pairs): the order the bin loses."""
        t = np.asarray(t, dtype=np.float64)
        n = np.asarray(n, dtype=np.float64)
        below = np.cumsum(n) - n  # non-target weight below each distinct score ...
        below -= below[self.starts][self.of_group]  # ... within its bin
        pairs = self.table(t) * self.table(n)
        return np.divide(
            self.table(t * (below + 0.5 * n)), pairs, out=np.full(self.n_bins, 0.5), where=pairs > 0
        )


def score_bins(
    t, n, max_bins: int = DEFAULT_BINS["trial"], focus=None, focus_share: float = 0.3
) -> Binning:
    """At most ``max_bins`` bins over the distinct scores with per-score counts ``t``, ``n`` (both
    classes present): each distinct score its own bin when there are few enough, else the rule of
    the module docstring. ``focus`` (bool per distinct score, :func:`focus_windows`) marks where
    the resamples' thresholds fall: those get finer cells, about ``focus_share`` of the bins."""
    t = np.asarray(t, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if max_bins < 2:
        raise ValueError(f"bins must be at least 2, not {max_bins}")
    if t.size <= max_bins:
        return Binning(np.arange(t.size), np.zeros(t.size, dtype=bool))
    focus = np.zeros(t.size, dtype=bool) if focus is None else np.array(focus, dtype=bool)  # a copy
    # continuous scores give about k bins per unit of either class's share: k_fine * width in focus
    width = t[focus].sum() / t.sum() + n[focus].sum() / n.sum()
    k_fine = focus_share * max_bins / width if width > 0 else 0.0
    k_coarse = (1 - focus_share if width > 0 else 1.0) * max_bins / max(2 - width, 1e-9)
    while True:
        if k_coarse < 1 and k_fine < 1:
            focus[:] = False  # so few bins that only the coarse rule fits
        starts = _bin_starts(t, n, np.where(focus, k_fine, k_coarse), focus)
        count = int(starts.sum())
        if count <= max_bins:
            break
        k_fine, k_coarse = (
            k * 0.98 * max_bins / count for k in (k_fine, k_coarse)
        )  # count ~ linear in k
    of_group = np.cumsum(starts) - 1
    return Binning(of_group, np.bincount(of_group) > 1)


def _bin_starts(t, n, k, focus) -> np.ndarray:
    """Where a bin starts: at a focus window's edge, where a class's share before a distinct score
    enters a new 1/k cell, or next to a distinct score holding at least 1/k of a class (such a
    score is a bin of its own). ``k`` is per distinct score."""
    starts = np.zeros(t.size, dtype=bool)
    starts[0] = True
    starts[1:] = focus[1:] != focus[:-1]
    for w in (t, n):
        share = w / w.sum()
        cell = np.floor(k * (np.cumsum(share) - share))
        big = share * k >= 1
        starts[1:] |= (cell[1:] != cell[:-1]) | big[1:] | big[:-1]
    return starts


def focus_windows(t, n, settings: MetricSettings = MetricSettings(), spread=None) -> np.ndarray:
    """Distinct scores near the point estimate's thresholds (EER, each TPR@FPR, minDCF), where a
    resample's thresholds fall: within ``FOCUS_Z`` bootstrap standard deviations of the rates that
    place each; the minDCF's anywhere its cost comes within reach of the minimum, at the spread
    the rates have at the EER threshold (near their largest). ``spread(g)``: the sds of a
    resampled FRR and FAR at distinct score g; None for the trial unit (binomial)."""
    r = Rates(np.asarray(t, dtype=np.float64), np.asarray(n, dtype=np.float64))
    T, N = float(r.T[0]), float(r.N[0])
    if spread is None:

        def spread(g):
            return np.sqrt(r.frr[g] * (1 - r.frr[g]) / T), np.sqrt(r.far[g] * (1 - r.far[g]) / N)

    floor = 1 / T + 1 / N  # one trial of each class
    d = r.far - r.frr
    sd_t, sd_n = spread(int(np.argmin(np.abs(d))))
    near = [np.abs(d) <= FOCUS_Z * (sd_t + sd_n) + floor]
    for x in (x for x in settings.fpr_targets if x < 1):
        near.append(np.abs(r.far - x) <= FOCUS_Z * spread(int(np.argmax(r.far <= x)))[1] + floor)
    a, b = settings.c_miss * settings.p_target, settings.c_fa * (1 - settings.p_target)
    cost = a * r.frr + b * r.far
    near.append(cost <= min(cost.min(), b) + 2 * FOCUS_Z * np.hypot(a * sd_t, b * sd_n) + floor)
    focus = np.zeros(r.t.size, dtype=bool)
    for mask in near:
        idx = np.flatnonzero(mask)
        if idx.size:
            focus[max(idx[0] - 1, 0) : idx[-1] + 2] = (
                True  # the window's hull, one score beyond each end
            )
    return focus


def _speaker_spread(plan: "_Plan", st):
    """``spread(g)`` of :func:`focus_windows` for the speaker units, to first order: a class's
    rate below distinct score g moves by sum_s delta_s x_s / C when speaker s is drawn 1 + delta_s
    times, with x_s = (its trials <= g) - F(g) (its trials), C the class's trials; two-way, a
    trial counts for its enrolled speaker too (twice for a speaker's own target trial). None for
    the trial unit."""
    if plan.unit == "trial":
        return None
    group, is_target = st.code >> 1, (st.code & 1).astype(bool)
    k = plan.n_groups
    roles = [(plan.group_index, np.ones(plan.n, dtype=bool))]
    if plan.enroll_index is not None:
        roles.append((plan.enroll_index, np.ones(plan.n, dtype=bool)))

    def influence(mask, below):
        count = lambda m: sum(np.bincount(s[m & on], minlength=k) for s, on in roles)
        c = count(mask).astype(np.float64)
        x = count(mask & below) - (mask & below).sum() / mask.sum() * c
        return np.sqrt((x * x).sum()) / mask.sum()

    def spread(g):
        below = group <= g
        return influence(is_target, below), influence(~is_target, below)  # FRR's, FAR's

    return spread


class _Tree:
    """A multinomial draw over the bins as binomial splits down a binary tree: log2(B) vectorised
    ``Generator.binomial`` calls (``Generator.multinomial`` draws the bins one by one: 1.3 s
    against 0.9 s here for 1,000 draws over 4,096 bins). ``weights`` are the per-bin counts whose
    proportions the draw follows."""

    def __init__(self, weights):
        w = np.asarray(weights, dtype=np.float64)
        size = 1 << int(np.ceil(np.log2(max(w.size, 2))))
        level = np.zeros(size)
        level[: w.size] = w
        self.size = w.size
        self.p_left = []
        while level.size > 1:
            parent = level.reshape(-1, 2).sum(axis=1)
            self.p_left.append(
                np.divide(level[0::2], parent, out=np.zeros(parent.size), where=parent > 0)
            )
            level = parent
        self.p_left.reverse()  # root first

    def draw(self, rng, total: int, rows: int) -> np.ndarray:
        """``(rows, B)`` counts, each row a multinomial draw of ``total``."""
        c = np.full((rows, 1), int(total), dtype=np.int64)
        for p in self.p_left:
            left = rng.binomial(c, p)
            c = np.stack([left, c - left], axis=-1).reshape(rows, -1)
        return c[:, : self.size]


# ----------------------------------------------------------------------------- binned metrics and bounds


def binned_metrics(t, n, mixed, settings: MetricSettings = MetricSettings(), order=None):
    """``(values, below, above)``: the metrics of binned count tables ``(..., B)`` and how far the
    exact (unbinned) replicate can lie below and above each (module docstring), three dicts shaped
    like :func:`~sparc_eval.metrics.core.metrics_from_counts`'s. ``mixed`` (B,) marks the bins holding more than one
    distinct score; ``order`` (:meth:`Binning.order`, trial unit only) makes the AUC its expected
    value given the table, with a probabilistic bound."""
    r = Rates(t, n)
    values = metrics_from_rates(r, settings)
    mixed = np.asarray(mixed, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where(mixed, r.t / r.T, 0.0)
        nu = np.where(mixed, r.n / r.N, 0.0)
        zero = np.zeros(r.t.shape[:-1])
        eer_below, eer_above = _eer_bound(r, tau, nu, settings, any_mixed=bool(mixed.any()))
        auc = _auc_bound(r, tau, nu, mixed, values, order)
        below = {
            "eer": eer_below,
            "auc": auc,
            "tpr_at_fpr": {x: zero for x in settings.fpr_targets},
            "min_dcf": _min_dcf_bound(r, mixed, values["min_dcf"], settings),
        }
        above = {
            "eer": eer_above,
            "auc": auc,
            "tpr_at_fpr": {
                x: _take(tau, tpr_at_fpr_of_rates(r, x)[1]) for x in settings.fpr_targets
            },
            "min_dcf": zero,
        }
    return values, below, above


def _auc_bound(r: Rates, tau, nu, mixed, values: dict, order):
    """Within-bin pairs count one half: |error| <= sum_k tau_k nu_k / 2. With ``order`` (trial unit)
    the AUC is corrected by each bin's lost order instead (its expectation given the table: the
    trials drawn into bin k are uniform over its trials), and McDiarmid's inequality bounds what is
    left (one drawn trial moves it by at most the other class's count in its bin / (T N))."""
    if order is None:
        return 0.5 * np.einsum("...k,...k->...", tau, nu)
    pairs = r.t * r.n
    values["auc"] = (
        values["auc"] + np.einsum("...k,k->...", pairs, order - 0.5) / (r.T * r.N)[..., 0]
    )
    spread = np.einsum("...k,...k->...", np.where(mixed, pairs, 0.0), r.t + r.n)
    return np.sqrt(0.5 * np.log(2 / AUC_FAILURE) * spread) / (r.T * r.N)[..., 0]


def _take(a, k):
    """``a[..., k]`` per row; k = -1 ("accept all") gives 0."""
    k = np.asarray(k)
    got = np.take_along_axis(a, np.maximum(k, 0)[..., None], -1)[..., 0]
    return np.where(k < 0, 0.0, got)


def _eer_bound(r: Rates, tau, nu, settings: MetricSettings, any_mixed: bool):
    if settings.eer_method == "rocch":
        pair = np.where(tau + nu > 0, tau * nu / (tau + nu), 0.0)
        return pair.max(axis=-1), np.zeros(pair.shape[:-1])
    k = np.argmax(r.far - r.frr <= 0, axis=-1)  # the bin where FAR - FRR first drops to <= 0
    half = 0.5 * (_take(tau, k) + _take(nu, k)) + (EER_FLOAT_SLACK if any_mixed else 0.0)
    return half, half


def _min_dcf_bound(r: Rates, mixed, value, settings: MetricSettings):
    """Binned minDCF minus the lowest cost any exact threshold can have (normalised)."""
    a = settings.c_miss * settings.p_target
    b = settings.c_fa * (1 - settings.p_target)
    frr_below = np.concatenate([np.zeros(r.frr.shape[:-1] + (1,)), r.frr[..., :-1]], axis=-1)
    lowest = np.where(mixed, a * frr_below, a * r.frr) + b * r.far
    floor = np.minimum(lowest.min(axis=-1), b)  # b: "accept all"
    return np.maximum(value - floor / min(a, b), 0.0)


# ----------------------------------------------------------------------------- resampling plans


class _Plan:
    """How to draw resample ``i``: returns either drawn trial indices (trial unit) or per-trial
    multiplicities (speaker units), for rows ``ids`` of the chunk.

    Speaker units number their speakers ``0..n_groups-1``: ``group_index`` is each trial's test
    speaker, ``enroll_index`` (two-way) its enrolled one, in the same numbering when the sides
    share speakers (one draw over their union) and after the test speakers when they do not
    (each side drawn on its own: ``side_sizes``)."""

    def __init__(self, labels, unit: str, stratify: bool, groups, seed: int, enroll_groups=None):
        if unit not in BOOTSTRAP_UNITS:
            raise ValueError(f"unit must be one of {BOOTSTRAP_UNITS}, not {unit!r}")
        self.unit = unit
        self.seed = int(seed)
        self.n = labels.size
        self.draws_per_resample = self.n
        self.enroll_index = None
        self.sides = None
        if unit == "trial":
            self.strata = [np.flatnonzero(labels), np.flatnonzero(~labels)] if stratify else [None]
            return
        test = self._speakers(
            groups, labels, "a speaker-level bootstrap needs each trial's speaker"
        )
        if unit == "speaker":
            _, self.group_index = np.unique(test, return_inverse=True)
            self.side_sizes = [int(self.group_index.max()) + 1]
        else:
            enrolled = self._speakers(
                enroll_groups,
                labels,
                "a two-way bootstrap needs each trial's enrolled speaker",
                hint="pass enroll_groups= (or --enroll2spk, or enrollment ids that are speakers "
                "of --utt2spk)",
            )
            self._two_sides(test, enrolled)
        self.n_groups = sum(self.side_sizes)

    @staticmethod
    def _speakers(
        groups, labels, what: str, hint: str = "pass groups= (or --utt2spk)"
    ) -> np.ndarray:
        if groups is None:
            raise DataError(what, hint=hint)
        g = np.asarray(groups)
        if g.shape != labels.shape:
            raise DataError(f"groups have shape {g.shape} but there are {labels.size} trials")
        return g

    def _two_sides(self, test: np.ndarray, enrolled: np.ndarray) -> None:
        as_str = lambda a: a if a.dtype.kind == "U" else a.astype(str)  # one namespace, both sides
        names, index = sorted_codes(np.concatenate([as_str(test), as_str(enrolled)]))
        test_index, enroll_index = index[: test.size], index[test.size :]
        on_test_side = np.zeros(names.size, dtype=bool)
        on_test_side[test_index] = True
        if on_test_side[enroll_index].any():  # shared speakers: one draw over the union
            self.group_index, self.enroll_index = test_index, enroll_index
            self.side_sizes = [names.size]
            self.sides = "one draw"
        else:  # different people on each side: two independent draws, tested speakers first
            renumber = np.cumsum(on_test_side) - 1
            renumber[~on_test_side] = on_test_side.sum() + np.arange((~on_test_side).sum())
            self.group_index, self.enroll_index = renumber[test_index], renumber[enroll_index]
            self.side_sizes = [int(on_test_side.sum()), int((~on_test_side).sum())]
            self.sides = "independent draws"

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
                    out[row, lo : lo + k] = stratum[rng.integers(0, k, size=k, dtype=np.int32)]
                    lo += k
        return out

    def _draw(self, i: int) -> np.ndarray:
        """Resample ``i``'s drawn speakers: each side's size, with replacement from that side."""
        rng, start, parts = self.rng(i), 0, []
        for size in self.side_sizes:
            parts.append(start + rng.integers(0, size, size=size))
            start += size
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def speaker_multiplicities(self, ids) -> np.ndarray:
        """``(len(ids), n_groups)`` how often each speaker was drawn (speaker units)."""
        k = self.n_groups
        draws = np.stack([self._draw(i) for i in ids])
        offsets = (np.arange(len(ids)) * k)[:, None]
        return np.bincount((draws + offsets).ravel(), minlength=len(ids) * k).reshape(len(ids), k)

    def trial_weights(self, mult: np.ndarray) -> np.ndarray:
        """``(b, n)`` per-trial weights of speaker multiplicities ``mult`` ``(b, n_groups)``: the
        test speaker's multiplicity, times the enrolled speaker's (two-way; for a speaker's own
        target trial, its multiplicity squared)."""
        w = mult[:, self.group_index].astype(np.float64)
        if self.enroll_index is not None:
            w *= mult[:, self.enroll_index]
        return w


def sorted_codes(ids) -> tuple:
    """``(distinct ids sorted, each id's index among them)``, as ``np.unique(ids,
    return_inverse=True)`` gives them: hashed first, then only the distinct ids sorted (sorting
    10^6 strings takes a second)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(pa.array(np.asarray(ids)))
    names = np.asarray(encoded.dictionary.to_pylist())
    order = np.argsort(names, kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return names[order], rank[encoded.indices.to_numpy(zero_copy_only=False)]


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
        w = plan.trial_weights(plan.speaker_multiplicities(ids))  # (b, n) per-trial multiplicity
        if weights is not None:
            w *= weights
        for codes, m in zip(codes_list, m_list):
            binned = codes[None, :] + (np.arange(b) * 2 * m)[:, None]
            table = np.bincount(binned.ravel(), weights=w.ravel(), minlength=b * 2 * m).reshape(
                b, m, 2
            )
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


def bootstrap_metrics(
    scores,
    labels,
    *,
    groups=None,
    enroll_groups=None,
    weights=None,
    boot: BootstrapSettings = TRIAL_BOOTSTRAP,
    settings: MetricSettings = MetricSettings(),
    sorted_trials=None,
    extra=None,
) -> BootstrapResult:
    """Bootstrap replicates of every metric, drawn as ``boot`` says (``n_boot`` resamples of its
    ``unit``, seeded by ``seed``, by its ``method`` over at most ``bins`` score bins: see the
    module docstring; default: the trial unit).

    ``weights`` (optional, original trial order) multiply the resampled multiplicities (exact
    method only). ``chunk_elements`` bounds the exact method's memory; the binned one works in
    blocks of 64 resamples. ``sorted_trials``: :func:`~sparc_eval.metrics.core.sort_trials` of these scores and labels,
    when the caller has it (saves the sort). ``extra(t, n, first)``: more metrics of the same
    resampled count tables ``(b, m)``, whose column j starts at distinct score ``first[j]``
    (one distinct score per column for the exact method, a bin for the binned one); it returns
    ``{name: (b,) array}``, kept in :attr:`BootstrapResult.extra`. ``groups``: each trial's test
    speaker (speaker units); ``enroll_groups``: its enrolled speaker (two-way unit).
    """
    n_boot, seed, unit, level = boot.n_boot, boot.seed, boot.unit, boot.level
    s, y, w = check_trials(scores, labels, weights)
    if n_boot < 1:
        raise ValueError("n_boot must be at least 1")
    st = sort_trials(s, y) if sorted_trials is None else sorted_trials
    plan = _Plan(y, unit, boot.stratify, groups, seed, enroll_groups)
    bins = DEFAULT_BINS[plan.unit] if boot.bins is None else int(boot.bins)
    if _use_binned(boot.method, plan, w, bins):
        return _binned_bootstrap(st, plan, n_boot, level, settings, bins, extra)
    m = st.n_groups
    samples, more = _empty_samples(settings, n_boot), {}
    for lo, hi in _chunks(n_boot, plan.draws_per_resample, boot.chunk_elements):
        ((t, n),) = _chunk_counts(plan, [st.code], w, [m], range(lo, hi))
        _store(samples, lo, hi, metrics_from_counts(t, n, settings))
        _store_extra(more, n_boot, lo, hi, extra, t, n, np.arange(m))
    n_valid = int(np.isfinite(samples["auc"]).sum())
    return BootstrapResult(
        samples, n_boot, n_valid, unit, seed, level, extra=more or None, sides=plan.sides
    )


def _store_extra(more: dict, n_boot: int, lo: int, hi: int, extra, t, n, first) -> None:
    """Replicates lo..hi-1 of the caller's extra metrics (nothing without ``extra``)."""
    if extra is None:
        return
    for name, values in extra(t, n, first).items():
        more.setdefault(name, np.full(n_boot, np.nan))[lo:hi] = values


def _use_binned(method: str, plan: "_Plan", weights, bins: int) -> bool:
    """Whether to draw count tables over score bins (see ``method`` in the module docstring)."""
    if method not in BOOTSTRAP_METHODS:
        raise ValueError(f"method must be one of {BOOTSTRAP_METHODS}, not {method!r}")
    if method == "exact":
        return False
    why = None
    if weights is not None:
        why = "trial weights are not counts of a table"
    if method == "binned" and why:
        raise DataError(f"the binned bootstrap cannot run here: {why}", hint="use the exact method")
    return why is None and (method == "binned" or plan.n > AUTO_EXACT_MAX_TRIALS)


def _binned_bootstrap(
    st, plan: "_Plan", n_boot: int, level: float, settings: MetricSettings, bins: int, extra=None
) -> BootstrapResult:
    t, n = group_counts(st)
    binning = score_bins(
        t, n, bins, focus_windows(t, n, settings, _speaker_spread(plan, st)), FOCUS_SHARE[plan.unit]
    )
    order = binning.order(t, n) if plan.unit == "trial" else None
    draw = _binned_draws(st, plan, binning, binning.table(t), binning.table(n))
    samples, below, above = (_empty_samples(settings, n_boot) for _ in range(3))
    more = {}
    for lo in range(0, n_boot, BLOCK):
        hi = min(n_boot, lo + BLOCK)
        tables = draw(lo, hi)
        for out, part in zip(
            (samples, below, above), binned_metrics(*tables, binning.mixed, settings, order)
        ):
            _store(out, lo, hi, part)
        _store_extra(more, n_boot, lo, hi, extra, *tables, binning.starts)
    n_valid = int(np.isfinite(samples["auc"]).sum())
    return BootstrapResult(
        samples,
        n_boot,
        n_valid,
        plan.unit,
        plan.seed,
        level,
        "binned",
        binning.n_bins,
        binning.exact,
        (below, above),
        more or None,
        plan.sides,
    )


def _binned_draws(st, plan: "_Plan", binning: Binning, tb, nb):
    """``draw(lo, hi)`` -> binned count tables ``(t, n)`` of resamples lo..hi-1 (one block)."""
    if plan.unit == "speaker":
        bins = binning.of_group[st.code >> 1]  # original trial order
        table = speaker_table(
            plan.group_index, bins * 2 + (st.code & 1), plan.n_groups, 2 * binning.n_bins
        )

        def draw(
            lo, hi
        ):  # (table^T @ multiplicities^T)^T: sparse times dense, sums of whole counts (exact)
            mult = plan.speaker_multiplicities(range(lo, hi)).astype(np.float64)
            both = np.asarray(table.T @ mult.T).T.reshape(hi - lo, -1, 2)
            return both[..., 1], both[..., 0]

        return draw
    if plan.unit == "two_way":
        return _two_way_draws(st, plan, binning)
    rng = lambda lo: np.random.default_rng([plan.seed, lo // BLOCK, 1])
    if plan.strata == [None]:  # unstratified: all trials over the (bin, label) cells
        tree = _Tree(np.stack([nb, tb], axis=-1).ravel())

        def draw(lo, hi):
            both = tree.draw(rng(lo), plan.n, hi - lo).reshape(hi - lo, -1, 2)
            return both[..., 1], both[..., 0]

        return draw
    t_tree, n_tree = _Tree(tb), _Tree(nb)

    def draw(lo, hi):
        g = rng(lo)
        return t_tree.draw(g, round(tb.sum()), hi - lo), n_tree.draw(g, round(nb.sum()), hi - lo)

    return draw


def _two_way_draws(st, plan: "_Plan", binning: Binning):
    """The two-way unit's ``draw(lo, hi)``: each trial weighted by its speakers' multiplicities
    (the product of its enrolled and tested speaker's, a speaker's own target trial included),
    summed per (bin, label) cell over the trials
    sorted by cell. Whole counts, so the sums are exact; O(trials) per resample, since a non-target's
    weight depends on two speakers (pairs can be as many as trials)."""
    cell = binning.of_group[st.code >> 1] * 2 + (st.code & 1)  # original trial order
    order = np.argsort(cell, kind="stable")
    cells = cell[order]
    starts = np.flatnonzero(np.r_[True, cells[1:] != cells[:-1]])
    tested = plan.group_index[order]
    enrolled = plan.enroll_index[order]
    n_cells = 2 * binning.n_bins

    def draw(lo, hi):
        mult = plan.speaker_multiplicities(range(lo, hi))
        # int32 sums are exact while every weight together stays below 2^31 (a third faster)
        exact = tested.size * int(mult.max()) ** 2 < 2**31
        mult = mult.astype(np.int32 if exact else np.float64)
        out = np.zeros((hi - lo, n_cells))
        for row, m in enumerate(mult):
            out[row, cells[starts]] = np.add.reduceat(
                m[enrolled] * m[tested], starts, dtype=m.dtype
            )
        both = out.reshape(hi - lo, -1, 2)
        return both[..., 1], both[..., 0]

    return draw


def speaker_table(group_index, cell, n_groups: int, n_cells: int):
    """Sparse (speakers x cells) trial counts: a speaker's row holds only the cells it has trials in."""
    from scipy import sparse

    ones = np.ones(len(cell), dtype=np.float64)
    return sparse.csr_matrix(
        (ones, (group_index, cell)), shape=(n_groups, n_cells)
    )  # duplicates summed


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
        return {
            "a": self.a,
            "b": self.b,
            "diff": self.diff,
            "ci95": self.ci95,
            "p_value": self.p_value,
            "n_boot": self.n_boot,
            "n_valid": self.n_valid,
            "unit": self.unit,
            "seed": self.seed,
        }


def paired_bootstrap(
    scores_a,
    scores_b,
    labels,
    *,
    groups=None,
    enroll_groups=None,
    weights=None,
    boot: BootstrapSettings = TRIAL_BOOTSTRAP,
    settings: MetricSettings = MetricSettings(),
) -> PairedResult:
    """Compare system b with system a on the same trials (same order, same labels).

    Every resample applies the same multiplicities to both systems (one set of draws, of the
    trials or of the speakers on one or both sides: ``boot.unit``); the difference b - a of
    each metric is taken per resample. Reported: the point values, the point difference, its
    percentile CI and a two-sided bootstrap p-value, 2 * min(P(diff* <= 0), P(diff* >= 0))
    capped at 1 (a rough test of "no difference").
    """
    n_boot, seed, unit, level = boot.n_boot, boot.seed, boot.unit, boot.level
    sa, y, w = check_trials(scores_a, labels, weights)
    sb, yb, _ = check_trials(scores_b, labels, weights)
    if sa.shape != sb.shape:
        raise DataError(
            f"the two systems have {sa.size} and {sb.size} trials; they must share trials"
        )
    st_a, st_b = sort_trials(sa, y), sort_trials(sb, y)
    plan = _Plan(y, unit, boot.stratify, groups, seed, enroll_groups)

    pa, pb = _point(st_a, w, settings), _point(st_b, w, settings)
    sam_a = _empty_samples(settings, n_boot)
    sam_b = _empty_samples(settings, n_boot)
    for lo, hi in _chunks(n_boot, 2 * plan.draws_per_resample, boot.chunk_elements):
        (ta, na), (tb, nb) = _chunk_counts(
            plan, [st_a.code, st_b.code], w, [st_a.n_groups, st_b.n_groups], range(lo, hi)
        )
        _store(sam_a, lo, hi, metrics_from_counts(ta, na, settings))
        _store(sam_b, lo, hi, metrics_from_counts(tb, nb, settings))

    diff, ci, pv = _differences(pa, pb, sam_a, sam_b, settings, level)
    valid = np.isfinite(sam_a["auc"]) & np.isfinite(sam_b["auc"])
    return PairedResult(pa, pb, diff, ci, pv, n_boot, int(valid.sum()), unit, int(seed))


def _point(st, weights, settings: MetricSettings) -> dict:
    t, n = group_counts(st, weights)
    pm = point_metrics(compact(Counts(st.unique, t, n)), settings)
    return {"eer": pm.eer, "auc": pm.auc, "tpr_at_fpr": dict(pm.tpr_at_fpr), "min_dcf": pm.min_dcf}


def speaker_paired_bootstrap(
    scores_a,
    labels_a,
    groups_a,
    scores_b,
    labels_b,
    groups_b,
    *,
    enroll_groups_a=None,
    enroll_groups_b=None,
    boot: BootstrapSettings = TRIAL_BOOTSTRAP,
    settings: MetricSettings = MetricSettings(),
) -> PairedResult:
    """Compare two systems scored on different trials of the same test speakers (a text and an
    ECAPA attacker on one corpus; one attacker with and without some utterances). Every resample
    draws speakers with replacement, the same draw for both systems, and weights each system's
    trials by their speaker's multiplicity, so what makes a speaker easy or hard cancels in the
    difference, as trial-level pairing does in :func:`paired_bootstrap`. With both systems'
    enrolled speakers (``enroll_groups_a``, ``enroll_groups_b``) the draw is two-way (see the
    module docstring); without, the enrolled side is held fixed (``unit`` ``"speaker"``); of
    ``boot``, its ``n_boot``, ``seed``, ``level`` and ``chunk_elements`` apply."""
    n_boot, seed, level = boot.n_boot, boot.seed, boot.level
    sa, ya, _ = check_trials(scores_a, labels_a)
    sb, yb, _ = check_trials(scores_b, labels_b)
    ga, gb = np.asarray(groups_a).astype(str), np.asarray(groups_b).astype(str)
    if ga.shape != sa.shape or gb.shape != sb.shape:
        raise DataError("every trial of both systems needs its test speaker (groups)")
    two_way = enroll_groups_a is not None and enroll_groups_b is not None
    if two_way != (enroll_groups_a is not None or enroll_groups_b is not None):
        raise DataError("a two-way comparison needs both systems' enrolled speakers")
    enrolled = (
        np.concatenate([np.asarray(enroll_groups_a), np.asarray(enroll_groups_b)])
        if two_way
        else None
    )
    unit = "two_way" if two_way else "speaker"
    plan = _Plan(np.concatenate([ya, yb]), unit, True, np.concatenate([ga, gb]), seed, enrolled)
    sorted_ = (sort_trials(sa, ya), sort_trials(sb, yb))
    parts = (slice(0, sa.size), slice(sa.size, None))
    points = [_point(st, None, settings) for st in sorted_]
    samples = [_empty_samples(settings, n_boot), _empty_samples(settings, n_boot)]
    for lo, hi in _chunks(n_boot, sa.size + sb.size, boot.chunk_elements):
        weights = plan.trial_weights(plan.speaker_multiplicities(range(lo, hi)))
        rows = np.arange(hi - lo)[:, None]
        for st, part, sam in zip(sorted_, parts, samples):
            m = st.n_groups
            binned = st.code[None, :] + rows * 2 * m
            table = np.bincount(
                binned.ravel(), weights=weights[:, part].ravel(), minlength=(hi - lo) * 2 * m
            ).reshape(hi - lo, m, 2)
            _store(sam, lo, hi, metrics_from_counts(table[..., 1], table[..., 0], settings))
    diff, ci, pv = _differences(points[0], points[1], samples[0], samples[1], settings, level)
    valid = np.isfinite(samples[0]["auc"]) & np.isfinite(samples[1]["auc"])
    return PairedResult(
        points[0], points[1], diff, ci, pv, n_boot, int(valid.sum()), unit, int(seed)
    )


def unpaired_bootstrap(
    scores_a,
    labels_a,
    scores_b,
    labels_b,
    *,
    groups_a=None,
    groups_b=None,
    enroll_groups_a=None,
    enroll_groups_b=None,
    boot: BootstrapSettings = TRIAL_BOOTSTRAP,
    settings: MetricSettings = MetricSettings(),
) -> PairedResult:
    """Compare system b with system a when they were evaluated on different trials (two corpora,
    or attackers whose trial lists differ): each system is resampled on its own, with independent
    draws, and the difference b - a is taken per resample. Same report as :func:`paired_bootstrap`;
    the interval is wider, as it must be, since nothing cancels between the two. Each system is
    drawn as ``boot`` says, the second with ``seed + 1``, by the default method and bins (nothing
    pairs the two draws for the binned tables to share)."""
    n_boot, seed, unit, level = boot.n_boot, boot.seed, boot.unit, boot.level
    boots, points = [], []
    systems = (
        (scores_a, labels_a, groups_a, enroll_groups_a),
        (scores_b, labels_b, groups_b, enroll_groups_b),
    )
    for k, (s, y, g, e) in enumerate(systems):
        boots.append(
            bootstrap_metrics(
                s,
                y,
                groups=g,
                enroll_groups=e,
                boot=replace(boot, seed=int(seed) + k, method="auto", bins=None),
                settings=settings,
            )
        )
        pm = compute_metrics(s, y, settings=settings)
        points.append(
            {"eer": pm.eer, "auc": pm.auc, "tpr_at_fpr": dict(pm.tpr_at_fpr), "min_dcf": pm.min_dcf}
        )
    diff, ci, pv = _differences(
        points[0], points[1], boots[0].samples, boots[1].samples, settings, level
    )
    valid = np.isfinite(boots[0].samples["auc"]) & np.isfinite(boots[1].samples["auc"])
    return PairedResult(
        points[0], points[1], diff, ci, pv, n_boot, int(valid.sum()), unit, int(seed)
    )


def _differences(
    pa: dict, pb: dict, sam_a: dict, sam_b: dict, settings: MetricSettings, level: float
):
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
            pa["tpr_at_fpr"][x], pb["tpr_at_fpr"][x], sam_a["tpr_at_fpr"][x], sam_b["tpr_at_fpr"][x]
        )
    return diff, ci, pv
