"""The numeric core against hand-worked cases, SpeechBrain's EER/minDCF and scikit-learn."""

import importlib.util

import numpy as np
import pytest

from sparc_eval.errors import DataError
from sparc_eval.metrics import core
from sparc_eval.metrics.core import MetricSettings
from sparc_eval.metrics.panel import PANEL_KEYS
from sparc_eval.metrics.settings import BootstrapSettings, EvaluationSettings, trial_settings


def speechbrain_metric_stats():
    """SpeechBrain's metric_stats, through the project's guarded import when it exists."""
    pytest.importorskip("torch")
    if importlib.util.find_spec("sparc_eval.speechbrain_compat") is not None:
        from sparc_eval.speechbrain_compat import import_speechbrain

        return import_speechbrain("speechbrain.utils.metric_stats")
    import sys
    import types

    sys.modules.setdefault("torchaudio", types.ModuleType("torchaudio"))
    return pytest.importorskip("speechbrain.utils.metric_stats")


def trials(tgt, non):
    s = np.concatenate([np.asarray(tgt, float), np.asarray(non, float)])
    y = np.r_[np.ones(len(tgt), bool), np.zeros(len(non), bool)]
    return s, y


def random_case(rng, kind, n_max=400):
    """Score sets in the regimes that matter: continuous, LLM-like integers 1..5 (heavy ties),
    balanced integer sets (exact |FAR - FRR| ties), coarsely rounded, and near-separable."""
    nt = int(rng.integers(1, n_max // 4))
    nn = nt if kind == "balanced" else int(rng.integers(1, n_max))
    if kind in ("integers", "balanced"):
        return trials(rng.integers(1, 6, nt), rng.integers(1, 6, nn))
    if kind == "rounded":
        return trials(np.round(rng.normal(0.7, 1, nt), 1), np.round(rng.normal(0, 1, nn), 1))
    if kind == "separable":
        return trials(rng.normal(5, 1, nt), rng.normal(0, 1, nn))
    return trials(rng.normal(1, 1, nt), rng.normal(0, 1, nn))


KINDS = ("continuous", "integers", "balanced", "rounded", "separable")


# ----------------------------------------------------------------------------- hand-worked cases


def test_speechbrain_docstring_example():
    import torch

    s, y = trials([0.6, 0.7, 0.8, 0.5], [0.4, 0.3, 0.2, 0.1])
    r = core.eer(s, y)
    assert r.eer == 0.0 and r.threshold == 0.4  # first threshold with FAR = FRR = 0
    sb_eer, sb_threshold = speechbrain_metric_stats().EER(
        torch.tensor([0.6, 0.7, 0.8, 0.5]), torch.tensor([0.4, 0.3, 0.2, 0.1])
    )
    assert sb_eer == 0.0 and r.threshold == pytest.approx(sb_threshold)  # SpeechBrain's float32
    assert core.auc(s, y) == 1.0
    assert core.tpr_at_fpr(s, y) == {0.01: 1.0, 0.001: 1.0}
    assert core.min_dcf(s, y)[0] == 0.0


def test_hand_worked_ties():
    # targets 1 2 3 3, non-targets 1 1 2 3 (T = N = 4)
    # t=1: FRR 1/4, FAR 2/4 | t=2: FRR 2/4, FAR 1/4 | t=3: FRR 1, FAR 0
    s, y = trials([1, 2, 3, 3], [1, 1, 2, 3])
    r = core.eer(s, y)
    assert r.eer == pytest.approx(0.375) and r.threshold == 1.0  # first of the |d| = 0.25 tie
    # AUC: (1*0.5*2 + (2 + 0.5) + 2 * (3 + 0.5)) / 16 = 10.5 / 16
    assert core.auc(s, y) == pytest.approx(10.5 / 16)
    # TPR@FPR: accept > 3 -> (0, 0); accept > 2 -> (1/4, 1/2); accept > 1 -> (1/2, 3/4)
    assert core.tpr_at_fpr(s, y, [0.01, 0.25, 0.3, 0.5, 1.0]) == {
        0.01: 0.0,
        0.25: 0.5,
        0.3: 0.5,
        0.5: 0.75,
        1.0: 1.0,
    }
    # minDCF, p=0.01: best is "reject all" (0.01 * 1) -> normalised 1.0
    assert core.min_dcf(s, y) == (pytest.approx(1.0), 3.0)
    # p=0.5: 0.5 * (1/4 + 2/4) = 0.375 at t=1, normalised by 0.5
    assert core.min_dcf(s, y, p_target=0.5)[0] == pytest.approx(0.75)
    # ROCCH: hull (0,1) (1/4,1/2) (1/2,1/4) (1,0); the middle segment x + y = 3/4 crosses at 0.375
    assert core.eer(s, y, method="rocch").eer == pytest.approx(0.375)


def test_speechbrain_float32_tie_break():
    """A balanced, heavily tied set where the exact first minimiser of |FAR - FRR| (EER 0.375)
    is not SpeechBrain's: its float32 rates break the tie the other way (EER 11/24)."""
    import torch

    s, y = trials([1, 4, 3, 3, 2, 4, 1, 5, 5, 3, 3, 4], [4, 2, 1, 2, 1, 4, 5, 1, 1, 4, 3, 3])
    r = core.eer(s, y)
    assert r.eer == pytest.approx(11 / 24, abs=1e-12)
    sb_eer, sb_threshold = speechbrain_metric_stats().EER(
        torch.from_numpy(s[y]), torch.from_numpy(s[~y])
    )
    assert r.eer == pytest.approx(sb_eer, abs=1e-7) and r.threshold == sb_threshold


def test_single_distinct_score_and_perfect_inversion():
    s, y = trials([2, 2], [2, 2, 2])
    assert core.eer(s, y) == (0.5, 2.0)  # only threshold 2: FRR 1, FAR 0
    assert core.auc(s, y) == 0.5
    s, y = trials([0, 0.1], [1, 2])
    assert core.eer(s, y).eer == 1.0
    assert core.auc(s, y) == 0.0
    assert core.tpr_at_fpr(s, y, [0.5]) == {0.5: 0.0}


def test_weights_equal_repetition():
    rng = np.random.default_rng(3)
    s, y = random_case(rng, "integers", 200)
    w = rng.integers(0, 4, s.size)
    w[np.flatnonzero(y)[0]] = 1
    w[np.flatnonzero(~y)[0]] = 1
    rs, ry = np.repeat(s, w), np.repeat(y, w)
    a = core.compute_metrics(s, y, w)
    b = core.compute_metrics(rs, ry)
    assert a.eer == b.eer and a.eer_threshold == b.eer_threshold
    assert a.auc == pytest.approx(b.auc, abs=1e-12)
    assert a.tpr_at_fpr == b.tpr_at_fpr and a.min_dcf == pytest.approx(b.min_dcf)
    assert (a.n_target, a.n_nontarget) == (int(ry.sum()), int((~ry).sum()))


def test_metric_settings_and_keys():
    assert (
        core.fpr_key(0.01) == "0.01"
        and core.fpr_key(0.001) == "0.001"
        and core.fpr_key(1e-5) == "0.00001"
    )
    with pytest.raises(ValueError):
        MetricSettings(eer_method="linear")
    with pytest.raises(ValueError):
        MetricSettings(p_target=0)
    s, y = trials([1, 2, 3], [0, 1, 2])
    pm = core.compute_metrics(s, y, settings=MetricSettings(eer_method="rocch", fpr_targets=(0.5,)))
    assert pm.eer_threshold is None and set(pm.as_dict()["tpr_at_fpr"]) == {"0.5"}


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "bad, word", [(np.nan, "NaN"), (np.inf, "infinite"), (-np.inf, "infinite")]
)
def test_non_finite_scores_rejected(bad, word):
    s, y = trials([1, 2, bad], [0, 1])
    with pytest.raises(DataError, match=f"score 2 .*{word}"):
        core.eer(s, y)


def test_one_class_and_other_bad_input():
    with pytest.raises(DataError, match="no non-target"):
        core.auc([1.0, 2.0], [True, True])
    with pytest.raises(DataError, match="no target"):
        core.eer([1.0, 2.0], [0, 0])
    with pytest.raises(DataError, match="empty"):
        core.eer([], [])
    with pytest.raises(DataError, match="0 or 1"):
        core.eer([1.0, 2.0], [0, 2])
    with pytest.raises(DataError, match="shape"):
        core.eer([1.0, 2.0], [0, 1, 1])
    with pytest.raises(DataError, match="weight 1"):
        core.eer([1.0, 2.0], [0, 1], weights=[1.0, -1.0])
    with pytest.raises(DataError, match="no target"):  # all target weight zero is one class
        core.eer([1.0, 2.0], [0, 1], weights=[1.0, 0.0])


def test_batched_rows_with_one_class_are_nan():
    t = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    n = np.array([[1.0, 1.0, 0.0], [2.0, 1.0, 1.0]])
    out = core.metrics_from_counts(t, n)
    assert np.isfinite(out["eer"][0]) and np.isnan(out["eer"][1])
    assert np.isnan(out["auc"][1]) and np.isnan(out["min_dcf"][1])
    assert np.isnan(core.rocch_eer_from_counts(t, n)[1])


# ----------------------------------------------------------------------------- SpeechBrain


def test_eer_equals_speechbrain_on_random_data():
    torch = pytest.importorskip("torch")
    ms = speechbrain_metric_stats()
    rng = np.random.default_rng(0)
    for i in range(100):
        s, y = random_case(rng, KINDS[i % len(KINDS)], n_max=400 if i % 20 else 2000)
        sb_eer, sb_thr = ms.EER(torch.from_numpy(s[y]), torch.from_numpy(s[~y]))
        r = core.eer(s, y)
        assert r.eer == pytest.approx(sb_eer, abs=1e-7), (i, KINDS[i % len(KINDS)])
        assert r.threshold == sb_thr, (i, KINDS[i % len(KINDS)])


def test_min_dcf_equals_speechbrain_normalised():
    torch = pytest.importorskip("torch")
    ms = speechbrain_metric_stats()
    rng = np.random.default_rng(1)
    for i, (p, cm, cf) in enumerate(
        [(0.01, 1, 1), (0.05, 1, 1), (0.01, 10, 1), (0.5, 1, 1), (0.2, 1, 3)] * 4
    ):
        s, y = random_case(rng, KINDS[i % len(KINDS)], n_max=300)
        sb, _ = ms.minDCF(
            torch.from_numpy(s[y]), torch.from_numpy(s[~y]), c_miss=cm, c_fa=cf, p_target=p
        )
        ours, _ = core.min_dcf(s, y, p_target=p, c_miss=cm, c_fa=cf)
        # SpeechBrain's cost is not normalised and uses float32 rates
        assert ours == pytest.approx(sb / min(cm * p, cf * (1 - p)), abs=1e-5)


# ----------------------------------------------------------------------------- scikit-learn


def test_auc_roc_and_tpr_equal_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(2)
    for i in range(60):
        s, y = random_case(rng, KINDS[i % len(KINDS)], n_max=3000)
        w = rng.random(s.size) + 0.1 if i % 3 == 0 else None
        assert core.auc(s, y, w) == pytest.approx(
            metrics.roc_auc_score(y, s, sample_weight=w), abs=1e-12
        )
        fpr, tpr, thr = metrics.roc_curve(y, s, sample_weight=w, drop_intermediate=False)
        ofpr, otpr, othr = core.roc_curve(s, y, w)
        np.testing.assert_allclose(ofpr, fpr, atol=1e-12)
        np.testing.assert_allclose(otpr, tpr, atol=1e-12)
        for target in (0.01, 0.001, 0.05, 0.3):
            expected = tpr[fpr <= target].max()
            assert core.tpr_at_fpr(s, y, [target], w)[target] == pytest.approx(expected, abs=1e-12)


def test_det_curve_matches_roc():
    s, y = trials([1, 2, 3, 3], [1, 1, 2, 3])
    far, frr, thr = core.det_curve(s, y)
    fpr, tpr, _ = core.roc_curve(s, y)
    np.testing.assert_allclose(far, fpr)
    np.testing.assert_allclose(frr, 1 - tpr)


# ----------------------------------------------------------------------------- convex-hull EER


def brute_rocch_eer(far, frr):
    """Monotone-chain lower hull of (P_fa, P_miss) and its crossing with the diagonal."""
    pts = sorted(set(zip(np.r_[far, 1.0].tolist(), np.r_[frr, 0.0].tolist())))
    hull = []
    for p in pts:
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) <= 0:
                hull.pop()
            else:
                break
        hull.append(p)
    best = 0.0
    for (xa, ya), (xb, yb) in zip(hull[:-1], hull[1:]):
        da, db = xa - ya, xb - yb
        if da == 0:
            best = max(best, xa)
        if da * db < 0 or db == 0:
            t = da / (da - db) if da != db else 0.0
            best = max(best, xa + t * (xb - xa))
    return best


