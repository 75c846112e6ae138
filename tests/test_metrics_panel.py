"""The metric panel beyond EER (issue 28): hand-worked cases, the VoicePrivacy 2024 code's values
(tests/golden/vpc2024_panel.json, with provenance) and the legal-eval reference package."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sparc_eval.metrics import calibration, linkability
from sparc_eval.metrics.core import counts
from sparc_eval.metrics.panel import MIN_NONTARGETS_PER_FPR, mean_speaker_eer
from sparc_eval.metrics.results import evaluate_trials
from sparc_eval.metrics.settings import trial_settings

REPO = Path(__file__).resolve().parents[1]
GOLDEN = json.loads((REPO / "tests/golden/vpc2024_panel.json").read_text())["values"]
SPANE = "spane_spsc2023_results/logs/baseline/privacy/eval/asv-plda"


def table(tar, non):
    tar, non = np.asarray(tar, float), np.asarray(non, float)
    return counts(np.r_[tar, non], np.r_[np.ones(tar.size, bool), np.zeros(non.size, bool)])


def panel(c):
    worst = calibration.worst_case(c.t, c.n)
    return {
        "act_cllr": calibration.act_cllr(c.unique, c.t, c.n),
        "min_cllr": calibration.min_cllr(c.t, c.n),
        "dece": calibration.dece(c.t, c.n),
        "max_abs_log10_lr": worst.max_abs_log10_lr,
        "tag": worst.tag,
        "linkability_vpc": linkability.linkability_vpc(c.unique, c.t, c.n),
    }


def spane_sets(data_dir):
    for scenario in ("ignorant", "lazy-informed"):
        for dataset in ("ls-test-clean", "edacc-test"):
            rows = np.load(data_dir / SPANE / scenario / "results" / dataset / "llrs.npy")
            target = rows[:, 0] == rows[:, 1]
            yield f"spane_{scenario}_{dataset}", rows, rows[target, 2], rows[~target, 2]


def assert_golden(name, mine):
    gold = GOLDEN[name]
    for key, value in mine.items():
        if key == "tag":
            assert value == gold[key], (name, key)
        else:  # the VoicePrivacy code adds up to 1e-6 to its PAV LLRs to keep them monotonic
            assert abs(value - gold[key]) < 1e-6, (name, key, value, gold[key])


# --- hand-worked cases ----------------------------------------------------------------------------


def test_perfect_separation_and_identical_distributions():
    perfect = table(np.arange(100, 200), np.arange(0, 100))
    assert linkability.linkability(perfect.unique, perfect.t, perfect.n) == 1.0
    assert calibration.min_cllr(perfect.t, perfect.n) == 0.0
    assert calibration.dece(perfect.t, perfect.n) == pytest.approx(calibration.MAX_DECE, abs=1e-12)
    same = table(np.arange(100), np.arange(100))  # every score once in each class
    assert linkability.linkability(same.unique, same.t, same.n) == 0.0
    assert linkability.linkability_vpc(same.unique, same.t, same.n) == 0.0
    assert calibration.min_cllr(same.t, same.n) == pytest.approx(1.0, abs=1e-12)
    assert calibration.dece(same.t, same.n) == pytest.approx(0.0, abs=1e-12)


def test_vpc_trapezoid_halves_the_edge_bins():
    """All mated scores in the top bin: the sum says 1, the VoicePrivacy integration 0.5."""
    c = table(np.full(20, 10.0), np.linspace(0.0, 1.0, 50))  # 2 bins over [0, 10]
    assert linkability.linkability(c.unique, c.t, c.n) == 1.0
    assert linkability.linkability_vpc(c.unique, c.t, c.n) == 0.5


def test_worst_case_by_hand():
    """3 targets above 4 non-targets. With a (target, non-target) pseudo-pair at each end, PAV
    pools the low pair with the non-targets (1 of 6 a target) and the targets with the high pair
    (4 of 5): LLRs log(1/5) - log(3/4) and log(4) - log(3/4), so the worst case is
    log10(16/3), tag A, and it equals the cap log10(N (T + 1) / T)."""
    c = table([5.0, 6.0, 7.0], [1.0, 2.0, 3.0, 4.0])
    worst = calibration.worst_case(c.t, c.n)
    assert worst.max_abs_log10_lr == pytest.approx(math.log10(16 / 3), abs=1e-12)
    assert worst.tag == "A" and worst.cap == pytest.approx(math.log10(16 / 3), abs=1e-12)
    assert [calibration.zebra_tag(x) for x in (0.0, 0.5, 1.5, 3.0, 4.5, 5.5, 7.0)] == list(
        "0ABCDEF"
    )


def test_tied_scores_share_an_llr_whatever_their_order():
    """Trials that share a score are one PAV block whatever their order in the file (the
    VoicePrivacy code's order-dependent treatment of ties is not reproduced)."""
    scores = np.array([1.0, 1.0, 2.0, 0.0, 1.0, 1.0, 3.0, 2.0])
    labels = np.array([1, 1, 1, 0, 0, 0, 1, 0], dtype=bool)
    values = set()
    for seed in range(5):
        order = np.random.default_rng(seed).permutation(scores.size)
        c = counts(scores[order], labels[order])
        values.add((calibration.min_cllr(c.t, c.n), calibration.dece(c.t, c.n)))
    assert len(values) == 1 and c.unique.size == 4  # one LLR per distinct score


def test_low_fpr_rule_and_attained_fpr():
    rng = np.random.default_rng(0)
    n_few = 10 * 100 - 1  # one short of what TPR at 1% needs
    for n_non, expect_null in ((n_few, True), (1000, False)):
        scores = np.r_[rng.normal(2, 1, 50), rng.normal(0, 1, n_non)]
        labels = np.r_[np.ones(50, bool), np.zeros(n_non, bool)]
        res = evaluate_trials(
            ["e"] * labels.size,
            range(labels.size),
            scores,
            labels,
            settings=trial_settings(n_boot=20),
        )
        ov = res["overall"]
        assert (ov["tpr_at_fpr"]["0.01"] is None) == expect_null
        assert (ov["ci95"]["tpr_at_fpr"]["0.01"] == [None, None]) == expect_null
        assert ov["fpr_attained"]["0.01"] <= 0.01 and ov["tpr_at_fpr"]["0.001"] is None
        assert ov["ci95"]["tpr_at_fpr"]["0.001"] == [None, None]  # the shape of an interval kept
        assert ("overall.tpr_at_fpr.0.01" in res["not_applicable"]) == expect_null
    assert MIN_NONTARGETS_PER_FPR == 10


def test_mean_speaker_eer_clips_at_half_and_resamples_speakers():
    per = {"a": {"eer": 0.1}, "b": {"eer": 0.9}, "c": {"eer": None}, "d": {"eer": 0.3}}
    mean, ci = mean_speaker_eer(per, n_boot=200, seed=0)
    assert mean == pytest.approx((0.1 + 0.5 + 0.3) / 3)
    assert ci[0] <= mean <= ci[1] and ci[0] >= 0.1 and ci[1] <= 0.5


def test_panel_in_every_overall_block_with_cis():
    rng = np.random.default_rng(1)
    spk = np.repeat(np.arange(30), 40)
    labels = rng.random(spk.size) < 0.1
    scores = rng.normal(labels * 1.5, 1.0)
    res = evaluate_trials(
        spk, [f"u{i}" for i in range(spk.size)], scores, labels,
        utt2spk={f"u{i}": str(s) for i, s in enumerate(spk)}, settings=trial_settings(bootstrap_unit="speaker", n_boot=100), )  # fmt: skip
    ov = res["overall"]
    for key in ("min_cllr", "dece", "linkability"):
        lo, hi = ov["ci95"][key]
        assert lo <= ov[key] <= hi
    assert ov["act_cllr"] is None and ov["act_cllr_scores_as_llrs"] is not None
    assert ov["linkability_topn"] is None  # not a full enrollment-by-test matrix
    assert "overall.linkability_topn" in res["not_applicable"]
    one_class = evaluate_trials(["e"] * 3, ["a", "b", "c"], [0.1, 0.2, 0.3], [0, 0, 0])
    assert one_class["overall"]["min_cllr"] is None and one_class["overall"]["dece"] is None


def test_llr_flag_on_similarity_scores_warns():
    with pytest.warns(UserWarning, match="declared log-likelihood ratios"):
        res = evaluate_trials(
            ["e"] * 40,
            range(40),
            np.linspace(0, 1, 40),
            np.arange(40) >= 30,
            llr=True,
            settings=trial_settings(n_boot=0),
        )
    assert "overall.act_cllr.llr" in res["not_applicable"]


# --- reference values -----------------------------------------------------------------------------


def test_agrees_with_the_voiceprivacy_code_on_a_hand_made_set():
    rng = np.random.default_rng(20261202)
    tar, non = rng.normal(1.5, 1.0, 60), rng.normal(0.0, 1.0, 600)
    assert_golden("hand_normal", panel(table(tar, non)))


def test_agrees_with_the_voiceprivacy_code_on_spane_llrs(data_dir):
    for name, _, tar, non in spane_sets(data_dir):
        assert_golden(name, panel(table(tar, non)))


def test_topn_agrees_with_legal_eval(data_dir):
    from legal_eval.io import ScoreMatrix
    from legal_eval.metrics import linkability as legal_linkability

    rng = np.random.default_rng(3)
    hand = rng.normal(size=(30, 30)) + 2.0 * np.eye(30)  # enrollment x test, test j is speaker j
    hand[0, 1] = hand[1, 1]  # a tie goes to the true speaker
    matrices = [hand]
    for _, rows, _, _ in spane_sets(data_dir):
        n = int(rows[:, :2].max()) + 1
        m = np.empty((n, n))
        m[rows[:, 1].astype(int), rows[:, 0].astype(int)] = rows[:, 2]
        matrices.append(m)
    for m in matrices:
        names = [str(i) for i in range(m.shape[0])]
        reference = ScoreMatrix(m, names, names, {})
        for n_prime in (1, 2, 10, m.shape[0]):
            (expected,) = legal_linkability(reference, n_prime, estimator="exact")
            mine = linkability.linkability_topn(m, np.arange(m.shape[1]), n_prime)
            assert abs(mine - expected) < 1e-9, (n_prime, mine, expected)


def test_metrics_cli_reads_spane_llrs(data_dir, tmp_path):
    path = data_dir / SPANE / "ignorant/results/ls-test-clean/llrs.npy"
    cmd = [sys.executable, "-m", "sparc_eval.cli", "metrics", "--scores", str(path)]
    subprocess.run([*cmd, "--out", str(tmp_path), "--no-plots"], check=True, capture_output=True)
    doc = json.loads((tmp_path / "results.json").read_text())
    ov, gold = doc["overall"], GOLDEN["spane_ignorant_ls-test-clean"]
    assert doc["run"]["hparams"]["llr"] is True and ov["act_cllr_scores_as_llrs"] is None
    assert abs(ov["act_cllr"] - gold["act_cllr"]) < 1e-6
    assert abs(ov["min_cllr"] - gold["min_cllr"]) < 1e-6
    assert abs(ov["linkability_vpc"] - gold["linkability_vpc"]) < 1e-9
    assert ov["n_target"] == 40 and ov["linkability_topn"]["all"] == pytest.approx(0.975)
    assert len(doc["per_speaker"]) == 40  # one test recording per speaker, named <speaker>:trial


def test_worst_speakers_are_picked_on_one_half_and_measured_on_the_other():
    rng = np.random.default_rng(4)
    n_spk, n_utt = 30, 20
    shift = np.linspace(0.5, 3.0, n_spk)  # some speakers far easier to identify than others
    test_spk = np.repeat(np.arange(n_spk), n_utt * n_spk)
    utt = np.repeat(np.arange(n_spk * n_utt), n_spk)
    model = np.tile(np.arange(n_spk), n_spk * n_utt)
    labels = model == test_spk
    scores = rng.normal(labels * shift[test_spk], 1.0)
    ids = [f"u{i}" for i in utt]
    res = evaluate_trials(
        model,
        ids,
        scores,
        labels,
        utt2spk={f"u{i}": str(i // n_utt) for i in utt},
        settings=trial_settings(n_boot=0),
    )
    worst = res["overall"]["worst_speakers"]
    assert 10 <= worst["n_eligible"] <= n_spk and worst["k"] == 5 and len(worst["speakers"]) == 2
    # selection on the same noisy half flatters; the other half shows regression to the mean
    assert worst["in_sample_eer"] <= worst["held_out_eer"]
    for picked in worst["speakers"]:  # mostly the easy speakers (large shifts), noise aside
        assert np.mean([shift[int(spk)] for spk in picked]) > shift.mean() + 0.5
    few = evaluate_trials(
        model[: 2 * n_spk], ids[: 2 * n_spk], scores[: 2 * n_spk], labels[: 2 * n_spk],
        utt2spk={f"u{i}": str(i // n_utt) for i in utt}, settings=trial_settings(n_boot=0),
    )  # fmt: skip
    assert few["overall"]["worst_speakers"] is None
    assert "overall.worst_speakers" in few["not_applicable"]


def test_all_scores_equal_give_uninformative_values_and_no_linkability():
    """The VoicePrivacy code fails on one distinct score; here: EER 0.5, min Cllr 1, D_ECE 0 and
    no D<->sys (no bins), with the reason."""
    res = evaluate_trials(
        ["e"] * 200,
        range(200),
        np.zeros(200),
        np.arange(200) < 20,
        settings=trial_settings(n_boot=0),
    )
    ov = res["overall"]
    assert ov["eer"] == 0.5 and ov["min_cllr"] == pytest.approx(1.0) and ov["dece"] == 0.0
    assert (
        ov["linkability"] is None and "same score" in res["not_applicable"]["overall.linkability"]
    )


@pytest.mark.slow("the metric panel's plots and 1,000 resamples: about 3 s")
def test_linkability_needs_two_bins_and_worst_speakers_are_reproducible(tmp_path):
    """15 perfectly separated targets make one bin, where D is 0 whatever the scores: null, not 0
    (also in the CI). The worst speakers' halves do not depend on the process (Python's string
    hashes do)."""
    c = table(np.arange(100, 115), np.arange(0, 100))
    assert linkability.linkability(c.unique, c.t, c.n) is None
    res = evaluate_trials(
        ["e"] * 115,
        range(115),
        np.r_[c.unique[-15:], np.arange(100)],
        np.arange(115) < 15,
        settings=trial_settings(n_boot=50),
    )
    assert res["overall"]["linkability"] is None and res["overall"]["ci95"]["linkability"] == [
        None,
        None,
    ]
    code = (
        "import numpy as np, json; from sparc_eval.metrics.results import evaluate_trials\n"
        "from sparc_eval.metrics.settings import trial_settings\n"
        "rng = np.random.default_rng(4); spk = np.repeat(np.arange(20), 800); model = np.tile(np.arange(20), 800)\n"
        "utt = [f'u{i // 20}' for i in range(spk.size)]; y = model == spk\n"
        "res = evaluate_trials(model, utt, rng.normal(y * 1.5, 1.0), y, "
        "utt2spk={f'u{i}': str(i // 40) for i in range(800)}, settings=trial_settings(n_boot=0))\n"
        "print(json.dumps(res['overall']['worst_speakers']))"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
        ).stdout
        for _ in range(2)
    }
    assert len(runs) == 1 and "held_out_eer" in runs.pop()


def test_an_attacker_declares_llr_scores(demo_dir):
    """An attacker with ``scores_are_llrs = True`` (a PLDA back-end) gets its actual Cllr as such."""
    from sparc_eval.attack import Needs, attack
    from sparc_eval.attack.evaluation import EvaluationSettings
    from sparc_eval.attack.trials import Trials
    from sparc_eval.data.plan import DataSettings, plan_data

    class Plda:
        name, needs, scores_are_llrs = "plda", Needs(training=False), True

        def fit(self, train):
            """Nothing to learn."""

        def score(self, plan):
            utt2spk = plan.eval_original.utt2spk()
            pairs = plan.split.trial_pairs(utt2spk)
            rng = np.random.default_rng(0)
            llrs = [rng.normal(3.0 if target else -3.0) for _, _, target in pairs]
            return Trials.from_pairs(pairs, np.array(llrs), utt2spk)

        def describe(self):
            return {"features": "plda"}

        def deviations(self, plan):
            return {}

    plan = plan_data(DataSettings(data_folder=str(demo_dir)))
    overall = attack(Plda(), plan, EvaluationSettings()).evaluation["overall"]
    assert overall["act_cllr"] is not None and overall["act_cllr_scores_as_llrs"] is None


def test_topn_linkability_does_not_depend_on_the_column_order():
    """Test ids are factorized through their hashes, whose order changes between processes: the
    mean over columns must be the same float in any order (a re-evaluated cell equals its first
    evaluation bit for bit)."""
    from sparc_eval.metrics.linkability import linkability_topn

    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(30, 997))
    true_rows = rng.integers(0, 30, size=997)
    values = set()
    for seed in range(20):
        order = np.random.default_rng(seed).permutation(997)
        values.add(linkability_topn(matrix[:, order], true_rows[order], 10))
    assert len(values) == 1
