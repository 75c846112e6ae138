"""The binned bootstrap (count tables over score bins) against the exact one, its error bound,
and the columnar score-file reader that feeds it at 10^6 trials."""

import json
from dataclasses import replace

import numpy as np
import pytest

from sparc_eval.errors import DataError
from sparc_eval.metrics import bootstrap as B
from sparc_eval.metrics import core, evaluate_trials, read_scores, write_report
from sparc_eval.metrics.core import MetricSettings
from sparc_eval.metrics.scores import _decode_lines, _fast_scores, parse_scores
from sparc_eval.metrics.settings import BootstrapSettings, trial_settings


def make(n, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.2
    y[:2] = [True, False]
    s = rng.normal(size=n) + 1.2 * y
    if ties:  # a few heavy ties among continuous scores
        s[rng.random(n) < 0.3] = 0.5
        s = np.round(s, 2)
    return s, y


def flat(values, i=slice(None)):
    out = {k: np.asarray(values[k])[i] for k in ("eer", "auc", "min_dcf")}
    out.update({f"tpr{x}": np.asarray(v)[i] for x, v in values["tpr_at_fpr"].items()})
    return out


def coupled(s, y, draws_or_weights, binning, settings, weights=False):
    """Exact metrics of trial-level resamples and the binned metrics of the same resamples'
    aggregated count tables (the coupling of the module docstring's bound); trial-level draws
    use the AUC given the table (with its probabilistic bound), weights the ties-as-halves one."""
    st = core.sort_trials(s, y)
    c = core.counts(s, y)
    order = None if weights else binning.order(c.t, c.n)
    if weights:
        t, n = core.group_counts(st, draws_or_weights)
    else:
        m = st.n_groups
        rows = np.arange(len(draws_or_weights))[:, None] * 2 * m
        table = np.bincount(
            (st.code[draws_or_weights] + rows).ravel(), minlength=len(draws_or_weights) * 2 * m
        )
        table = table.reshape(-1, m, 2)
        t, n = table[..., 1], table[..., 0]
    exact = core.metrics_from_counts(t, n, settings)
    return exact, B.binned_metrics(
        binning.table(t), binning.table(n), binning.mixed, settings, order
    )


def assert_within(exact, binned):
    values, below, above = (flat(x) for x in binned)
    ex = flat(exact)
    for k in ex:
        ok = np.isfinite(ex[k])
        assert np.all(ex[k][ok] >= values[k][ok] - below[k][ok] - 1e-12), k
        assert np.all(ex[k][ok] <= values[k][ok] + above[k][ok] + 1e-12), k


# ----------------------------------------------------------------------------- bins


def test_bins_exact_when_few_distinct_scores():
    s, y = make(500, ties=True)
    c = core.counts(s, y)
    b = B.score_bins(c.t, c.n, max_bins=4096)
    assert b.exact and b.n_bins == c.t.size
    np.testing.assert_array_equal(b.table(c.t), c.t)


@pytest.mark.parametrize("ties", [False, True])
def test_bins_rule(ties):
    s, y = make(20000, seed=1, ties=ties)
    c = core.counts(s, y)
    b = B.score_bins(c.t, c.n, max_bins=256)
    assert 100 < b.n_bins <= 256 and not b.exact
    assert np.all(np.diff(b.of_group) >= 0) and b.of_group[0] == 0  # consecutive distinct scores
    for w in (c.t, c.n):
        share = b.table(w) / w.sum()
        assert share[b.mixed].max() < 4.5 / 256  # a mixed bin: < 2/k of each class, k about B/2
    if ties:  # the heavy tie (30% of the trials) is a bin of its own: no order lost there
        big = np.argmax(c.t + c.n)
        assert not b.mixed[b.of_group[big]]


def test_focus_windows_get_finer_bins():
    s, y = make(50000, seed=2)
    c = core.counts(s, y)
    focus = B.focus_windows(c.t, c.n)
    eer_thr = core.eer(s, y).threshold
    assert focus[np.searchsorted(c.unique, eer_thr)] and 0 < focus.mean() < 0.5
    b = B.score_bins(c.t, c.n, 512, focus)
    bins_in_focus = np.unique(b.of_group[focus]).size
    assert bins_in_focus / focus.sum() > 2 * b.n_bins / focus.size  # denser there


def test_order_lost_in_each_bin():
    s, y = make(400, seed=12, ties=True)
    c = core.counts(s, y)
    b = B.score_bins(c.t, c.n, 16)
    bin_of = b.of_group[np.searchsorted(c.unique, s)]
    for k in range(b.n_bins):
        ts, ns = s[y & (bin_of == k)], s[~y & (bin_of == k)]
        want = (
            ((ts[:, None] > ns[None, :]) + 0.5 * (ts[:, None] == ns[None, :])).mean()
            if ts.size and ns.size
            else 0.5
        )
        assert b.order(c.t, c.n)[k] == pytest.approx(want, abs=1e-12)


def test_tree_multinomial():
    w = np.array([5.0, 0.0, 1.0, 3.0, 0.0, 11.0, 2.0])
    draws = B._Tree(w).draw(np.random.default_rng(0), 1000, 20000)
    assert draws.shape == (20000, 7) and np.all(draws.sum(axis=1) == 1000)
    assert np.all(draws[:, [1, 4]] == 0)
    p = w / w.sum()
    np.testing.assert_allclose(draws.mean(axis=0), 1000 * p, rtol=0.01, atol=0.05)
    np.testing.assert_allclose(draws.var(axis=0), 1000 * p * (1 - p), rtol=0.05, atol=0.05)
    cov = np.cov(draws[:, 0], draws[:, 5])[0, 1]
    assert cov == pytest.approx(-1000 * p[0] * p[5], rel=0.08)


# ----------------------------------------------------------------------------- the error bound


@pytest.mark.parametrize(
    "settings",
    [
        MetricSettings(),
        MetricSettings(eer_method="rocch"),
        MetricSettings(fpr_targets=(0.05, 0.2), p_target=0.3, c_fa=2.0),
    ],
)
@pytest.mark.parametrize("ties", [False, True])
def test_bound_holds_for_every_resample_and_ci_endpoint(settings, ties):
    """Coupled: each exact trial-level replicate lies within its binned replicate's bounds, so
    the exact CI endpoints lie within ci_error_bound of the binned ones."""
    s, y = make(3000, seed=3, ties=ties)
    c = core.counts(s, y)
    binning = B.score_bins(c.t, c.n, 64, B.focus_windows(c.t, c.n, settings))  # heavily mixed
    assert not binning.exact
    draws = B._Plan(y, "trial", True, None, 5).trial_draws(range(150))
    exact, binned = coupled(s, y, draws, binning, settings)
    assert_within(exact, binned)
    res = B.BootstrapResult(
        binned[0],
        150,
        150,
        "trial",
        5,
        method="binned",
        bins=binning.n_bins,
        exact_bins=False,
        bounds=binned[1:],
    )
    bound, got = res.ci_error_bound(), res.ci()
    want = B.BootstrapResult(exact, 150, 150, "trial", 5).ci()
    for name in ("eer", "auc", "min_dcf"):
        assert np.max(np.abs(np.subtract(got[name], want[name]))) <= bound[name] + 1e-12, name
    for x in settings.fpr_targets:
        gap = np.max(np.abs(np.subtract(got["tpr_at_fpr"][x], want["tpr_at_fpr"][x])))
        assert gap <= bound["tpr_at_fpr"][x] + 1e-12
    assert 0 < bound["eer"] < 0.05


def test_bound_holds_unstratified_and_speaker_weighted():
    s, y = make(2500, seed=4)
    c = core.counts(s, y)
    binning = B.score_bins(c.t, c.n, 48)
    draws = B._Plan(y, "trial", False, None, 1).trial_draws(range(60))
    assert_within(*coupled(s, y, draws, binning, MetricSettings()))
    groups = np.random.default_rng(4).integers(0, 30, s.size)
    plan = B._Plan(y, "speaker", True, groups, 2)
    weights = plan.speaker_multiplicities(range(60))[:, plan.group_index].astype(float)
    assert_within(*coupled(s, y, weights, binning, MetricSettings(), weights=True))


def test_auc_given_the_table_beats_ties_as_halves():
    s, y = make(3000, seed=13)
    c = core.counts(s, y)
    binning = B.score_bins(c.t, c.n, 16)  # coarse: much order lost in each bin
    draws = B._Plan(y, "trial", True, None, 2).trial_draws(range(40))
    exact, (given_table, _, bound) = coupled(s, y, draws, binning, MetricSettings())
    weights = np.stack([np.bincount(d, minlength=s.size) for d in draws]).astype(
        float
    )  # the same resamples
    _, (halves, _, half_bound) = coupled(s, y, weights, binning, MetricSettings(), weights=True)
    err_given, err_halves = (
        np.abs(given_table["auc"] - exact["auc"]),
        np.abs(halves["auc"] - exact["auc"]),
    )
    assert np.all(err_given <= bound["auc"]) and np.all(err_halves <= half_bound["auc"])
    assert (
        err_given.mean() < 0.5 * err_halves.mean() and bound["auc"].max() < half_bound["auc"].min()
    )


def test_exact_bins_reproduce_the_exact_replicates():
    s, y = make(800, seed=6, ties=True)
    c = core.counts(s, y)
    binning = B.score_bins(c.t, c.n)
    draws = B._Plan(y, "trial", True, None, 0).trial_draws(range(30))
    exact, (values, below, above) = coupled(s, y, draws, binning, MetricSettings())
    for k, v in flat(exact).items():
        np.testing.assert_array_equal(flat(values)[k], v)
        assert not flat(below)[k].any() and not flat(above)[k].any()


def test_speaker_unit_binned_uses_the_exact_draws():
    s, y = make(6000, seed=7)
    g = np.random.default_rng(7).integers(0, 40, s.size)
    ex = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(n_boot=64, seed=3, unit="speaker", method="exact"),
        groups=g,
    )
    bi = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(n_boot=64, seed=3, unit="speaker", method="binned", bins=128),
        groups=g,
    )
    assert bi.method == "binned" and ex.method == "exact" and bi.n_valid == ex.n_valid
    values, below, above = flat(bi.samples), flat(bi.bounds[0]), flat(bi.bounds[1])
    for k, v in flat(
        ex.samples
    ).items():  # same speaker draws: the bound holds resample by resample
        ok = np.isfinite(v)
        assert np.all((v >= values[k] - below[k] - 1e-12)[ok]) and np.all(
            (v <= values[k] + above[k] + 1e-12)[ok]
        )


