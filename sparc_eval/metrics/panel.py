"""The metric panel beyond EER, added to every ``overall`` block (:doc:`/definitions`).

- min Cllr, actual Cllr and ZEBRA (:mod:`sparc_eval.metrics.calibration`); actual Cllr is
  reported as ``act_cllr`` only for scores declared log-likelihood ratios (``llr=True``: PLDA
  back-ends, SpAnE's ``llrs.npy``), otherwise as ``act_cllr_scores_as_llrs`` ("act Cllr, scores
  taken as LLRs", as VoicePrivacy 2022 printed it for every system), never passed off as a
  calibrated system's cost;
- linkability D<->sys, its VoicePrivacy form and top-N' identification
  (:mod:`sparc_eval.metrics.linkability`);
- the low-FPR rule: TPR at an FPR x needs at least 10 / x non-target trials, else it is null with
  the reason; ``fpr_attained`` gives the FPR each reported TPR actually sits at;
- the mean of per-speaker EERs clipped at 50% ("You Are What You Say", a VoicePrivacy attacker
  challenge entry), with a CI over speakers.

CIs of min Cllr, D_ECE and D<->sys come from the same resampled count tables as the EER's, merged
to at most :data:`PANEL_CI_COLUMNS` consecutive score columns (PAV per resample stays cheap; the
point estimates never merge). ZEBRA's worst case has no CI: it is a maximum whose cap moves with
every resample.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import calibration, linkability
from .breakdown import per_speaker_eer
from .core import Counts, fpr_key, tpr_at_fpr_from_counts

#: TPR at an FPR x is reported only with at least this many times 1 / x non-target trials.
MIN_NONTARGETS_PER_FPR = 10
#: Resampled count tables are merged to at most this many score columns for the panel's CIs.
PANEL_CI_COLUMNS = 256
#: How many most identifiable speakers to pick, and the target trials each needs per half.
WORST_K = 5
WORST_FLOOR = 5
#: The N' of top-N' linkability; "all" is every enrollment speaker.
TOPN = (10, "all")


PANEL_KEYS = (
    "min_cllr",
    "act_cllr",
    "act_cllr_scores_as_llrs",
    "dece",
    "zebra_worst_case",
    "linkability",
    "linkability_vpc",
    "fpr_attained",
    "linkability_topn",
)


def empty_panel() -> dict:
    """The panel's keys, all null (one-class trials: no metric can be computed)."""
    return dict.fromkeys(PANEL_KEYS)


def panel_point(c: Counts, llr, na: dict) -> dict:
    """The panel's point values of one two-class count table; reasons go into ``na``."""
    worst = calibration.worst_case(c.t, c.n)
    pav = calibration.pav_llrs(c.t, c.n)
    out = {
        "min_cllr": calibration.min_cllr(c.t, c.n, pav),
        "act_cllr": None,
        "act_cllr_scores_as_llrs": None,
        "dece": calibration.dece(c.t, c.n, pav),
        "zebra_worst_case": worst._asdict(),
        "linkability": linkability.linkability(c.unique, c.t, c.n),
        "linkability_vpc": linkability.linkability_vpc(c.unique, c.t, c.n),
    }
    why = calibration.not_llrs_reason(c.unique) if llr else None
    if why:
        warnings.warn(f"scores declared log-likelihood ratios, but {why}", stacklevel=3)
        na["overall.act_cllr.llr"] = f"declared log-likelihood ratios, but {why}"
    act = calibration.act_cllr(c.unique, c.t, c.n)
    out["act_cllr" if llr else "act_cllr_scores_as_llrs"] = act if np.isfinite(act) else None
    if not np.isfinite(act):
        na["overall.act_cllr.infinite"] = "a target scores -inf or a non-target +inf: infinite cost"
    if not llr:
        na["overall.act_cllr"] = "the scores are not declared log-likelihood ratios (llr: false)"
    if out["linkability"] is None:
        na["overall.linkability"] = (
            "every trial has the same score: no score bins for D<->sys"
            if c.unique.size < 2
            else f"fewer than {linkability.MIN_MATED} target trials: fewer than two score bins "
            "for D<->sys (one bin makes it 0 whatever the scores)"
        )
    return out


