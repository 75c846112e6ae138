"""A small evaluation says it is small (issue 34): with few test speakers, or a bootstrap that
cannot vary, the interval is reported with its counts and a resampling-free bound, and no verdict
rests on it; a large evaluation with errors is unaffected."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from sparc_eval.cli import main
from sparc_eval.metrics import evaluate_trials
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
        enroll, test, scores, labels, utt2spk=utt2spk, n_boot=200, bootstrap_unit="speaker"
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
        enroll, test, scores, labels, utt2spk=utt2spk, n_boot=200, bootstrap_unit="speaker"
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
        n_boot=50,
        bootstrap_unit="speaker",
        min_verdict_speakers=100,
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
    from sparc_eval.jobs.leakage.compare import compare_cells, verdict

    few = compare_cells(
        _trials(score_set(10, True)), _trials(score_set(10, False, seed=1)), n_boot=100, seed=0
    )
    assert few["n_speakers_a"] == few["n_speakers_b"] == 10
    assert verdict(few, "a", "b").startswith(
        "no verdict: too few speakers for a verdict (10 test speakers"
    )
    many = compare_cells(
        _trials(score_set(60, False)), _trials(score_set(60, False, seed=1)), n_boot=100, seed=0
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
        n_boot=100,
        bootstrap_unit="speaker",
        min_verdict_speakers=min_speakers,
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
    assert "| pitch | voice† | 0.0% [0.0%, 0.0%] (small: 10 speakers, bound 0.0%-30.8%) |" in table
    assert (
        "| pitch | other |" in table
        and "(small" not in table.split("| pitch | other |")[1].splitlines()[0]
    )
