"""Vectorised bootstrap: equal to a plain per-resample loop, seeded, chunk-independent."""

import numpy as np
import pytest

from sparc_eval.errors import DataError
from sparc_eval.metrics import bootstrap as B
from sparc_eval.metrics import core
from sparc_eval.metrics.core import MetricSettings
from sparc_eval.metrics.settings import BootstrapSettings


def make(n=300, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.2
    y[:2] = [True, False]
    s = rng.normal(size=n) + 1.2 * y
    if ties:
        s = np.clip(np.round(s + 3), 1, 5)
    return s, y


def flat(result_samples, i):
    return {
        "eer": result_samples["eer"][i],
        "auc": result_samples["auc"][i],
        "min_dcf": result_samples["min_dcf"][i],
        **{f"tpr{k}": v[i] for k, v in result_samples["tpr_at_fpr"].items()},
    }


def loop_metrics(s, y, w=None, settings=MetricSettings()):
    pm = core.compute_metrics(s, y, w, settings=settings)
    return {
        "eer": pm.eer,
        "auc": pm.auc,
        "min_dcf": pm.min_dcf,
        **{f"tpr{k}": v for k, v in pm.tpr_at_fpr.items()},
    }


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("stratify", [True, False])
def test_trial_bootstrap_equals_loop_over_resamples(ties, stratify):
    s, y = make(ties=ties)
    res = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=25, seed=7, stratify=stratify),
    )
    plan = B._Plan(y, "trial", stratify, None, 7)
    draws = plan.trial_draws(range(25))
    for i, d in enumerate(draws):  # the plain way: materialise each resample and recompute
        if stratify:
            assert y[d].sum() == y.sum()  # class counts kept
        expected = loop_metrics(s[d], y[d])
        got = flat(res.samples, i)
        for k in expected:
            assert got[k] == pytest.approx(expected[k], abs=1e-12), (i, k)


def test_speaker_bootstrap_equals_weighted_loop():
    s, y = make(400, seed=1)
    groups = np.random.default_rng(1).integers(0, 12, s.size).astype(str)
    res = B.bootstrap_metrics(
        s, y, boot=BootstrapSettings(n_boot=20, seed=3, unit="speaker"), groups=groups
    )
    plan = B._Plan(y, "speaker", True, groups, 3)
    mult = plan.speaker_multiplicities(range(20))
    for i in range(20):
        w = mult[i][plan.group_index].astype(float)
        if w[y].sum() == 0 or w[~y].sum() == 0:
            assert np.isnan(res.samples["eer"][i])
            continue
        expected = loop_metrics(s, y, w)
        got = flat(res.samples, i)
        for k in expected:
            assert got[k] == pytest.approx(expected[k], abs=1e-12), (i, k)


def test_seeded_and_chunk_independent():
    s, y = make(500, seed=2)
    a = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=40, seed=11, chunk_elements=500),
    )  # one resample per chunk
    b = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=40, seed=11, chunk_elements=10**7),
    )  # all at once
    c = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=40, seed=12),
    )
    np.testing.assert_array_equal(a.samples["eer"], b.samples["eer"])
    np.testing.assert_array_equal(a.samples["tpr_at_fpr"][0.01], b.samples["tpr_at_fpr"][0.01])
    assert not np.array_equal(a.samples["eer"], c.samples["eer"])
    assert a.ci() == b.ci()


def test_ci_brackets_point_estimate_and_schema():
    s, y = make(2000, seed=4)
    res = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=300, seed=0),
    )
    ci = res.ci()
    pm = core.compute_metrics(s, y)
    assert ci["eer"][0] <= pm.eer <= ci["eer"][1]
    assert ci["auc"][0] <= pm.auc <= ci["auc"][1]
    assert set(ci) == {"eer", "auc", "tpr_at_fpr", "min_dcf"}
    assert set(ci["tpr_at_fpr"]) == {0.01, 0.001}
    assert res.n_valid == 300


def test_rocch_bootstrap_runs_batched():
    s, y = make(300, seed=5, ties=True)
    settings = MetricSettings(eer_method="rocch")
    res = B.bootstrap_metrics(
        s, y, boot=BootstrapSettings(unit="trial", n_boot=10, seed=0), settings=settings
    )
    draws = B._Plan(y, "trial", True, None, 0).trial_draws(range(10))
    for i, d in enumerate(draws):
        assert res.samples["eer"][i] == pytest.approx(
            core.eer(s[d], y[d], method="rocch").eer, abs=1e-9
        )


def test_one_class_resamples_are_dropped():
    # 3 speakers, only one of them with target trials: a third of the draws miss it entirely
    s = np.array([3.0, 2.5, 1.0, 0.5, 0.2, 0.1, 1.5, 0.7])
    y = np.array([1, 1, 0, 0, 0, 0, 0, 0], bool)
    g = np.array(["a", "a", "a", "b", "b", "c", "c", "c"])
    res = B.bootstrap_metrics(
        s, y, boot=BootstrapSettings(n_boot=200, seed=0, unit="speaker"), groups=g
    )
    assert 0 < res.n_valid < 200
    assert np.isnan(res.samples["eer"]).sum() == 200 - res.n_valid
    assert all(v is not None for v in res.ci()["eer"])