def low_fpr(overall: dict, c: Counts, fpr_targets, na: dict) -> dict:
    """Null each TPR at an FPR that too few non-targets support; return the FPR each TPR
    actually sits at (``fpr_attained``)."""
    attained = {}
    big_n = c.n.sum()
    above = big_n - np.cumsum(c.n)  # non-targets above each distinct score
    for x in fpr_targets:
        key = fpr_key(x)
        _, k = tpr_at_fpr_from_counts(c.t, c.n, x)
        attained[key] = 1.0 if int(k) < 0 else float(above[int(k)] / big_n)
        need = int(np.ceil(MIN_NONTARGETS_PER_FPR / x - 1e-9))
        if big_n < need:
            overall["tpr_at_fpr"][key] = None
            na[f"overall.tpr_at_fpr.{key}"] = (
                f"{int(big_n)} non-target trials: TPR at {x:g} FPR needs at least {need} "
                f"(10 / FPR), else it rests on fewer than 10 non-target scores"
            )
    return attained


def merge_starts(weight, max_columns: int = PANEL_CI_COLUMNS) -> np.ndarray:
    """Start indices that merge consecutive columns of the given trial ``weight`` into at most
    ``max_columns`` columns of about equal weight (every column when there are few)."""
    if weight.size <= max_columns:
        return np.arange(weight.size)
    cell = np.minimum(
        (np.cumsum(weight) / weight.sum() * max_columns).astype(np.int64), max_columns - 1
    )
    return np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])


def panel_ci_hook(unique, t_full, n_full):
    """``extra`` for :func:`~sparc_eval.metrics.bootstrap.bootstrap_metrics` over the sorted
    trials' distinct scores ``unique`` with the data's counts ``t_full``, ``n_full``: min Cllr,
    D_ECE and D<->sys of each resampled table (its columns merged by the data's weight, so every
    chunk of resamples merges alike), D<->sys on the data's bins."""
    big_t = float(np.sum(t_full))
    ok = big_t >= linkability.MIN_MATED and len(unique) >= 2  # as the point value's rule
    edges = linkability.bin_edges(unique, big_t) if ok else None

    def extra(t, n, first):
        starts = merge_starts(np.add.reduceat(np.asarray(t_full) + n_full, first))
        tm, nm = np.add.reduceat(t, starts, axis=-1), np.add.reduceat(n, starts, axis=-1)
        valid = (tm.sum(-1) > 0) & (nm.sum(-1) > 0)
        llr = np.where(valid[:, None], calibration.pav_llrs_rows(tm, nm), 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = {
                "min_cllr": calibration.cllr_bits(llr, tm, nm),
                "dece": calibration.dece_bits(llr, tm, nm),
                "linkability": _linkability_rows(edges, unique[first][starts], tm, nm),
            }
        return {k: np.where(valid, v, np.nan) for k, v in out.items()}

    return extra


def _linkability_rows(edges, scores, t, n):
    """D<->sys of each row of count tables on fixed bins (NaN without bins)."""
    if edges is None:
        return np.full(t.shape[0], np.nan)
    k = linkability.bin_index(scores, edges)
    onehot = np.zeros((k.size, edges.size - 1))
    onehot[np.arange(k.size), k] = 1.0
    mated = (t @ onehot) / t.sum(-1, keepdims=True)
    non_mated = (n @ onehot) / n.sum(-1, keepdims=True)
    return (linkability.local_linkability(mated, non_mated) * mated).sum(-1)


def _factorize(ids, *, ordered: bool = False):
    """``(distinct, codes)`` of an id array. Unless ``ordered``, strings go through their hashes
    (2.5x faster than sorting strings at 10^6 ids; the order then changes from process to process,
    so only order-free uses take it); two ids sharing a hash would only make the matrix look
    incomplete (a doubled pair), never change a value."""
    ids = np.asarray(ids)
    if ordered:
        return np.unique(ids.astype(str), return_inverse=True)
    if ids.dtype.kind in "OUS":
        ids = np.fromiter(map(hash, ids.tolist()), dtype=np.int64, count=ids.size)
    return np.unique(ids, return_inverse=True)


def topn_linkability(enroll_ids, test_ids, labels, scores, na: dict):
    """``{"10": p, "all": p}`` when the trials form a full enrollment-by-test matrix with one
    target row per test column, else None with the reason in ``na``."""
    rows, e = _factorize(enroll_ids)
    cols, t = _factorize(test_ids)
    why = None
    if rows.size * cols.size != len(e) or np.bincount(e * cols.size + t).max() != 1:
        why = "the trials are not a full enrollment-by-test score matrix"
    elif rows.size < 2:
        why = "one enrollment model: nothing to identify among"
    else:
        targets = np.bincount(t, weights=np.asarray(labels, dtype=np.float64), minlength=cols.size)
        if not np.all(targets == 1):
            why = "a test recording has no target enrollment model, or several"
    if why:
        na["overall.linkability_topn"] = why
        return None
    matrix = np.empty((rows.size, cols.size))
    matrix[e, t] = scores
    true_rows = np.empty(cols.size, dtype=np.int64)
    is_target = np.asarray(labels, dtype=bool)
    true_rows[t[is_target]] = e[is_target]
    return {
        str(k): linkability.linkability_topn(matrix, true_rows, rows.size if k == "all" else int(k))
        for k in TOPN
    }


def mean_speaker_eer(per_speaker, n_boot: int, seed: int, level: float = 0.95):
    """``(mean, ci)``: the mean over speakers of per-speaker EERs clipped at 0.5, with a
    percentile CI over resampled speakers; ``(None, None)`` without per-speaker EERs."""
    values = np.array(
        [min(v["eer"], 0.5) for v in (per_speaker or {}).values() if v.get("eer") is not None]
    )
    if values.size == 0:
        return None, None
    mean = float(values.mean())
    if not n_boot or values.size < 2:
        return mean, None
    rng = np.random.default_rng([seed, 7])
    draws = rng.multinomial(values.size, np.full(values.size, 1 / values.size), size=n_boot)
    means = draws @ values / values.size
    tail = (1 - level) / 2 * 100
    return mean, [float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))]


