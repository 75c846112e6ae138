"""The numeric core: one sort of the scores, then every metric from cumulative sums.

Trials are ``(score, label)`` pairs with an optional non-negative weight each; a higher score
means "more likely the same speaker". The scores are sorted once (:func:`sort_trials`) and
reduced to per-unique-score weights of target and non-target trials (:func:`group_counts`,
arrays ``t`` and ``n`` of length ``m``, the number of distinct scores). Every metric below is a
pure function of ``(t, n)`` and accepts leading batch dimensions, ``(..., m)``, so the bootstrap
evaluates a whole chunk of resamples with the same code as the point estimate.

Conventions (SpeechBrain's, which the VoicePrivacy Challenge reports). For a threshold ``u``
a trial is accepted when its score is ``> u``:

- FRR(u) = share of target weight with score ``<= u`` (false rejection, miss, P_miss);
- FAR(u) = share of non-target weight with score ``> u`` (false acceptance, P_fa, FPR);
- TPR(u) = 1 - FRR(u).

Scores that tie are never split: a threshold accepts all or none of them, so ties give the
steps and diagonal ROC segments that scikit-learn's ``roc_curve`` gives too.

Input rules (checked by :func:`check_trials`, errors are :class:`sparc_eval.errors.DataError`):

- NaN scores are rejected, naming the first bad index and how many there are;
- +/-inf scores are rejected as well (they would make thresholds and midpoints infinite and
  cannot be written to results.json); map them to finite values first if they are meaningful;
- labels are booleans or 0/1 (``True``/1 = target);
- weights are finite and >= 0 (0 removes a trial); integer weights are multiplicities;
- one-class input (no target or no non-target weight) is rejected by the scalar functions;
  the batched ``*_from_counts`` functions return NaN for such rows (the bootstrap drops them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Optional, Sequence

import numpy as np

from ..errors import DataError

DEFAULT_FPR_TARGETS = (0.01, 0.001)
DEFAULT_P_TARGET = 0.01
EER_METHODS = ("speechbrain", "rocch")


@dataclass(frozen=True)
class MetricSettings:
    """What to compute: EER method, TPR@FPR targets and the minDCF operating point.

    ``eer_method``: ``"speechbrain"`` (default; :func:`~sparc_eval.metrics.core.eer_from_counts`) or ``"rocch"``
    (the interpolated, convex-hull EER of :func:`~sparc_eval.metrics.core.rocch_eer_from_counts`).
    minDCF defaults are NIST SRE's: ``p_target`` 0.01, ``c_miss`` = ``c_fa`` = 1.
    """

    eer_method: str = "speechbrain"
    fpr_targets: tuple = DEFAULT_FPR_TARGETS
    p_target: float = DEFAULT_P_TARGET
    c_miss: float = 1.0
    c_fa: float = 1.0

    def __post_init__(self):
        if self.eer_method not in EER_METHODS:
            raise ValueError(f"eer_method must be one of {EER_METHODS}, not {self.eer_method!r}")
        targets = tuple(float(x) for x in np.atleast_1d(self.fpr_targets))
        if any(not 0.0 <= x <= 1.0 for x in targets):
            raise ValueError(f"fpr_targets must lie in [0, 1]: {targets}")
        object.__setattr__(self, "fpr_targets", targets)
        if not 0.0 < self.p_target < 1.0:
            raise ValueError(f"p_target must lie in (0, 1), not {self.p_target}")
        if self.c_miss <= 0 or self.c_fa <= 0:
            raise ValueError("c_miss and c_fa must be positive")


def fpr_key(value: float) -> str:
    """The results.json key of a TPR@FPR target: 0.01 -> "0.01", 0.001 -> "0.001"."""
    return np.format_float_positional(float(value), trim="-")


# ----------------------------------------------------------------------------- input checks


def check_trials(scores, labels, weights=None, *, allow_one_class: bool = False):
    """Validated ``(scores float64, labels bool, weights float64 | None)``; see the module rules."""
    s = np.asarray(scores)
    if s.ndim != 1:
        raise DataError(f"scores must be one-dimensional, got shape {s.shape}")
    if s.size == 0:
        raise DataError("no trials: the score list is empty")
    if not (np.issubdtype(s.dtype, np.number) or s.dtype == bool):
        raise DataError(f"scores must be numbers, got dtype {s.dtype}")
    s = s.astype(np.float64, copy=False)
    bad = ~np.isfinite(s)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        kind = "NaN" if np.isnan(s[first]) else "infinite"
        raise DataError(
            f"score {first} (0-based) is {kind}; {int(bad.sum())} of {s.size} scores are not finite",
            hint="NaN and +/-inf scores are rejected; fix the scorer or map them to finite values",
        )
    y = np.asarray(labels)
    if y.shape != s.shape:
        raise DataError(f"labels have shape {y.shape} but scores have {s.shape}")
    if y.dtype != bool:
        if not np.issubdtype(y.dtype, np.number):
            raise DataError(
                f"labels must be booleans or 0/1, got dtype {y.dtype}",
                hint="True/1 = target, False/0 = nontarget",
            )
        ok = (y == 0) | (y == 1)
        if not ok.all():
            first = int(np.flatnonzero(~ok)[0])
            raise DataError(
                f"label {first} (0-based) is {y[first]!r}, not 0 or 1",
                hint="True/1 = target, False/0 = nontarget",
            )
        y = y == 1
    w = None
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != s.shape:
            raise DataError(f"weights have shape {w.shape} but scores have {s.shape}")
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"weight {first} (0-based) is {w[first]!r}; weights must be finite and >= 0"
            )
    if not allow_one_class:
        tw = float(w[y].sum()) if w is not None else float(y.sum())
        nw = float(w[~y].sum()) if w is not None else float((~y).sum())
        if tw <= 0 or nw <= 0:
            which = "target" if tw <= 0 else "non-target"
            raise DataError(
                f"only one class: there are no {which} trials (with non-zero weight) among {s.size}",
                hint="EER, AUC, TPR@FPR and minDCF need both target and non-target trials",
            )
    return s, y, w


# ----------------------------------------------------------------------------- the one sort


class SortedTrials(NamedTuple):
    """Trials sorted by ascending score, grouped by distinct score.

    ``order[i]`` is the original index of the i-th smallest score; ``is_target`` is in sorted
    order; ``group[i]`` is the index into ``unique`` of the i-th sorted trial; ``starts[k]`` is
    where group ``k`` starts in sorted order; ``code`` (original order) is ``2 * group + label``,
    the bin of each trial in a ``(m, 2)`` count table (used by the bootstrap).
    """

    order: np.ndarray
    is_target: np.ndarray
    group: np.ndarray
    unique: np.ndarray
    starts: np.ndarray
    code: np.ndarray

    @property
    def n_groups(self) -> int:
        return int(self.unique.size)


def sort_trials(scores, labels) -> SortedTrials:
    """Sort once (O(n log n)) and find the groups of equal scores; inputs already checked."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=bool)
    order = np.argsort(s)
    s_sorted = s[order]
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    np.not_equal(s_sorted[1:], s_sorted[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    is_target = y[order]
    code = np.empty(s.size, dtype=np.int64)
    code[order] = 2 * group + is_target
    return SortedTrials(order, is_target, group, s_sorted[starts], starts, code)


def group_counts(st: SortedTrials, weights=None):
    """Per-unique-score target and non-target weight ``(t, n)``, each of shape ``(..., m)``.

    ``weights``: None (each trial counts 1), or an array ``(..., n)`` in the ORIGINAL trial
    order (a leading batch dimension gives one count table per row).
    """
    m = st.n_groups
    if weights is None:
        both = np.bincount(st.code, minlength=2 * m).reshape(m, 2).astype(np.float64)
        return both[:, 1], both[:, 0]
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == 1:
        both = np.bincount(st.code, weights=w, minlength=2 * m).reshape(m, 2)
        return both[:, 1], both[:, 0]
    ws = w[..., st.order]
    t = np.add.reduceat(np.where(st.is_target, ws, 0.0), st.starts, axis=-1)
    n = np.add.reduceat(np.where(st.is_target, 0.0, ws), st.starts, axis=-1)
    return t, n


class Counts(NamedTuple):
    """Distinct scores (ascending) with the target and non-target weight at each."""

    unique: np.ndarray
    t: np.ndarray
    n: np.ndarray

    @property
    def n_target(self) -> float:
        return float(self.t.sum())

    @property
    def n_nontarget(self) -> float:
        return float(self.n.sum())


def counts(scores, labels, weights=None, *, allow_one_class: bool = False) -> Counts:
    """Check, sort once, and reduce to :class:`Counts` (zero-weight scores dropped)."""
    s, y, w = check_trials(scores, labels, weights, allow_one_class=allow_one_class)
    st = sort_trials(s, y)
    t, n = group_counts(st, w)
    return compact(Counts(st.unique, t, n))


def compact(c: Counts) -> Counts:
    """Drop distinct scores that carry no weight (so thresholds are those of the data)."""
    keep = (c.t + c.n) > 0
    if keep.all():
        return c
    return Counts(c.unique[keep], c.t[keep], c.n[keep])


# ----------------------------------------------------------------------------- error rates


class Rates:
    """Cumulative sums of one count table (or a batch of them), computed once and shared by
    every metric: ``tle``/``nle`` = target/non-target weight with score <= each distinct score,
    ``T``/``N`` = totals (shape ``(..., 1)``), ``frr``/``far`` = the error rates at each
    distinct-score threshold (reject scores <= u_k):

    frr_k = (target weight <= u_k) / T;  far_k = (non-target weight > u_k) / N.

    Rows with T = 0 or N = 0 give NaN rates.
    """

    def __init__(self, t, n):
        # integer counts stay integers (exact sums); anything else becomes float64
        self.t = _as_numeric(t)
        self.n = _as_numeric(n)
        self.tle = np.cumsum(self.t, axis=-1)
        self.nle = np.cumsum(self.n, axis=-1)
        self.T = self.tle[..., -1:]
        self.N = self.nle[..., -1:]
        self.ngt = self.N - self.nle
        with np.errstate(divide="ignore", invalid="ignore"):
            self.frr = self.tle / self.T
            self.far = self.ngt / self.N


def _as_numeric(a):
    a = np.asarray(a)
    return a if a.dtype.kind in "iuf" and a.dtype.itemsize == 8 else a.astype(np.float64)


def error_rates(t, n):
    """``(frr, far)`` at each distinct-score threshold (see :class:`Rates`)."""
    r = Rates(t, n)
    return r.frr, r.far


# ----------------------------------------------------------------------------- EER


def _eer_pick(r: Rates):
    """Index of SpeechBrain's EER threshold among the distinct scores, and whether it is the
    midpoint just above that score.

    SpeechBrain's ``metric_stats.EER`` (1.1.2) walks the thresholds ``u_0 < m_0 < u_1 < ...
    < u_{m-1}`` (distinct scores and midpoints; a midpoint has the rates of the score below)
    and keeps threshold i when ``|FAR_i - FRR_i| < |FAR_best - FRR_best|`` (the first
    threshold seeds the search). Its rates are float32 (``count.float() / total``), the
    candidate's difference is rounded to float32 and the incumbent's is exact (Python
    floats). With r = the rounded and e = the exact |FAR - FRR|, that walk ends at the first
    threshold with the smallest r whose e <= min r, or, if there is none, at the last threshold
    with the smallest r. That closed form is computed here without a loop, so the result
    equals SpeechBrain's, including how it breaks exact ties (a plain float64 argmin differs
    from it in about 1% of balanced, heavily tied score sets).
    """
    m = r.t.shape[-1]
    shape = r.t.shape[:-1]
    # float32 rates differ from the float64 ones by < 2e-7 (counts and totals rounded to
    # float32, then the quotient), so every threshold in the float32 minimum set lies within
    # 1e-6 of the float64 minimum of |FAR - FRR|: emulate float32 on those (1e-5 margin) only.
    d64 = np.abs(r.far - r.frr).reshape(-1, m)
    near = d64 <= d64.min(axis=-1, keepdims=True) + 1e-5
    rows, cols = np.nonzero(near)  # a few per row, in row-major order
    flat = lambda a: a.reshape(-1, a.shape[-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        frr32 = flat(r.tle)[rows, cols].astype(np.float32) / flat(r.T)[rows, 0].astype(np.float32)
        far32 = flat(r.ngt)[rows, cols].astype(np.float32) / flat(r.N)[rows, 0].astype(np.float32)
    d32 = np.abs(far32 - frr32)
    e = np.abs(far32.astype(np.float64) - frr32.astype(np.float64))
    rmin_rows = np.full(d64.shape[0], np.inf, dtype=np.float32)
    np.minimum.at(rmin_rows, rows, d32)
    rmin = rmin_rows[rows]
    in_min = d32 == rmin
    rows, cols, e, rmin = rows[in_min], cols[in_min], e[in_min], rmin[in_min]
    ok = e <= rmin
    n_rows = int(np.prod(shape, dtype=np.int64))
    k = np.zeros(n_rows, dtype=np.int64)
    has_ok = np.zeros(n_rows, dtype=bool)
    if rows.size:
        last = np.r_[rows[1:] != rows[:-1], True]
        k[rows[last]] = cols[last]  # last threshold in the minimum set ...
        ok_rows, first = np.unique(rows[ok], return_index=True)
        k[ok_rows] = cols[ok][first]  # ... unless one of them has e <= min r
        has_ok[ok_rows] = True
    k = k.reshape(shape)
    has_ok = has_ok.reshape(shape)
    at_mid = ~has_ok & (k < m - 1)
    return k, at_mid


def eer_at_rates(r: Rates):
    k, at_mid = _eer_pick(r)
    kk = np.asarray(k)[..., None]
    value = 0.5 * (np.take_along_axis(r.frr, kk, -1) + np.take_along_axis(r.far, kk, -1))[..., 0]
    return value, k, at_mid


def eer_from_counts(t, n, unique=None):
    """EER (SpeechBrain's definition, the default), batched over leading dimensions.

    Thresholds are the distinct scores and the midpoints between neighbours; FRR = share of
    target scores <= threshold, FAR = share of non-target scores > threshold; the EER is
    (FAR + FRR) / 2 at the first threshold minimising ``|FAR - FRR|`` (ties broken exactly as
    SpeechBrain breaks them, see ``_eer_pick``). The value is computed from the exact
    float64 rates at that threshold; SpeechBrain averages its float32 rates, so the two differ
    by at most about 6e-8.

    Returns ``(eer, threshold)``; ``threshold`` is None unless ``unique`` (the distinct scores)
    is given. Rows with one class give NaN.
    """
    value, k, at_mid = eer_at_rates(Rates(t, n))
    threshold = None
    if unique is not None:
        threshold = threshold_at(np.asarray(unique, dtype=np.float64), k, at_mid)
    return value, threshold


def _midpoint(a, b):
    mid = (a + b) / 2  # as SpeechBrain computes it
    return np.where(np.isfinite(mid), mid, a / 2 + b / 2)


def threshold_at(unique, k, at_mid):
    k = np.asarray(k)
    upper = unique[np.minimum(k + 1, unique.size - 1)]
    mid = _midpoint(unique[k], upper)
    # a midpoint that rounds onto the score above belongs to that score's rates
    use_mid = np.asarray(at_mid) & (mid < upper)
    return np.where(use_mid, mid, unique[k])


def rocch_eer_at_rates(r: Rates, iterations: int = 80):
    shape = r.frr.shape[:-1]
    if not shape:
        return _rocch_eer_1d(r, iterations)
    x = np.concatenate([r.far, np.ones(shape + (1,))], axis=-1)  # P_fa, with "accept all"
    y = np.concatenate([r.frr, np.zeros(shape + (1,))], axis=-1)  # P_miss
    bad = ~np.isfinite(x).all(axis=-1)
    x = np.where(bad[..., None], 0.5, x)
    y = np.where(bad[..., None], 0.5, y)
    lo = np.zeros(shape + (1,))
    hi = np.ones(shape + (1,))
    found = np.zeros(shape, dtype=bool)
    e_found = np.zeros(shape)
    for _ in range(iterations):  # over bisection steps, not trials
        w = (lo + hi) / 2
        if np.all(found | ((w == lo) | (w == hi))[..., 0]):
            break  # w cannot be refined any further in float64
        i = np.argmin(w * x + (1 - w) * y, axis=-1)[..., None]
        slope = (np.take_along_axis(x, i, -1) - np.take_along_axis(y, i, -1))[..., 0]
        hit = (slope == 0) & ~found
        e_found = np.where(hit, np.take_along_axis(x, i, -1)[..., 0], e_found)
        found |= hit
        lo = np.where((slope > 0)[..., None], w, lo)
        hi = np.where((slope < 0)[..., None], w, hi)
    ia = np.argmin(lo * x + (1 - lo) * y, axis=-1)[..., None]
    ib = np.argmin(hi * x + (1 - hi) * y, axis=-1)[..., None]
    xa, ya = np.take_along_axis(x, ia, -1)[..., 0], np.take_along_axis(y, ia, -1)[..., 0]
    xb, yb = np.take_along_axis(x, ib, -1)[..., 0], np.take_along_axis(y, ib, -1)[..., 0]
    e = np.where(found, e_found, _diagonal_crossing(xa, ya, xb, yb))
    return np.where(bad, np.nan, e)


def _diagonal_crossing(xa, ya, xb, yb):
    """Where the segment (xa, ya)-(xb, yb) meets x = y."""
    denom = (xb - xa) - (yb - ya)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(denom != 0, (ya - xa) / denom, 0.0)
    return xa + frac * (xb - xa)


def _rocch_eer_1d(r: Rates, iterations: int = 80):
    """One curve: the same bisection on fewer points. Only staircase corners can be hull
    vertices (a point is dominated by its neighbour when the next distinct score holds no
    target, same P_miss and smaller P_fa, or its own score holds no non-target, same P_fa as
    the previous point and larger P_miss). Then, during the bisection, points that can no
    longer be on the segment sought are dropped: a point active at some w in [lo, hi] has
    f(lo) <= h(lo) + 2 (hi - lo), since every f and h have slopes in [-1, 1]."""
    far, frr = r.far, r.frr
    if not np.isfinite(far).all():
        return np.float64(np.nan)
    corner = np.ones(far.size, dtype=bool)
    corner[:-1] &= r.t[1:] > 0
    corner[1:] &= r.n[1:] > 0
    x = np.concatenate([far[corner], [1.0]])
    y = np.concatenate([frr[corner], [0.0]])
    lo, hi = 0.0, 1.0
    for step in range(iterations):
        w = (lo + hi) / 2
        if w == lo or w == hi:
            break
        i = np.argmin(w * x + (1 - w) * y)
        slope = x[i] - y[i]
        if slope == 0:
            return np.float64(x[i])
        if slope > 0:
            lo = w
        else:
            hi = w
        if step % 2 == 1 and x.size > 64:
            f_lo = lo * x + (1 - lo) * y
            keep = f_lo <= f_lo.min() + 2 * (hi - lo) + 1e-12
            x, y = x[keep], y[keep]
    ia = np.argmin(lo * x + (1 - lo) * y)
    ib = np.argmin(hi * x + (1 - hi) * y)
    return np.float64(_diagonal_crossing(x[ia], y[ia], x[ib], y[ib]))


def rocch_eer_from_counts(t, n):
    """Interpolated EER on the ROC convex hull (ROCCH-EER, as NIST / BOSARIS report it).

    The operating points (P_fa, P_miss) are the distinct-score thresholds plus "accept all"
    (1, 0). The lower-left convex hull of those points crosses the diagonal P_fa = P_miss at
    (e, e); e is the ROCCH-EER. By duality e = max over w in [0, 1] of
    min_k (w P_fa_k + (1 - w) P_miss_k), a concave function of w whose slope at w is
    P_fa - P_miss of the active point; bisection on that slope finds the two hull vertices
    whose segment crosses the diagonal, and e is that crossing (exact up to rounding).
    Batched over leading dimensions; one-class rows give NaN.
    """
    return rocch_eer_at_rates(Rates(t, n))


# ----------------------------------------------------------------------------- AUC, TPR@FPR, minDCF


def _auc(r: Rates):
    # sum_k t_k (nle_k - n_k / 2), as dot products (no temporaries of the table's size)
    pairs = np.einsum("...k,...k->...", r.t, r.nle) - 0.5 * np.einsum("...k,...k->...", r.t, r.n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return pairs / (r.T * r.N)[..., 0]


def auc_from_counts(t, n):
    """Area under the ROC curve: P(target > non-target) + P(tie) / 2, the trapezoidal area
    that scikit-learn's ``roc_auc_score`` computes. Batched; one-class rows give NaN."""
    return _auc(Rates(t, n))


def tpr_at_fpr_of_rates(r: Rates, fpr_target: float):
    if fpr_target >= 1.0:
        tpr = np.where(np.isnan(r.frr[..., -1]), np.nan, 1.0)
        return tpr, np.full(r.frr.shape[:-1], -1)
    ok = r.far <= fpr_target  # the last threshold (reject all) always qualifies
    k = np.argmax(ok, axis=-1)
    tpr = 1.0 - np.take_along_axis(r.frr, k[..., None], -1)[..., 0]
    return tpr, k


def tpr_at_fpr_from_counts(t, n, fpr_target: float):
    """Largest TPR among thresholds whose FPR (= FAR) does not exceed ``fpr_target``.

    Operating points are "accept scores > u_k" for each distinct score u_k, plus "accept all"
    (FPR = TPR = 1); no interpolation, so coarse (e.g. integer) scores show their steps.
    Returns ``(tpr, k)`` where ``k`` is the distinct-score index of the threshold (-1 for
    "accept all"). Batched; one-class rows give NaN.
    """
    return tpr_at_fpr_of_rates(Rates(t, n), fpr_target)


def _min_dcf(r: Rates, p_target, c_miss, c_fa):
    cost = c_miss * p_target * r.frr + c_fa * (1 - p_target) * r.far
    norm = min(c_miss * p_target, c_fa * (1 - p_target))
    accept_all = c_fa * (1 - p_target)
    k = np.argmin(cost, axis=-1)
    best = np.take_along_axis(cost, k[..., None], -1)[..., 0]
    use_all = accept_all < best
    value = np.where(use_all, accept_all, best) / norm
    return np.where(np.isnan(best), np.nan, value), np.where(use_all, -1, k)


def min_dcf_from_counts(t, n, *, p_target=DEFAULT_P_TARGET, c_miss=1.0, c_fa=1.0):
    """Normalised minimum detection cost (NIST SRE): min over thresholds of
    (c_miss * P_miss * p_target + c_fa * P_fa * (1 - p_target)) / min(c_miss * p_target,
    c_fa * (1 - p_target)). Thresholds: every distinct score (reject <= it; the largest
    rejects all) and "accept all". Returns ``(min_dcf, k)``, ``k`` = -1 for "accept all".
    Batched; one-class rows give NaN.
    """
    return _min_dcf(Rates(t, n), p_target, c_miss, c_fa)


def metrics_from_counts(t, n, settings: MetricSettings = MetricSettings()) -> dict:
    """Every metric for each row of ``(t, n)`` from one set of cumulative sums:
    ``{"eer", "auc", "tpr_at_fpr": {target: array}, "min_dcf"}``."""
    return metrics_from_rates(Rates(t, n), settings)


def metrics_from_rates(r: Rates, settings: MetricSettings = MetricSettings()) -> dict:
    """:func:`metrics_from_counts` on cumulative sums already computed (the binned bootstrap
    reuses them for its error bounds)."""
    eer = rocch_eer_at_rates(r) if settings.eer_method == "rocch" else eer_at_rates(r)[0]
    return {
        "eer": eer,
        "auc": _auc(r),
        "tpr_at_fpr": {x: tpr_at_fpr_of_rates(r, x)[0] for x in settings.fpr_targets},
        "min_dcf": _min_dcf(r, settings.p_target, settings.c_miss, settings.c_fa)[0],
    }


# ----------------------------------------------------------------------------- curves


def roc_points(c: Counts):
    """ROC points ``(fpr, tpr, thresholds)`` by increasing FPR: (0, 0) at "reject all" ...
    (1, 1) at "accept all" (threshold -inf). A point's threshold u accepts scores > u."""
    frr, far = error_rates(c.t, c.n)
    fpr = np.concatenate([far[::-1], [1.0]])
    tpr = np.concatenate([1.0 - frr[::-1], [1.0]])
    thr = np.concatenate([c.unique[::-1], [-np.inf]])
    return fpr, tpr, thr


def det_points(c: Counts):
    """DET points ``(far, frr, thresholds)``: the ROC points as (P_fa, P_miss)."""
    fpr, tpr, thr = roc_points(c)
    return fpr, 1.0 - tpr, thr


def thin_curve(x, y, max_points: int = 2000, *, scale: str = "linear"):
    """At most about ``max_points`` points of a monotone curve of rates, for plotting.

    Keeps the ends and the first point of every cell of a ``max_points`` x ``max_points``
    grid; ``scale="logit"`` lays the grid on log10(r / (1 - r)) (rates clipped to [1e-7,
    1 - 1e-7]), which keeps the detail a DET plot needs at low error rates.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.size <= max_points:
        return x, y

    def coord(r):
        if scale == "logit":
            r = np.clip(r, 1e-7, 1 - 1e-7)
            return (np.log10(r) - np.log10(1 - r) + 7.0) / 14.0
        return r

    cx = np.floor(coord(x) * max_points)
    cy = np.floor(coord(y) * max_points)
    _, first = np.unique(cx * (max_points + 1) + cy, return_index=True)
    keep = np.unique(np.concatenate([first, [0, x.size - 1]]))
    return x[keep], y[keep]


# ----------------------------------------------------------------------------- scalar API


class EERResult(NamedTuple):
    eer: float
    threshold: Optional[float]


def eer(scores, labels, weights=None, *, method: str = "speechbrain") -> EERResult:
    """EER and its threshold (see :func:`~sparc_eval.metrics.core.eer_from_counts`; ``method="rocch"`` gives the
    convex-hull interpolated EER, whose threshold is None: it lies between two operating
    points). Raises DataError on NaN/inf scores or one-class input."""
    c = counts(scores, labels, weights)
    if method == "rocch":
        return EERResult(float(rocch_eer_from_counts(c.t, c.n)), None)
    if method != "speechbrain":
        raise ValueError(f"method must be one of {EER_METHODS}, not {method!r}")
    value, thr = eer_from_counts(c.t, c.n, c.unique)
    return EERResult(float(value), float(thr))


def auc(scores, labels, weights=None) -> float:
    """ROC AUC (equals scikit-learn's ``roc_auc_score``, ties counted one half)."""
    c = counts(scores, labels, weights)
    return float(auc_from_counts(c.t, c.n))


def tpr_at_fpr(
    scores, labels, fpr_targets: Sequence[float] = DEFAULT_FPR_TARGETS, weights=None
) -> dict:
    """``{fpr_target: tpr}``: the largest TPR at an FPR not above each target (no interpolation)."""
    c = counts(scores, labels, weights)
    return {
        float(x): float(tpr_at_fpr_from_counts(c.t, c.n, float(x))[0])
        for x in np.atleast_1d(fpr_targets)
    }


def min_dcf(scores, labels, weights=None, *, p_target=DEFAULT_P_TARGET, c_miss=1.0, c_fa=1.0):
    """``(min_dcf, threshold)``: normalised minDCF and its threshold (reject scores <= it;
    -inf means "accept all")."""
    c = counts(scores, labels, weights)
    value, k = min_dcf_from_counts(c.t, c.n, p_target=p_target, c_miss=c_miss, c_fa=c_fa)
    thr = -np.inf if int(k) < 0 else float(c.unique[int(k)])
    return float(value), thr


def roc_curve(scores, labels, weights=None):
    """``(fpr, tpr, thresholds)`` from one sort, by increasing FPR (see
    :func:`~sparc_eval.metrics.core.roc_points`)."""
    return roc_points(counts(scores, labels, weights))


def det_curve(scores, labels, weights=None):
    """``(far, frr, thresholds)`` (see :func:`~sparc_eval.metrics.core.det_points`)."""
    return det_points(counts(scores, labels, weights))


@dataclass
class PointMetrics:
    """The overall metric block of results.json, plus the operating points behind it."""

    eer: float
    eer_threshold: Optional[float]
    auc: float
    tpr_at_fpr: dict
    min_dcf: float
    n_target: int
    n_nontarget: int
    min_dcf_threshold: Optional[float] = None
    tpr_thresholds: dict = field(default_factory=dict)
    eer_speechbrain: Optional[float] = None
    eer_rocch: Optional[float] = None

    def as_dict(self) -> dict:
        """The ``overall`` keys of :doc:`/contracts` (without ``ci95``)."""
        return {
            "eer": self.eer,
            "eer_threshold": self.eer_threshold,
            "auc": self.auc,
            "tpr_at_fpr": {fpr_key(k): v for k, v in self.tpr_at_fpr.items()},
            "min_dcf": self.min_dcf,
            "n_target": self.n_target,
            "n_nontarget": self.n_nontarget,
        }


def point_metrics(c: Counts, settings: MetricSettings = MetricSettings()) -> PointMetrics:
    """All point metrics of one count table (both classes present), from one set of sums."""
    r = Rates(c.t, c.n)
    sb, k, at_mid = eer_at_rates(r)
    thr = threshold_at(c.unique, k, at_mid)
    rocch = float(rocch_eer_at_rates(r))
    tprs, tthr = {}, {}
    for x in settings.fpr_targets:
        v, kt = tpr_at_fpr_of_rates(r, x)
        tprs[x] = float(v)
        tthr[x] = None if int(kt) < 0 else float(c.unique[int(kt)])
    dcf, kd = _min_dcf(r, settings.p_target, settings.c_miss, settings.c_fa)
    use_rocch = settings.eer_method == "rocch"
    return PointMetrics(
        eer=rocch if use_rocch else float(sb),
        eer_threshold=None if use_rocch else float(thr),
        auc=float(_auc(r)),
        tpr_at_fpr=tprs,
        min_dcf=float(dcf),
        n_target=_as_count(c.t.sum()),
        n_nontarget=_as_count(c.n.sum()),
        min_dcf_threshold=None if int(kd) < 0 else float(c.unique[int(kd)]),
        tpr_thresholds=tthr,
        eer_speechbrain=float(sb),
        eer_rocch=rocch,
    )


def compute_metrics(
    scores, labels, weights=None, *, settings: MetricSettings = MetricSettings()
) -> PointMetrics:
    """Check, sort once, and compute every point metric (DataError on bad or one-class input)."""
    return point_metrics(counts(scores, labels, weights), settings)


def _as_count(x: float):
    """Counts are ints when the weights are (the usual case), else floats."""
    x = float(x)
    return int(round(x)) if abs(x - round(x)) < 1e-9 else x
