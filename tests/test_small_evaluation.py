"""A small evaluation says it is small (issue 34): with few test speakers, or a bootstrap that
cannot vary, the interval is reported with its counts and a resampling-free bound, and no verdict
rests on it; a large evaluation with errors is unaffected."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from sparc_eval.cli import main
from sparc_eval.metrics import evaluate_trials
from sparc_eval.metrics.settings import evaluation_settings, trial_settings
from sparc_eval.metrics.small import eer_bound


def score_set(n_speakers: int, separable: bool, seed: int = 0):
    """Every test utterance (3 per speaker) against every speaker's model; targets score higher
    (always when ``separable``; with overlapping Gaussians otherwise)."""
    rng = np.random.default_rng(seed)
    speakers = [f"s{i:02d}" for i in range(n_speakers)]
    enroll, test, scores, labels, utt2spk = [], [], [], [], {}
    for spk in speakers:
        for k in range(3):
            utt = f"{spk}_u{k}"
            utt2spk[utt] = spk
            for model in speakers:
                target = model == spk
                enroll.append(model)
                test.append(utt)
                scores.append(
                    (2.0 if target else 0.0) + rng.uniform(0, 1)
                    if separable
                    else rng.normal(1.0 if target else 0.0)
                )
                labels.append(target)
    return enroll, test, np.array(scores), np.array(labels), utt2spk


def write_files(folder, trials):
    enroll, test, scores, labels, utt2spk = trials
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scores.txt").write_text(
        "".join(
            f"{e} {t} {float(s)!r} {'target' if y else 'nontarget'}\n"
            for e, t, s, y in zip(enroll, test, scores, labels)
        )
    )
    (folder / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utt2spk.items()))
    return folder / "scores.txt", folder / "utt2spk"


def test_the_bound_is_clopper_pearson_over_speakers():
    """No error among n speakers: the upper end is 1 - 0.025^(1/n) (30.8% for 10, 5.96% for 60)."""
    lo, hi = eer_bound(0.0, 10)
    assert (
        lo == 0.0
        and hi == pytest.approx(1 - 0.025 ** (1 / 10))
        and hi == pytest.approx(0.3085, abs=1e-4)
    )
    assert eer_bound(0.0, 60)[1] == pytest.approx(1 - 0.025 ** (1 / 60))
    lo, hi = eer_bound(0.1, 60)  # 6 of 60: the textbook interval [3.76%, 20.5%]
    assert lo == pytest.approx(0.0376, abs=5e-4) and hi == pytest.approx(0.2051, abs=5e-4)


def test_ten_separable_speakers_are_a_small_evaluation():
    enroll, test, scores, labels, utt2spk = score_set(10, separable=True)
    ev = evaluate_trials(
        enroll,
        test,
        scores,
        labels,
        utt2spk=utt2spk,
        settings=trial_settings(n_boot=200, bootstrap_unit="speaker"),
    )
    ov = ev["overall"]
    assert ov["eer"] == 0.0 and ov["ci95"]["eer"] == [
        0.0,
        0.0,
    ]  # the collapsed interval the issue found
    small = ov["small_evaluation"]
    assert small["n_speakers"] == 10 and small["n_target"] == 30 and small["n_nontarget"] == 270
    assert len(small["reasons"]) == 2  # too few speakers, and a degenerate bootstrap
    assert small["eer_bound95"] == pytest.approx([0.0, 1 - 0.025**0.1])


def test_sixty_speakers_with_errors_are_unaffected():
    enroll, test, scores, labels, utt2spk = score_set(60, separable=False)
    ev = evaluate_trials(
        enroll,
        test,
        scores,
        labels,
        utt2spk=utt2spk,
        settings=trial_settings(n_boot=200, bootstrap_unit="speaker"),
    )
    ov = ev["overall"]
    assert 0.1 < ov["eer"] < 0.5 and ov["ci95"]["eer"][0] < ov["eer"] < ov["ci95"]["eer"][1]
    assert ov["small_evaluation"] is None
    # the threshold is a setting: the same 60 speakers are small under a rule asking for 100
    again = evaluate_trials(
        enroll,
        test,
        scores,
        labels,
        utt2spk=utt2spk,
        settings=trial_settings(n_boot=50, bootstrap_unit="speaker", min_verdict_speakers=100),
    )
    assert again["overall"]["small_evaluation"]["n_speakers"] == 60


def test_metrics_command_says_too_few_speakers_and_prints_the_bound(tmp_path, capsys):
    scores, utt2spk = write_files(tmp_path / "in", score_set(10, separable=True))
    out = tmp_path / "out"
    assert (
        main(
            [
                "metrics",
                "--scores",
                str(scores),
                "--utt2spk",
                str(utt2spk),
                "--out",
                str(out),
                "--n-boot",
                "200",
                "--no-plots",
            ]
        )
        == 0
    )
    assert "too few speakers for a verdict" in capsys.readouterr().err
    report = (out / "report.md").read_text()
    assert "**Small evaluation.**" in report and "too few speakers for a verdict" in report
    assert (
        "10 test speakers, 30 target / 270 non-target trials" in report
        and "[0.0%, 30.8%]" in report
    )
    doc = json.loads((out / "results.json").read_text())
    assert doc["overall"]["small_evaluation"]["eer_bound95"][1] == pytest.approx(0.3085, abs=1e-4)
    assert doc["run"]["hparams"]["min_verdict_speakers"] == 20

    scores, utt2spk = write_files(tmp_path / "big", score_set(60, separable=False))
    assert (
        main(
            [
                "metrics",
                "--scores",
                str(scores),
                "--utt2spk",
                str(utt2spk),
                "--out",
                str(tmp_path / "o2"),
                "--n-boot",
                "100",
                "--no-plots",
            ]
        )
        == 0
    )
    assert "Small evaluation" not in (tmp_path / "o2" / "report.md").read_text()
    assert "too few speakers" not in capsys.readouterr().err


def _trials(trials):
    from sparc_eval.attack.trials import Trials

    enroll, test, scores, labels, utt2spk = trials
    return Trials(enroll, test, scores, labels, test_speaker=[utt2spk[t] for t in test])


def test_no_comparison_verdict_rests_on_too_few_speakers():
    from sparc_eval.attack.compare import compare_cells, verdict

    few = compare_cells(
        _trials(score_set(10, True)),
        _trials(score_set(10, False, seed=1)),
        evaluation_settings(n_boot=100, seed=0),
    )
    assert few["n_speakers_a"] == few["n_speakers_b"] == 10
    assert verdict(few, "a", "b").startswith(
        "no verdict: too few speakers for a verdict (10 test speakers"
    )
    many = compare_cells(
        _trials(score_set(60, False)),
        _trials(score_set(60, False, seed=1)),
        evaluation_settings(n_boot=100, seed=0),
    )
    assert many["small"] is None and not verdict(many, "a", "b").startswith("no verdict")


def _cell(trials, folder: str, min_speakers: int = 20) -> dict:
    enroll, test, scores, labels, utt2spk = trials
    ev = evaluate_trials(
        enroll,
        test,
        scores,
        labels,
        utt2spk=utt2spk,
        settings=trial_settings(
            n_boot=100, bootstrap_unit="speaker", min_verdict_speakers=min_speakers
        ),
    )
    return {"status": "ok", "overall": ev["overall"], "folder": folder, "n_trial_speakers": 10}


def test_card_strength_and_text_say_too_few_speakers_with_the_bound():
    """The card's attacker-strength section warns (so "every CI is narrow enough" is not printed),
    its EER text carries the bound, and a 60-speaker attacker with errors is not warned."""
    from sparc_eval.jobs.card.report import _eer_ci, _strength
    from sparc_eval.jobs.card.verdicts import _eer, strength

    s = SimpleNamespace(weak_attacker_eer=0.4, max_ci_width=0.25)
    small, large = score_set(10, True), score_set(60, False)
    cells = {
        "original": {
            "voice": {"original": _cell(small, "o")},
            "other": {"original": _cell(large, "o2")},
        },
        "pitch": {
            "voice": {"lazy-informed": _cell(small, "p")},
            "other": {"lazy-informed": _cell(large, "p2")},
        },
    }
    found = strength(s, cells)
    (warning,) = found["voice"]["warnings"]
    assert warning.startswith("too few speakers for any verdict: 10 test speakers (fewer than 20)")
    assert (
        "original speech EER 0.0%-30.8%" in warning
        and "pitch lazy-informed EER 0.0%-30.8%" in warning
    )
    assert found["other"]["warnings"] == []
    text = "\n".join(_strength({"strength": found}))
    assert "narrow enough" not in text and "too few speakers" in text
    assert (
        _eer_ci(_eer(cells["pitch"]["voice"]["lazy-informed"]))
        == "0.0% [0.0%, 0.0%] (small: 10 speakers, bound 0.0%-30.8%)"
    )
    # the card's privacy table: the bound beside the collapsed interval, the row marked
    from sparc_eval.jobs.card.report import _privacy_table

    table = "\n".join(
        _privacy_table(
            {"run": {"scenarios": ["original", "lazy-informed"]}, "cells": cells, "strength": found}
        )
    )
    # the flag is the cell's (issue 61): † after each small cell, not on the attacker
    assert "| pitch | voice | 0.0% [0.0%, 0.0%] (small: 10 speakers, bound 0.0%-30.8%)† |" in table
    assert (
        "| pitch | other |" in table
        and "(small" not in table.split("| pitch | other |")[1].splitlines()[0]
    )


def split_set(utts: list, seed: int = 0, weights=None):
    """Speaker i has ``utts[i]`` test utterances, each scored against its own model (a target
    trial) and the next speaker's (a non-target trial): per class, speaker i has ``utts[i]``
    trials; scores overlap, so the EER is neither 0 nor 1."""
    rng = np.random.default_rng(seed)
    n = len(utts)
    enroll, test, scores, labels, utt2spk = [], [], [], [], {}
    for i, k in enumerate(utts):
        for u in range(k):
            utt = f"s{i:02d}_u{u:02d}"
            utt2spk[utt] = f"s{i:02d}"
            for model, target in ((i, True), ((i + 1) % n, False)):
                enroll.append(f"s{model:02d}")
                test.append(utt)
                scores.append(rng.normal(1.0 if target else 0.0))
                labels.append(target)
    return enroll, test, np.array(scores), np.array(labels), utt2spk


def _small_of(trials, weights=None) -> dict:
    enroll, test, scores, labels, utt2spk = trials
    ev = evaluate_trials(
        enroll,
        test,
        scores,
        labels,
        utt2spk=utt2spk,
        weights=weights,
        settings=trial_settings(n_boot=0),
        per_speaker=False,
    )
    return ev["overall"]


def test_unequal_speakers_count_as_their_effective_number():
    """Issue 61: 10 test speakers whose trials split 40 + 9 x 1 (per class) are not 10 units; the
    bound counts n_eff = (sum w)^2 / sum w^2 = 49^2 / (40^2 + 9) = 1.49 of them."""
    from sparc_eval.metrics.small import effective_speakers, small_label, small_note

    ov = _small_of(split_set([40] + [1] * 9))
    small = ov["small_evaluation"]
    n_eff = 49**2 / (40**2 + 9)
    assert small["n_speakers"] == 10 and small["n_target"] == small["n_nontarget"] == 49
    assert small["n_eff"] == pytest.approx(n_eff) and n_eff == pytest.approx(1.4922, abs=1e-4)
    assert 0 < ov["eer"] < 1
    assert small["eer_bound95"] == pytest.approx(eer_bound(ov["eer"], n_eff))
    assert small["eer_bound95"][1] > eer_bound(ov["eer"], 10)[1]  # wider than 10 units gave
    assert "effective number of test speakers" in small["bound_counts"]
    assert "(1.49 of 10)" in small_note(small) and small_label(small).endswith(", n_eff 1.49")
    # the smaller class decides: targets 40 + 9 x 1, non-targets spread evenly over the 10
    spk = np.array([0] * 40 + list(range(1, 10)) + [i % 10 for i in range(49)])
    y = np.array([True] * 49 + [False] * 49)
    assert effective_speakers(spk, y) == pytest.approx(n_eff)
    assert effective_speakers(spk[~y], y[~y]) == pytest.approx(49**2 / (9 * 5**2 + 4**2))


def test_equal_speakers_keep_the_speaker_count_bound():
    """A balanced 10 x 10 design: n_eff is 10, and the bound is the one counting 10 speakers."""
    from sparc_eval.metrics.small import small_label

    ov = _small_of(split_set([10] * 10))
    small = ov["small_evaluation"]
    assert small["n_eff"] == 10 and small["n_speakers"] == 10
    assert small["eer_bound95"] == pytest.approx(eer_bound(ov["eer"], 10))
    assert ", n_eff" not in small_label(small)


def test_trial_weights_count_toward_n_eff_and_bare_scores_keep_trials():
    """The weights w are summed trial weights: the 40-trial speaker's trials at 1/40 each weigh as
    one trial, so 10 speakers count 10. Without utt2spk, no speakers: the smaller class's trials
    (n_eff null)."""
    trials = split_set([40] + [1] * 9)
    weights = np.where(np.char.startswith(np.array(trials[1]), "s00_"), 1 / 40, 1.0)
    small = _small_of(trials, weights)["small_evaluation"]
    assert small["n_eff"] == pytest.approx(10)
    enroll, test, scores, labels, _ = trials
    ov = evaluate_trials(
        enroll, test, scores, labels, settings=trial_settings(n_boot=0), per_speaker=False
    )["overall"]
    assert ov["small_evaluation"] is None  # no speakers, no degenerate bootstrap: not small
    from sparc_eval.metrics.small import small_evaluation

    bare = small_evaluation({**ov, "ci95": {"eer": [0.2, 0.2]}}, None)
    assert bare["n_eff"] is None and bare["eer_bound95"] == pytest.approx(eer_bound(ov["eer"], 49))
    assert bare["bound_counts"].startswith("trials of the smaller class")


def test_a_leakage_comparison_with_a_degenerate_cell_draws_no_verdict(monkeypatch):
    """Issue 61: a small-by-degenerate-interval cell binds the leakage comparison's verdicts too
    (the count rule already did, in compare_cells)."""
    from types import SimpleNamespace

    from sparc_eval.attack.compare import ci_verdict
    from sparc_eval.jobs.leakage.run import _Comparer

    degenerate = {"reasons": ["EER 0%: every trial ordered alike (degenerate bootstrap)"]}
    cells = {
        "ls": {"phones": {"all": {"status": "ok", "overall": {"small_evaluation": degenerate}}}},
        "edacc": {"phones": {"all": {"status": "ok", "overall": {"small_evaluation": None}}}},
    }
    cmp = _Comparer(SimpleNamespace(), cells, {})
    reason = cmp.withheld(("edacc", "phones", "all"), ("ls", "phones", "all"))
    assert reason == (
        "no verdict: phones on ls (all) is a small evaluation: EER 0%: every trial ordered "
        "alike (degenerate bootstrap)"
    )
    assert cmp.withheld(("edacc", "phones", "all")) is None
    # compare() sets it on what it returns, so every leakage verdict reads it
    import sparc_eval.jobs.leakage.run as leakage_run

    settings = SimpleNamespace(
        evaluation=SimpleNamespace(
            bootstrap=SimpleNamespace(n_boot=10, seed=0, unit="two_way"), min_verdict_speakers=20
        )
    )
    cmp = _Comparer(settings, cells, {})
    cmp.trials = lambda *side: side
    monkeypatch.setattr(leakage_run, "compare_cells", lambda a, b, settings: {"small": None})
    assert cmp.compare(("edacc", "phones", "all"), ("ls", "phones", "all"))["withheld"] == reason
    found = {"eer_diff": -0.1, "eer_diff_ci95": [-0.2, -0.05], "small": None, "withheld": reason}
    assert ci_verdict(found, below="b leaks more", above="a", within="w") == reason
    assert ci_verdict({**found, "withheld": None}, below="b leaks more", above="a", within="w") == (
        "b leaks more"
    )