def test_rocch_eer_matches_brute_force_hull():
    rng = np.random.default_rng(4)
    for i in range(40):
        s, y = random_case(rng, KINDS[i % len(KINDS)], n_max=500)
        c = core.counts(s, y)
        frr, far = core.error_rates(c.t, c.n)
        expected = brute_rocch_eer(far, frr)
        assert core.eer(s, y, method="rocch").eer == pytest.approx(expected, abs=1e-9)


def test_thin_curve_keeps_ends_and_bounds_size():
    x = np.linspace(0, 1, 100_000)
    tx, ty = core.thin_curve(x, 1 - x, max_points=500)
    assert tx[0] == 0 and tx[-1] == 1 and tx.size <= 1100
    lx, _ = core.thin_curve(x**4, 1 - x, max_points=500, scale="logit")
    assert lx.size <= 2200


def test_evaluate_trials_keys_and_notes_in_order():
    """The parts, ``details``, ``timings_s`` and ``not_applicable`` keys of evaluate_trials, in
    order: convex-hull EER without a threshold, dropped resamples, one class."""
    from sparc_eval.metrics.results import evaluate_trials

    res = evaluate_trials(
        ["a"] * 5,
        [f"x{i}" for i in range(5)],
        [0.0, 1.0, 1.0, 2.0, 3.0],
        [0, 1, 0, 0, 1],
        settings=EvaluationSettings(
            metrics=MetricSettings(eer_method="rocch"),
            bootstrap=BootstrapSettings(n_boot=100, unit="trial", stratify=False),
        ),
    )
    assert list(res) == ["overall", "per_speaker", "segments", "not_applicable"]
    assert list(res["overall"]) == [
        "eer",
        "eer_threshold",
        "auc",
        "tpr_at_fpr",
        "min_dcf",
        "n_target",
        "n_nontarget",
        "ci95",
        "small_evaluation",
        *PANEL_KEYS,
        "mean_speaker_eer",
        "worst_speakers",
    ]
    assert (
        res["overall"]["eer_threshold"] is None
        and res["per_speaker"] is None
        and res["segments"] == {}
    )
    assert list(res["not_applicable"]) == [
        "overall.act_cllr",  # cosine-like scores: act Cllr only as "scores taken as LLRs"
        "overall.linkability",  # 2 targets: no D<->sys bin
        "overall.tpr_at_fpr.0.01",  # 3 non-targets: too few for a TPR at 1% or 0.1% FPR
        "overall.tpr_at_fpr.0.001",
        "overall.eer_threshold",
        "overall.ci95.dropped",
        "overall.linkability_topn",  # one enrollment model
        "per_speaker",
        "segments",
    ]
    assert list(res.details) == [
        "settings",
        "n_boot",
        "bootstrap_unit",
        "seed",
        "level",
        "accent_grouping",
        "n_valid_resamples",
        "bootstrap",
        "eer_speechbrain",
        "eer_rocch",
        "min_dcf_threshold",
        "tpr_thresholds",
    ]
    assert list(res.timings_s) == ["metrics", "bootstrap", "per_speaker", "segments"]
    assert list(res.curves) == ["fpr", "tpr", "det_far", "det_frr", "eer"]

    one = evaluate_trials(
        ["a"] * 3,
        ["x", "y", "z"],
        [0.1, 0.2, 0.3],
        [0, 0, 0],
        settings=trial_settings(n_boot=10, bootstrap_unit="speaker"),
    )  # one class: no bootstrap, so no utt2spk needed
    assert (
        one["not_applicable"]["overall"]
        == "only one class: no target trials, so no metric can be computed"
    )
    assert one["overall"]["n_nontarget"] == 3 and one["overall"]["ci95"] is None
    assert one.curves is None and list(one.timings_s) == ["per_speaker", "segments"]
    assert list(one.details) == [
        "settings",
        "n_boot",
        "bootstrap_unit",
        "seed",
        "level",
        "accent_grouping",
    ]
