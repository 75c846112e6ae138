"""The card's verdicts claim no more than they show (issue 25): every words-only attacker on the same
trials, tests at their stated level, a cross-fitted headline, rules that reach the rows, and the
settings that would make attackers score other utterances refused."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from sparc_eval.attack.evaluation import BootstrapSettings, EvaluationSettings
from sparc_eval.attack.trials import Trials
from sparc_eval.errors import DataError
from sparc_eval.jobs.card.reference import (
    below_all,
    beyond_words_verdict,
    cross_fitted,
    holm,
    words_better,
)
from sparc_eval.metrics import evaluate_trials, write_scores

REPO = Path(__file__).resolve().parents[1]
AUDIO = {"audio": True, "words": False, "split": True, "training": False}
WORDS = {"audio": False, "words": True, "split": True, "training": False}
N_SPK, N_UTT = 30, 4


def _scores(separation, rng, per_speaker=None):
    """Every trial utterance (N_UTT per speaker) against every speaker; targets shifted by
    ``separation`` (or ``per_speaker[speaker]``)."""
    speakers = [f"s{i:02d}" for i in range(N_SPK)]
    rows = []
    for spk in speakers:
        shift = separation if per_speaker is None else per_speaker[spk]
        for k in range(N_UTT):
            for model in speakers:
                rows.append(
                    (model, f"{spk}_{k}", spk, rng.normal() + shift * (model == spk), model == spk)
                )
    return rows


def _cell(root: Path, folder: str, rows, needs: dict) -> dict:
    out = root / folder
    out.mkdir(parents=True, exist_ok=True)
    enroll, test, spk, score, label = (list(x) for x in zip(*rows))
    write_scores(out / "scores.txt", enroll, test, np.array(score), np.array(label))
    (out / "utt2spk").write_text("".join(f"{t} {s}\n" for t, s in dict(zip(test, spk)).items()))
    ev = evaluate_trials(
        enroll, test, np.array(score), np.array(label), utt2spk=dict(zip(test, spk)), n_boot=200
    )
    return {
        "status": "ok",
        "overall": ev["overall"],
        "folder": folder,
        "needs": needs,
        "n_trial_speakers": N_SPK,
    }


def _settings(root, **extra):
    return SimpleNamespace(
        content_attacker="phones",
        output_folder=root,
        scenarios=("lazy-informed",),
        seed=0,
        weak_attacker_eer=0.4,
        max_ci_width=0.25,
        evaluation=EvaluationSettings(bootstrap=BootstrapSettings(n_boot=300)),
        **extra,
    )


@pytest.fixture(scope="module")
def card(tmp_path_factory):
    """An anonymizer whose voice attacker beats the phone row but not TF-IDF, on the same trials."""
    root = tmp_path_factory.mktemp("synthetic_card")
    rng = np.random.default_rng(0)
    cells = {"original": {}, "anon": {}}
    for attacker, sep, needs in (
        ("voice", 2.0, AUDIO),
        ("phones", 1.0, WORDS),
        ("tfidf_utterances", 3.0, WORDS),
    ):
        cells["original"][attacker] = {
            "original": _cell(root, f"o/{attacker}", _scores(sep + 0.5, rng), needs)
        }
        cells["anon"][attacker] = {
            "lazy-informed": _cell(root, f"a/{attacker}", _scores(sep, rng), needs)
        }
    return root, cells


def test_an_audio_attacker_below_the_phone_row_but_not_tfidf_is_not_beyond_the_words(card):
    from sparc_eval.jobs.card.verdicts import CellTrials, content_rows, voice_beyond_content

    root, cells = card
    s = _settings(root)
    (row,) = voice_beyond_content(s, cells, CellTrials(root, cells))
    against = {c["attacker"]: c for c in row["against"]}
    assert against["phones"]["ci95"][1] < 0 < against["tfidf_utterances"]["ci95"][0]
    assert (
        row["content_eer"] == against["phones"]["eer"] and row["paired"] == "trials"
    )  # content_* keep their meaning
    assert not row["verdict"].startswith("finds more") and "voice leaks" not in row["verdict"]
    assert row["verdict"].startswith("bounded by content: tfidf_utterances")
    reference = content_rows(s, cells)["reference"]["anon"]["lazy-informed"]
    assert reference["k"] == 2 and reference["lowest"] == "tfidf_utterances"


def test_holm_and_the_intersection_union_test_on_hand_made_paired_bootstraps():
    assert holm([0.01, 0.04, 0.03]) == [True, False, False]  # 0.01 <= 0.05/3; 0.03 > 0.05/2 stops
    assert holm([0.01, 0.02, 0.04]) == [
        True,
        True,
        True,
    ]  # 0.01 <= .0167, 0.02 <= .025, 0.04 <= .05
    assert holm([0.02, 0.02]) == [True, True] and holm([0.03, 0.03]) == [False, False]
    below = [
        {"attacker": "a", "ci95": [-0.2, -0.01], "diff": -0.1, "p_value": 0.01},
        {"attacker": "b", "ci95": [-0.1, -0.001], "diff": -0.05, "p_value": 0.04},
    ]
    assert below_all(below) and beyond_words_verdict(below).startswith(
        "finds more than every words-only attacker"
    )
    one_crosses = [below[0], {**below[1], "ci95": [-0.1, 0.01], "p_value": 0.2}]
    assert not below_all(one_crosses) and beyond_words_verdict(one_crosses).startswith("within")
    # two words-only attackers better at p 0.03 each: each alone would pass 5%, Holm over 2 does not
    above = [
        {"attacker": "a", "ci95": [0.01, 0.2], "diff": 0.1, "p_value": 0.03},
        {"attacker": "b", "ci95": [0.01, 0.2], "diff": 0.1, "p_value": 0.03},
    ]
    assert words_better(above) == [] and beyond_words_verdict(above).startswith("within")
    assert words_better([{**above[0], "p_value": 0.01}, above[1]]) == ["a", "b"]
    assert (
        words_better([{**above[0], "diff": -0.1, "p_value": 0.001}]) == []
    )  # the other direction never counts
    assert holm([0.04, None]) == [False, False]  # a missing p-value counts as 1: K stays 2


def test_the_cross_fitted_headline_reads_the_selected_cell_on_other_speakers():
    speakers = [f"s{i:02d}" for i in range(N_SPK)]
    order = np.random.default_rng(0).permutation(N_SPK)
    first = {speakers[i] for i in order[: N_SPK // 2]}
    rng = np.random.default_rng(1)

    def trials(good: set) -> Trials:
        rows = _scores(0, rng, per_speaker={s: 4.0 if s in good else 0.0 for s in speakers})
        enroll, test, spk, score, label = (list(x) for x in zip(*rows))
        return Trials(enroll, test, np.array(score), np.array(label), test_speaker=spk)

    cells = {
        "a": trials(first),
        "b": trials(set(speakers) - first),
    }  # each perfect on one half, chance on the other
    found = cross_fitted(cells, seed=0)
    assert set(found["picked"]) == {"a", "b"} and found["n_speakers"] == [15, 15]
    assert found["eer"] > 0.4  # each pick is read where it is at chance
    from sparc_eval.metrics.core import eer

    full = min(eer(t.score, t.label).eer for t in cells.values())
    assert full < found["eer"] - 0.1  # the selected minimum over all speakers is biased low


def test_the_headline_names_n_cells_and_keeps_the_probe_level_attack_apart(card, tmp_path):
    from sparc_eval.jobs.card.verdicts import CellTrials, content_rows, headlines

    root, cells = card
    probe = _cell(tmp_path, "p", _scores(2.5, np.random.default_rng(5)), {**WORDS, "split": False})
    with_probe = {
        **cells,
        "anon": {**cells["anon"], "tfidf": {"lazy-informed": {**probe, "folder": "../p"}}},
    }
    s = _settings(root)
    head = headlines(s, with_probe, content_rows(s, cells), CellTrials(root, with_probe))["anon"]
    assert head["n_cells"] == 3 and head["selected"] and head["attacker"] == "tfidf_utterances"
    cross = head["cross_fitted"]
    assert set(cross["picked"]) <= {
        "voice/lazy-informed",
        "phones/lazy-informed",
        "tfidf_utterances/lazy-informed",
    }
    assert cross["n_speakers"] == [15, 15] and cross["eer"] == pytest.approx(
        sum(cross["halves"]) / 2
    )
    assert head["probe_level"]["attacker"] == "tfidf"
    # text attackers alone: the probe-level cell is the headline, its keys kept
    alone = {"anon": {"tfidf": with_probe["anon"]["tfidf"]}}
    only = headlines(s, alone, {}, CellTrials(root, alone))["anon"]
    assert (
        only["attacker"] == "tfidf"
        and only["eer"] == only["probe_level"]["eer"]
        and only["trials"] == "probe-level"
    )


def test_words_only_weakness_is_relative_and_marks_the_rows(card, tmp_path):
    from sparc_eval.jobs.card.report import _privacy_table
    from sparc_eval.jobs.card.verdicts import CellTrials, strength

    root, cells = card
    rng = np.random.default_rng(7)
    weak = {
        "original": {"original": _cell(root, "o/bag", _scores(0.2, rng), WORDS)},
        "lazy-informed": _cell(root, "a/bag", _scores(0.3, rng), WORDS),
    }
    with_bag = {
        "original": {**cells["original"], "bag": {"original": weak["original"]["original"]}},
        "anon": {**cells["anon"], "bag": {"lazy-informed": weak["lazy-informed"]}},
    }
    s = _settings(root)
    found = strength(s, with_bag, CellTrials(root, with_bag))
    assert with_bag["original"]["bag"]["original"]["overall"]["eer"] >= 0.4
    assert found["bag"]["flags"] == ["weak"] and "words-only" in found["bag"]["warnings"][0]
    assert "the words identify few speakers" in found["bag"]["notes"][0]
    assert found["tfidf_utterances"]["flags"] == []  # the best words-only attacker: not weak
    # alone, the same words-only attacker at >= 40% is a content finding, not a weak attacker
    alone = {
        w: {a: by for a, by in c.items() if a in ("voice", "bag")} for w, c in with_bag.items()
    }
    solo = strength(s, alone, CellTrials(root, alone))
    assert solo["bag"]["flags"] == [] and solo["bag"]["warnings"] == [] and solo["bag"]["notes"]
    # the rows of a flagged attacker are marked where they appear
    doc = {
        "run": {"scenarios": ["original", "lazy-informed"]},
        "cells": with_bag,
        "strength": found,
    }
    table = "\n".join(_privacy_table(doc))
    assert (
        "| anon | bag‡ |" in table
        and "| anon | voice |" in table
        and "‡: an attacker flagged weak" in table
    )
    # every flag has its mark, in every section that names the attacker
    from sparc_eval.jobs.card.report import _comparisons, _reference

    found["voice"]["flags"] += ["wide", "learning"]
    assert "| anon | voice†§ |" in "\n".join(_privacy_table(doc))
    reference = "\n".join(
        _reference(
            {
                "anon": {
                    "lazy-informed": {
                        "eers": {"bag": {"eer": 0.4, "ci95": None}},
                        "lowest": "bag",
                        "k": 1,
                    }
                }
            },
            doc,
        )
    )
    assert "bag‡ 40.0%" in reference
    pair = {
        "comparisons": [
            {
                "a": "x",
                "b": "y",
                "utility": {},
                "eer": [
                    {
                        "attacker": "voice",
                        "scenario": "ignorant",
                        "eer_a": 0.1,
                        "eer_b": 0.2,
                        "diff": 0.1,
                        "ci95": [0.05, 0.15],
                        "paired": "speakers",
                        "verdict": "v",
                    }
                ],
            }
        ],
        "strength": found,
    }
    line = "\n".join(_comparisons(pair))
    assert "voice†§ (ignorant)" in line and "(same speakers (other trials))" in line


def test_the_learning_curve_warns_when_the_paired_ci_excludes_0():
    from sparc_eval.jobs.card.learning import learning_curves

    cells = {
        "mcadams": {
            "mel": {"ignorant": {"status": "ok", "overall": {"eer": 0.20}, "folder": "full"}}
        }
    }
    extra = {
        ("mcadams", "mel", "ignorant"): {
            0.5: {"status": "ok", "overall": {"eer": 0.28}, "folder": "h"}
        }
    }

    class Reader:
        def __init__(self, ci):
            self.ci = ci

        def compare_folders(self, a, b, s):
            return {"eer_diff": -0.08, "eer_diff_ci95": self.ci}

    # wide but below 0 (half-width 0.095 > 0.08: the old rule said nothing)
    (row,) = learning_curves(None, cells, extra, Reader([-0.20, -0.01]))
    assert "more training data" in row["warning"]
    (row,) = learning_curves(None, cells, extra, Reader([-0.10, 0.001]))
    assert row["warning"] is None


def _card_hparams(**overrides):
    from sparc_eval.attack import LIBRARY_KEYS
    from sparc_eval.hparams import load_hparams
    from sparc_eval.jobs.card.settings import CARD_DEFAULTED_KEYS

    return load_hparams(
        REPO / "hparams/evaluate.yaml",
        {"anonymizer": "mcadams", **overrides},
        library_keys=LIBRARY_KEYS | CARD_DEFAULTED_KEYS,
    )


def test_content_attacker_must_read_words_only():
    from sparc_eval.jobs.card.settings import CardSettings

    hp = _card_hparams(attackers_enabled=["resemblyzer", "phones", "mel"])
    with pytest.raises(DataError, match="content_attacker 'mel' reads the audio"):
        CardSettings.from_hparams({**hp, "content_attacker": "mel"})
    with pytest.raises(DataError, match="content_attacker 'tfidf' reads trials of its own"):
        CardSettings.from_hparams({**_card_hparams(), "content_attacker": "tfidf"})
    assert CardSettings.from_hparams(
        {**_card_hparams(), "content_attacker": "tfidf_utterances"}
    ).content_attacker


def test_an_attacker_with_other_split_keys_is_refused(tmp_path):
    from sparc_eval.jobs.card.settings import CardSettings

    text = (
        (REPO / "hparams/bag_of_phones.yaml")
        .read_text()
        .replace("scenario: original", "scenario: original\nn_enroll: 5")
    )
    (tmp_path / "bag.yaml").write_text(text)
    hp = _card_hparams(attackers_enabled=["resemblyzer", "phones", "bag"])
    hp["attackers"]["bag"] = {"hparams": str(tmp_path / "bag.yaml")}
    with pytest.raises(
        DataError,
        match=r"attacker 'bag' .* sets split keys the card does not share: n_enroll: 5 \(card: 20\)",
    ):
        CardSettings.from_hparams(hp)
    hp["n_enroll"] = (
        5  # the card sets it and passes it on: every attacker scores the same utterances
    )
    assert CardSettings.from_hparams(hp).data.n_enroll == 5


def test_one_class_at_two_settings_keeps_two_names():
    from sparc_eval.jobs.card.settings import anonymizer_specs

    specs = anonymizer_specs(
        {
            "anonymizer": ["mcadams", "anonymizers.mcadams.McAdams"],
            "anonymizer_options": {"McAdams": {"alpha": 0.7}},
        }
    )
    assert [a.name for a in specs] == ["mcadams", "McAdams"] and specs[1].options == {"alpha": 0.7}


def test_the_headline_gives_tpr_at_1pct_and_names_the_highest_tpr_cell(card):
    """The lowest-EER cell need not have the highest TPR at 1% FPR: the headline gives its own and
    names the cell with the highest one (issue 28)."""
    from sparc_eval.jobs.card.report import _headline
    from sparc_eval.jobs.card.verdicts import CellTrials, content_rows, headlines

    root, cells = card
    s = _settings(root)
    head = headlines(s, cells, content_rows(s, cells), CellTrials(root, cells))["anon"]
    tprs = {
        (a, sc): c["overall"]["tpr_at_fpr"]["0.01"]
        for a, by in cells["anon"].items()
        for sc, c in by.items()
    }
    mine = cells["anon"][head["attacker"]][head["scenario"]]["overall"]
    assert head["tpr_at_1pct"]["tpr"] == mine["tpr_at_fpr"]["0.01"]
    best = head["highest_tpr_at_1pct"]
    assert best["tpr"] == max(tprs.values()) == tprs[(best["attacker"], best["scenario"])]
    doc = {"headline": {"anon": {**head, "highest_tpr_at_1pct": {**best, "attacker": "other"}}}}
    lines = "\n".join(_headline(doc))
    assert "TPR at 1% FPR" in lines and "highest TPR at 1% FPR of the 3 cells: other" in lines
    assert head["beyond_eer"]["min_cllr"] == mine["min_cllr"] and "min Cllr" in lines