def test_two_way_binned_uses_the_exact_draws():
    """Pairs of (enrolled, tested) speakers: the binned tables are the exact path's draws, so the
    bound holds resample by resample; 40 speakers enrolled and tested, one draw for both sides."""
    s, y = make(6000, seed=8)
    rng = np.random.default_rng(8)
    test = rng.integers(0, 40, s.size)
    enroll = np.where(y, test, rng.integers(0, 40, s.size))
    boot = BootstrapSettings(n_boot=64, seed=4, unit="two_way", method="exact")
    kw = dict(groups=test, enroll_groups=enroll)
    ex = B.bootstrap_metrics(s, y, boot=boot, **kw)
    bi = B.bootstrap_metrics(s, y, boot=replace(boot, method="binned", bins=128), **kw)
    assert bi.method == "binned" and bi.info()["sides"] == "one draw" and bi.n_valid == ex.n_valid
    values, below, above = flat(bi.samples), flat(bi.bounds[0]), flat(bi.bounds[1])
    for k, v in flat(ex.samples).items():
        ok = np.isfinite(v)
        assert np.all((v >= values[k] - below[k] - 1e-12)[ok]) and np.all(
            (v <= values[k] + above[k] + 1e-12)[ok]
        )


def test_thousands_of_speakers_take_the_sparse_speaker_table():
    """5,000 speakers x 2 x 4,096 bins would be 41M dense floats; the sparse table holds at most
    one cell per trial, and the draws stay the exact path's (the bound holds resample by resample)."""
    s, y = make(B.AUTO_EXACT_MAX_TRIALS + 1, seed=9)
    g = np.arange(s.size) % 5000
    ex = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(n_boot=64, seed=1, unit="speaker", method="exact"),
        groups=g,
    )
    bi = B.bootstrap_metrics(
        s, y, boot=BootstrapSettings(n_boot=64, seed=1, unit="speaker"), groups=g
    )
    assert bi.method == "binned" and bi.n_valid == ex.n_valid
    values, below, above = flat(bi.samples), flat(bi.bounds[0]), flat(bi.bounds[1])
    for k, v in flat(ex.samples).items():
        ok = np.isfinite(v)
        assert np.all((v >= values[k] - below[k] - 1e-12)[ok]) and np.all(
            (v <= values[k] + above[k] + 1e-12)[ok]
        )