def test_speaker_unit_needs_groups():
    s, y = make(50)
    with pytest.raises(DataError, match="speaker"):
        B.bootstrap_metrics(
            s,
            y,
            boot=BootstrapSettings(n_boot=5, unit="speaker"),
        )
    with pytest.raises(ValueError):
        B.bootstrap_metrics(
            s,
            y,
            boot=BootstrapSettings(n_boot=5, unit="episode"),
        )


def test_percentile_ci():
    assert B.percentile_ci(np.arange(101.0)) == pytest.approx([2.5, 97.5])
    assert B.percentile_ci([np.nan, np.nan]) == [None, None]
    assert B.percentile_ci([1.0, np.nan, 1.0]) == [1.0, 1.0]


def test_paired_bootstrap():
    s, y = make(1500, seed=6)
    same = B.paired_bootstrap(
        s,
        s.copy(),
        y,
        boot=BootstrapSettings(unit="trial", n_boot=100, seed=0),
    )
    assert same.diff["eer"] == 0 and same.ci95["eer"] == [0.0, 0.0]
    assert same.ci95["tpr_at_fpr"][0.01] == [0.0, 0.0]
    rng = np.random.default_rng(0)
    worse = s + rng.normal(0, 1.5, s.size)  # noisier system: higher EER, lower AUC
    r = B.paired_bootstrap(
        s,
        worse,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=200, seed=0),
    )
    assert r.diff["eer"] > 0 and r.ci95["eer"][0] > 0 and r.p_value["eer"] < 0.05
    assert r.diff["auc"] < 0 and r.ci95["auc"][1] < 0
    assert r.a["eer"] == pytest.approx(core.eer(s, y).eer)
    assert r.b["eer"] == pytest.approx(core.eer(worse, y).eer)
    assert set(r.as_dict()) >= {"a", "b", "diff", "ci95", "p_value"}
    # the paired CI of the difference is narrower than the two unpaired CIs side by side
    ua = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=200, seed=0),
    ).ci()["eer"]
    ub = B.bootstrap_metrics(
        worse,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=200, seed=1),
    ).ci()["eer"]
    assert (r.ci95["eer"][1] - r.ci95["eer"][0]) < (ua[1] - ua[0]) + (ub[1] - ub[0])
    with pytest.raises(DataError):
        B.paired_bootstrap(s, s[:-1], y, boot=BootstrapSettings(unit="trial", n_boot=5))


def test_small_inputs_keep_the_exact_draws():
    """The numbers pinned above are the exact method's: "auto" keeps it up to 20,000 trials."""
    s, y = make(2000, seed=9)
    res = B.bootstrap_metrics(s, y, boot=BootstrapSettings(unit="trial", n_boot=5))
    assert res.method == "exact" and res.bounds is None and res.ci_error_bound() is None
    assert res.info() == {
        "method": "exact",
        "resamples": 5,
        "valid_resamples": 5,
        "unit": "trial",
        "seed": 0,
    }


# --- the two-way speaker bootstrap (issue 60) ----------------------------------------------------


def three_speakers():
    """Speakers a, b, c, each enrolled and each tested with one utterance: every utterance against
    every enrolled speaker, 9 trials of which 3 target (enroll, test speaker, score, label)."""
    rows = [
        ("a", "a", 2.0, True),
        ("a", "b", 0.3, False),
        ("a", "c", 1.1, False),
        ("b", "a", 0.2, False),
        ("b", "b", 1.9, True),
        ("b", "c", 0.5, False),
        ("c", "a", 1.5, False),
        ("c", "b", 0.1, False),
        ("c", "c", 0.9, True),
    ]
    enroll, test, score, label = (np.array(x) for x in zip(*rows))
    return enroll, test, score.astype(float), label.astype(bool)


def test_two_way_weights_by_hand():
    """a drawn twice, b never, c once: a trial between enrolled i and tested j counts m_i m_j
    times, a target of speaker i m_i^2 times (row i and column i are each copied m_i times)."""
    enroll, test, score, label = three_speakers()
    plan = B._Plan(label, "two_way", True, test, 0, enroll)
    assert plan.sides == "one draw" and plan.n_groups == 3  # one draw over the union {a, b, c}
    weights = plan.trial_weights(np.array([[2, 0, 1]]))[0]
    #                  a-a  a-b  a-c  b-a  b-b  b-c  c-a  c-b  c-c
    assert weights.tolist() == [4, 0, 2, 0, 0, 0, 2, 0, 1]
    # an attribute task's target pairs two people (same sex, say): both sides count, m_a m_c
    label[2] = True
    attribute = B._Plan(label, "two_way", True, test, 0, enroll)
    assert attribute.trial_weights(np.array([[2, 0, 1]]))[0][2] == 2 * 1