def worst_speakers(st, test_spk, test_ids, weights, seed: int, na: dict, method="speechbrain"):
    """The most identifiable speakers (lowest EER) without regression to the mean: each speaker's
    test recordings are split in two halves (seeded); the ``WORST_K`` lowest-EER speakers are
    picked on one half and measured on the other, both ways, averaged (``held_out_eer``), beside
    the same speakers' EER on the half that picked them (``in_sample_eer``, biased low). Only
    speakers with at least ``WORST_FLOOR`` target trials in each half are eligible."""
    ids, codes = _factorize(test_ids, ordered=True)  # the seeded halves must not move between runs
    side = np.random.default_rng([seed, 11]).random(ids.size) < 0.5
    base = np.ones(codes.size) if weights is None else np.asarray(weights, dtype=np.float64)
    halves = [
        per_speaker_eer(st, test_spk, weights=base * (side[codes] == h), method=method)[0]
        for h in (True, False)
    ]
    eligible = [
        spk
        for spk in halves[0]
        if all(
            half[spk]["eer"] is not None and half[spk]["n_target"] >= WORST_FLOOR for half in halves
        )
    ]
    if len(eligible) < 2 * WORST_K:
        na["overall.worst_speakers"] = (
            f"{len(eligible)} speakers have {WORST_FLOOR}+ target trials in each half of their test "
            f"recordings; picking {WORST_K} on one half and measuring them on the other needs "
            f"{2 * WORST_K}"
        )
        return None
    picked, held, in_sample = [], [], []
    for pick, measure in ((halves[0], halves[1]), (halves[1], halves[0])):
        worst = sorted(eligible, key=lambda spk: (pick[spk]["eer"], spk))[:WORST_K]
        picked.append(worst)
        in_sample.append(np.mean([pick[spk]["eer"] for spk in worst]))
        held.append(np.mean([measure[spk]["eer"] for spk in worst]))
    return {
        "k": WORST_K,
        "floor": WORST_FLOOR,
        "n_eligible": len(eligible),
        "in_sample_eer": float(np.mean(in_sample)),
        "held_out_eer": float(np.mean(held)),
        "speakers": picked,
    }