def test_binned_ci_matches_exact_ci_in_distribution():
    """Independent draws: the CIs agree within the bound plus Monte Carlo noise."""
    s, y = make(25000, seed=8)
    ex = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=400, seed=0, method="exact"),
    )
    bi = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=400, seed=0),
    )
    assert bi.method == "binned" and not bi.exact_bins
    bound = bi.ci_error_bound()
    for name in ("eer", "auc"):
        sd = np.nanstd(ex.samples[name])
        assert (
            np.max(np.abs(np.subtract(bi.ci()[name], ex.ci()[name]))) <= bound[name] + 0.3 * sd
        ), name
        assert np.nanstd(bi.samples[name]) == pytest.approx(sd, rel=0.15)


# ----------------------------------------------------------------------------- method choice, seeds, records


def test_auto_method_and_options():
    small = make(3000)
    assert (
        B.bootstrap_metrics(*small, boot=BootstrapSettings(unit="trial", n_boot=5)).method
        == "exact"
    )
    big = make(B.AUTO_EXACT_MAX_TRIALS + 1)
    res = B.bootstrap_metrics(*big, boot=BootstrapSettings(unit="trial", n_boot=5))
    assert res.method == "binned" and res.bins <= B.DEFAULT_BINS["trial"]
    w = np.ones(big[0].size)
    assert (
        B.bootstrap_metrics(*big, boot=BootstrapSettings(unit="trial", n_boot=5), weights=w).method
        == "exact"
    )
    with pytest.raises(DataError, match="weights"):
        B.bootstrap_metrics(
            *big,
            boot=BootstrapSettings(unit="trial", n_boot=5, method="binned"),
            weights=w,
        )
    with pytest.raises(ValueError, match="method"):
        B.bootstrap_metrics(
            *small,
            boot=BootstrapSettings(unit="trial", n_boot=5, method="fast"),
        )
    tiny = B.bootstrap_metrics(
        *small,
        boot=BootstrapSettings(unit="trial", n_boot=5, method="binned", bins=4096),
    )  # 3,000 distinct scores
    assert tiny.exact_bins and tiny.ci_error_bound()["eer"] == 0.0