def test_two_way_resample_is_the_weighted_trials_of_its_draw():
    enroll, test, score, label = three_speakers()
    res = B.bootstrap_metrics(
        score,
        label,
        boot=BootstrapSettings(n_boot=20, seed=5, unit="two_way"),
        groups=test,
        enroll_groups=enroll,
    )
    assert res.unit == "two_way" and res.info()["sides"] == "one draw"
    plan = B._Plan(label, "two_way", True, test, 5, enroll)
    for i in range(20):
        drawn = np.random.default_rng([5, i]).integers(0, 3, size=3)  # resample i's draw
        m = np.bincount(drawn, minlength=3)
        weights = plan.trial_weights(m[None, :])[0]
        assert np.array_equal(plan.speaker_multiplicities([i])[0], m)
        keep = weights > 0
        if not (label[keep].any() and (~label[keep]).any()):
            assert np.isnan(res.samples["eer"][i])  # one class left: dropped
            continue
        expected = core.eer(
            np.repeat(score, weights.astype(int)), np.repeat(label, weights.astype(int))
        )
        assert res.samples["eer"][i] == pytest.approx(expected.eer)


def test_two_way_draws_each_side_on_its_own_when_no_speaker_is_on_both():
    enroll = np.array(["x", "x", "y", "y", "x", "y"])
    test = np.array(["a", "b", "a", "b", "c", "c"])
    label = np.zeros(6, bool)
    plan = B._Plan(label, "two_way", True, test, 0, enroll)
    assert plan.sides == "independent draws" and plan.side_sizes == [3, 2]
    m = plan.speaker_multiplicities([0])[0]
    assert m[:3].sum() == 3 and m[3:].sum() == 2  # 3 tested drawn among a-c, 2 enrolled among x-y
    # tested a, b, c are 0, 1, 2; enrolled x, y come after them: 3, 4
    assert plan.trial_weights(np.array([[1, 2, 0, 3, 0]]))[0].tolist() == [3, 6, 0, 0, 0, 0]


def test_a_paired_comparison_draws_once_for_both_systems():
    """b ranks the trials as a does: with one set of draws every resample's EERs are equal, so the
    difference is exactly 0 in each; any other draw for b would move it."""
    rng = np.random.default_rng(2)
    spk = [f"s{i}" for i in range(12)]
    enroll = np.repeat(spk, 12 * 3)
    test = np.tile(np.repeat(spk, 3), 12)
    label = enroll == test
    score = rng.normal(size=label.size) + 2 * label
    res = B.paired_bootstrap(
        score,
        2 * score + 1,
        label,
        boot=BootstrapSettings(n_boot=100, seed=0, unit="two_way"),
        groups=test,
        enroll_groups=enroll,
    )
    assert res.unit == "two_way" and res.ci95["eer"] == [0.0, 0.0] and res.p_value["eer"] == 1.0
    both = B.speaker_paired_bootstrap(
        score,
        label,
        test,
        2 * score + 1,
        label,
        test,
        boot=BootstrapSettings(n_boot=100, seed=0),
        enroll_groups_a=enroll,
        enroll_groups_b=enroll,
    )  # different trial lists of the same speakers: the same draws too
    assert both.unit == "two_way" and both.ci95["eer"] == [0.0, 0.0]
    alone = [
        B.bootstrap_metrics(
            s,
            label,
            boot=BootstrapSettings(n_boot=100, seed=k, unit="two_way"),
            groups=test,
            enroll_groups=enroll,
        ).samples["eer"]
        for k, s in enumerate((score, 2 * score + 1))
    ]
    assert np.any(alone[0] != alone[1])  # independent draws would not cancel


def test_two_way_is_wider_than_holding_the_enrolled_side_fixed():
    """Enrollment-side effects (each enrolled speaker's non-target scores shifted): resampling
    the enrolled side too widens the EER interval."""
    rng = np.random.default_rng(0)
    spk = np.arange(24).astype(str)
    enroll = np.repeat(spk, 24 * 10)
    test = np.tile(np.repeat(spk, 10), 24)
    label = enroll == test
    shift = dict(zip(spk, rng.normal(0, 0.8, 24)))
    score = rng.normal(size=label.size) + np.where(label, 2.5, np.array([shift[e] for e in enroll]))
    width = {}
    for unit in ("two_way", "speaker"):
        ci = B.bootstrap_metrics(
            score,
            label,
            boot=BootstrapSettings(n_boot=300, seed=0, unit=unit),
            groups=test,
            enroll_groups=enroll,
        ).ci()["eer"]
        width[unit] = ci[1] - ci[0]
    assert width["two_way"] > 1.3 * width["speaker"]


def test_two_way_needs_the_enrolled_speakers():
    s, y = make(50)
    g = np.arange(50) % 5
    with pytest.raises(DataError, match="enrolled speaker"):
        B.bootstrap_metrics(s, y, boot=BootstrapSettings(n_boot=5, unit="two_way"), groups=g)