def test_binned_seeded_and_chunk_independent():
    s, y = make(30000, seed=9)
    a = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=100, seed=4, chunk_elements=1000),
    )
    b = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=100, seed=4),
    )
    c = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=100, seed=5),
    )
    d = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=64, seed=4),
    )  # a prefix of blocks: the same resamples
    np.testing.assert_array_equal(a.samples["eer"], b.samples["eer"])
    np.testing.assert_array_equal(d.samples["auc"], b.samples["auc"][:64])
    assert not np.array_equal(b.samples["eer"], c.samples["eer"])
    u = B.bootstrap_metrics(
        s,
        y,
        boot=BootstrapSettings(unit="trial", n_boot=20, seed=4, stratify=False),
    )
    assert u.method == "binned" and u.n_valid == 20


def test_results_json_records_the_bootstrap(tmp_path):
    s, y = make(25000, seed=10)
    ids = np.array([f"u{i}" for i in range(s.size)])
    ev = evaluate_trials(np.full(s.size, "spk"), ids, s, y, settings=trial_settings(n_boot=50))
    write_report(tmp_path, ev, {"seed": 0}, plots=False)
    run = json.loads((tmp_path / "results.json").read_text())["run"]
    info = run["bootstrap"]
    assert info["method"] == "binned" and 0 < info["bins"] <= 4096 and info["resamples"] == 50
    assert set(info["ci_error_bound"]) == {"eer", "auc", "tpr_at_fpr", "min_dcf"}
    assert set(info["ci_error_bound"]["tpr_at_fpr"]) == {"0.01", "0.001"}
    assert "score bins" in (tmp_path / "report.md").read_text()
    ev = evaluate_trials(
        np.full(300, "spk"),
        ids[:300],
        s[:300],
        y[:300],
        settings=trial_settings(n_boot=20, bootstrap_method="auto"),
    )
    write_report(tmp_path / "small", ev, {"seed": 0}, plots=False)
    assert (
        json.loads((tmp_path / "small" / "results.json").read_text())["run"]["bootstrap"]["method"]
        == "exact"
    )


# ----------------------------------------------------------------------------- columnar reading


def test_fast_reader_equals_line_parser(tmp_path, monkeypatch):
    rng = np.random.default_rng(11)
    lines = [
        f"e{i % 7} t{i} {x!r} {'target' if i % 3 == 0 else 'nontarget'}"
        for i, x in enumerate(np.r_[rng.normal(size=200), [1e-300, -0.0, 5e20]].tolist())
    ]
    lines += ["e1 t900 +.5 target", "e2 t901 7 nontarget", "e3 t902 1E+05 target"]
    path = tmp_path / "s.txt"
    path.write_text("\n".join(lines))  # no final newline
    data = path.read_bytes()
    fast, slow = _fast_scores(data, path), parse_scores(_decode_lines(data, path), str(path))
    assert fast is not None
    for name in ("enroll", "test", "scores", "labels", "lines"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name))
    assert fast.enroll.dtype == slow.enroll.dtype == object
    monkeypatch.setattr(
        "sparc_eval.metrics.scores.parse_scores", lambda *a: pytest.fail("slow path")
    )
    assert len(read_scores(path)) == len(lines)


@pytest.mark.parametrize(
    "text",
    [
        "a u1 0.5 target\r\nb u1 0.1 nontarget\r\n",  # CRLF
        "a\tu1 0.5 target\nb u1  0.1 nontarget\n",  # tab, double space
        "a u1 0.5 target\n\n   \nb u1 0.1 nontarget\n",  # blank lines: line numbers kept
        "a u1 1_0 target\nb u1 0.1 nontarget\n",  # Python's float() reads it, pyarrow does not
        "\u00e9 u1 0.5 target\nb u1 0.1 nontarget\n",  # non-ASCII id
    ],
)
def test_other_files_take_the_line_parser(tmp_path, text):
    path = tmp_path / "s.txt"
    path.write_bytes(text.encode())
    assert _fast_scores(path.read_bytes(), path) is None
    t = read_scores(path)
    assert len(t) == 2 and t.labels.tolist() == [True, False]
    if "\n\n" in text:
        assert t.lines.tolist() == [1, 4]
