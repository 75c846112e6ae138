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
from sparc_eval.metrics.settings import trial_settings

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
        enroll,
        test,
        np.array(score),
        np.array(label),
        utt2spk=dict(zip(test, spk)),
        settings=trial_settings(n_boot=200),
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
    # no semi-informed audio attack ran: the words finding more than this attack is withheld
    assert row["verdict"].startswith("no verdict: tfidf_utterances finds more than voice here")
    assert "no semi-informed audio attack ran" in row["verdict"]
    # with one, it says what it shows and no more (issue 61)
    semi = {**cells["anon"]["voice"]["lazy-informed"], "needs": {**AUDIO, "training": True}}
    with_semi = {**cells, "anon": {**cells["anon"], "trained": {"semi-informed": semi}}}
    rows = voice_beyond_content(s, with_semi, CellTrials(root, with_semi))
    (row,) = [r for r in rows if r["attacker"] == "voice"]
    assert row["verdict"].startswith(
        "tfidf_utterances finds more than voice here; this says nothing about the voice beyond "
        "the words (Holm over 2, one-sided 2.5%)"
    )
    assert "bounded by content" not in row["verdict"]
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


def _halves_trials(n_spk: int, model_ids: bool = False, enrolled: bool = True) -> tuple:
    """Two cells on ``n_spk`` speakers (2 test utterances each, every one against every enrolled
    speaker) and the seed-0 halves :func:`cross_fitted` draws: "a" separates each half's own
    speakers well but scores every trial across the halves above all its targets; "b" is middling
    everywhere. ``model_ids``: enrollment ids are "m_<speaker>", named by ``enroll_speaker`` only
    with ``enrolled``."""
    speakers = [f"s{i:02d}" for i in range(n_spk)]
    order = np.random.default_rng(0).permutation(n_spk)
    first = {speakers[i] for i in order[: n_spk // 2]}
    rng = np.random.default_rng(3)
    rows = [(m, f"{s}_{k}", s) for s in speakers for k in range(2) for m in speakers]
    enr, test, spk = (list(x) for x in zip(*rows))
    label = np.array([m == s for m, s in zip(enr, spk)])
    across = np.array([(m in first) != (s in first) for m, s in zip(enr, spk)])
    a = np.where(label, 1.0, 0.0) + 0.3 * rng.normal(size=label.size)
    a = np.where(across, 5.0, a)
    b = np.where(label, 1.0, 0.0) + rng.normal(size=label.size)
    ids = [f"m_{m}" for m in enr] if model_ids else enr
    extra = {"enroll_speaker": enr} if model_ids and enrolled else {}
    cells = {
        k: Trials(ids, test, v, label, test_speaker=spk, **extra) for k, v in (("a", a), ("b", b))
    }
    return cells, first, set(speakers) - first


def test_the_cross_fitted_halves_keep_each_others_enrollment_out():
    """Issue 61, item 6: each half reads only trials whose enrolled and tested speakers are both in
    it, so a cell that is good within a half wins, read on the same-half trials of the other."""
    from sparc_eval.jobs.card.reference import _eer

    for model_ids in (False, True):  # enrolled speakers as the ids, or given by enroll_speaker
        cells, first, second = _halves_trials(16, model_ids=model_ids)
        found = cross_fitted(cells, seed=0)
        assert found["picked"] == ["a", "a"]
        assert found["enrollment_side"].startswith("same half")
        a = cells["a"]
        for value, read in zip(found["halves"], (second, first)):
            same = np.isin(a.test_speaker, list(read)) & np.isin(a.enroll_speakers, list(read))
            assert value == pytest.approx(_eer(a.score[same], a.label[same]))
        assert found["eer"] < 0.1
    # enrolled speakers unknown (ids that are not speakers, no enroll2spk): test speakers only,
    # said so; the cross-half trials then sink "a" and "b" is picked
    unknown = cross_fitted(_halves_trials(16, model_ids=True, enrolled=False)[0], seed=0)
    assert unknown["enrollment_side"] == "not restricted: enrolled speakers unknown"
    assert unknown["picked"] == ["b", "b"]


def test_the_cross_fitted_headline_is_small_below_min_verdict_speakers():
    from sparc_eval.jobs.card.report import _headline

    few = cross_fitted(_halves_trials(16)[0], seed=0)
    assert few["n_speakers"] == [8, 8]
    assert few["small"] == "too few speakers for a verdict (8 test speakers, fewer than 20)"
    assert cross_fitted(_halves_trials(16)[0], seed=0, min_verdict_speakers=8)["small"] is None
    enough = cross_fitted(_halves_trials(40)[0], seed=0)
    assert enough["n_speakers"] == [20, 20] and enough["small"] is None
    head = {"eer": 0.06, "ci95": [0.04, 0.09], "small": None, "n_cells": 6}
    head.update(attacker="voice", scenario="lazy-informed", tpr_at_1pct=None)
    cross = {**few, "eer": 0.066, "n_speakers": [12, 12]}
    lines = "\n".join(_headline({"headline": {"anon": {**head, "cross_fitted": cross}}}))
    assert "cross-fitted 6.6% (small: 12 speakers per half, no verdict)" in lines
    fine = {**enough, "eer": 0.066}
    lines = "\n".join(_headline({"headline": {"anon": {**head, "cross_fitted": fine}}}))
    assert "cross-fitted 6.6%;" in lines
    old = {**enough, "eer": 0.066, "enrollment_side": "not restricted: enrolled speakers unknown"}
    lines = "\n".join(_headline({"headline": {"anon": {**head, "cross_fitted": old}}}))
    assert "cross-fitted 6.6% (enrollment not restricted: enrolled speakers unknown)" in lines


def test_the_speakers_section_prints_the_held_out_eer_beside_the_in_sample_one():
    """Issue 61, item 8: the definitions page promises held-out EERs of the most identifiable
    speakers; the named lowest per-speaker EERs are labelled in-sample."""
    from sparc_eval.jobs.card.report import _speakers

    worst = {"k": 5, "floor": 5, "n_eligible": 24, "in_sample_eer": 0.02, "held_out_eer": 0.11}
    worst["speakers"] = [["s1", "s2", "s3", "s4", "s5"], ["s2", "s1", "s6", "s3", "s7"]]
    per = {"s1": {"eer": 0.0}, "s2": {"eer": 0.01}, "s3": {"eer": 0.03}, "s4": {"eer": 0.2}}
    cell = {"overall": {"eer": 0.06, "worst_speakers": worst}, "per_speaker": per}
    doc = {
        "headline": {"anon": {"attacker": "voice", "scenario": "lazy-informed"}},
        "cells": {"anon": {"voice": {"lazy-informed": cell}}},
    }
    lines = "\n".join(_speakers(doc, {"s1": "P1"}))
    assert "held-out EER 11.0% of the 5 picked" in lines and "in-sample 2.0%" in lines
    assert "lowest per-speaker EERs, in-sample (biased low): P1 (0.0%), s2 (1.0%), s3 (3.0%)" in (
        lines
    )
    cell["overall"]["worst_speakers"] = None
    lines = "\n".join(_speakers(doc, {}))
    assert "held-out EER not computed: fewer than 10 speakers have 5+ target trials" in lines
    why = "3 speakers have 5+ target trials in each half"
    cell["not_applicable"] = {"overall.worst_speakers": why}
    assert f"held-out EER not computed: {why}" in "\n".join(_speakers(doc, {}))


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

    found["voice"]["flags"] += ["wide", "learning"]  # wide marks the cell, not the attacker
    found["voice"]["cells"] = {"anon": {"lazy-informed": {"wide": "a 30-point CI"}}}
    marked = "\n".join(_privacy_table(doc))
    assert "| anon | voice§ |" in marked and "%]† |" in marked
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
    assert "voice§ (ignorant)" in line and "(same speakers (other trials))" in line


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
    from sparc_eval.jobs.card.settings import CardSettings

    return load_hparams(
        REPO / "hparams/evaluate.yaml",
        {"anonymizer": "mcadams", **overrides},
        library_keys=LIBRARY_KEYS | set(CardSettings.plain_keys()),
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


def _flagged_card(card, *, wide: bool, weak: bool, drop=(), semi=False):
    """The synthetic card with a second anonymizer (the same trials), a learning point for the
    voice attacker, and the voice cell made 30 points wide and/or the voice attacker weak."""
    import copy

    from sparc_eval.jobs.card.verdicts import card_verdicts

    root, cells = card
    cells = copy.deepcopy(cells)
    cells["anon2"] = copy.deepcopy(cells["anon"])
    voice = cells["anon"]["voice"]["lazy-informed"]
    voice["needs"] = {**AUDIO, "training": True}
    if wide:
        voice["overall"]["ci95"]["eer"] = [0.05, 0.35]
    s = _settings(
        root,
        learning_curve=True,
        utility={},
        weak_attacker=None,
    )
    if weak:  # the voice attacker at or above the weak EER on original speech
        s.weak_attacker_eer = cells["original"]["voice"]["original"]["overall"]["eer"]
    half = copy.deepcopy(cells["anon"]["voice"]["lazy-informed"])
    half["overall"]["ci95"]["eer"] = [0.0, 0.1]
    learning = {("anon", "voice", "lazy-informed"): {0.5: half}}
    for where in cells if drop else ():
        for attacker in drop:
            cells[where].pop(attacker)
    if "phones" in drop:
        s.content_attacker = None
    if semi:  # a semi-informed audio attack ran on both anonymizers' speech
        for where in ("anon", "anon2"):
            cells[where]["trained"] = {"semi-informed": copy.deepcopy(voice)}
    doc = card_verdicts(s, cells, {"anon": {}, "anon2": {}}, {}, learning=learning)
    return {**doc, "cells": cells, "run": {"scenarios": ["original", "lazy-informed"]}}


@pytest.mark.parametrize("flag", ["wide", "weak"])
def test_a_wide_cell_or_a_weak_attacker_gives_no_verdict_in_every_section(card, flag):
    """Issue 61, item 2: wide and small are per cell, weak per attacker, and any verdict that
    involves a flagged cell or attacker says "no verdict" and why, in every section naming it."""
    from sparc_eval.jobs.card.report import _beyond, _comparisons, _learning, _privacy_table

    doc = _flagged_card(card, wide=flag == "wide", weak=flag == "weak")
    said = (
        "no verdict: voice (anon, lazy-informed) is flagged wide: 95% CI [5.0%, 35.0%]"
        if flag == "wide"
        else "no verdict: voice is flagged weak: too weak to certify anything"
    )
    (beyond,) = [r for r in doc["voice_beyond_content"] if r["anonymizer"] == "anon"]
    assert beyond["verdict"].startswith(said)
    # phones is weak (TF-IDF finds more on the same trials): listed, but not in the verdict
    assert list(beyond["left_out"]) == ["phones"] and len(beyond["against"]) == 2
    (pair,) = doc["comparisons"]
    by_attacker = {e["attacker"]: e for e in pair["eer"]}
    assert by_attacker["voice"]["verdict"].startswith(said)
    assert (
        by_attacker["tfidf_utterances"]["verdict"]
        == "no significant difference (the 95% CI contains 0)"
    )
    (curve,) = doc["learning_curves"]
    assert curve["withheld"].startswith(said) and curve["warning"] is None
    report = "\n".join(_beyond(doc) + _comparisons(doc) + _learning(doc))
    assert report.count(said) >= 2 and "| anon | lazy-informed |" in "\n".join(_learning(doc))
    table = "\n".join(_privacy_table(doc))
    if flag == "wide":  # the flag is the cell's: its row's other cells are not marked
        assert doc["strength"]["voice"]["cells"]["anon"]["lazy-informed"]["wide"]
        rows = {
            "".join(line.split(" | ")[:2]): line
            for line in table.splitlines()
            if line.count(" | ") > 2
        }
        assert rows["| anonvoice"].endswith("35.0%]† |")  # the wide cell, and only it
        assert rows["| anonvoice"].count("†") == 1 and "†" not in rows["| anon2voice"]
    else:
        assert "| anon | voice‡ |" in table
    tests = doc["verdict_tests"]
    assert tests["withheld"] >= 3 and tests["by_section"]["anonymizer_eers"]["drawn"] >= 1


def test_the_run_section_counts_the_verdict_tests_and_their_level(card):
    from sparc_eval.jobs.card.report import _verdict_count

    doc = _flagged_card(card, wide=False, weak=False, drop=("phones",))  # phones is weak
    # without a semi-informed audio attack, "tfidf finds more than voice" is withheld
    assert doc["verdict_tests"]["by_section"]["voice_beyond_content"] == {"drawn": 0, "withheld": 2}
    doc = _flagged_card(card, wide=False, weak=False, drop=("phones",), semi=True)
    tests = doc["verdict_tests"]
    # one words-only attacker against the voice cell, on both anonymizers
    assert tests["by_section"]["voice_beyond_content"] == {"drawn": 2, "withheld": 0}
    assert tests["by_section"]["anonymizer_eers"]["drawn"] == 2
    # a weak words-only attacker is listed but leaves the verdict (and its count) to the others
    kept = _flagged_card(card, wide=False, weak=False, semi=True)
    assert kept["verdict_tests"]["by_section"]["voice_beyond_content"]["drawn"] == 2
    for row in kept["voice_beyond_content"]:
        if row["attacker"] == "voice":
            assert list(row["left_out"]) == ["phones"]
            assert row["verdict"].startswith("tfidf_utterances finds more than voice here")
    (line,) = _verdict_count(doc)
    assert f"Verdict tests: {tests['drawn']} drawn" in line
    assert "one-sided at 2.5%" in line and "none corrected for their number" in line


def test_the_probe_level_words_attacker_follows_the_words_only_rule(card, tmp_path):
    """Issue 61, item 4: a probe-level text attacker's high EER is a content finding, never the
    audio attackers' weak rule (which needed a split)."""
    from sparc_eval.jobs.card.verdicts import CellTrials, strength

    root, cells = card
    rng = np.random.default_rng(11)
    probes = {**WORDS, "split": False}
    cell = _cell(root, "o/tfidf_probes", _scores(0.1, rng), probes)
    with_probes = {
        "original": {**cells["original"], "tfidf": {"original": cell}},
        "anon": {**cells["anon"], "tfidf": {"lazy-informed": cell}},
    }
    s = _settings(root)
    assert cell["overall"]["eer"] >= s.weak_attacker_eer
    found = strength(s, with_probes, CellTrials(root, with_probes))["tfidf"]
    assert "weak" not in found["flags"] and not found["warnings"]
    assert "a content finding, not a weak attacker" in found["notes"][0]


def test_the_semi_informed_departure_needs_an_audio_attacker_that_trained_on_it():
    """Issue 61, item 1: asking for the scenario is not running it."""
    from sparc_eval.jobs.card.flags import semi_informed_ran

    refused = {"status": "not_applicable", "needs": {**AUDIO, "training": False}}
    words = {"status": "ok", "needs": {**WORDS, "training": True}}
    back_end = {
        "status": "ok",
        "needs": {**AUDIO, "training": True},
        "scenario_label": "semi-informed (back-end)",
    }
    trained = {"status": "ok", "needs": {**AUDIO, "training": True}}
    for cell, ran in ((refused, False), (words, False), (back_end, False), (trained, True)):
        cells = {"original": {}, "anon": {"a": {"semi-informed": cell}}}
        assert semi_informed_ran(cells) is ran
        assert semi_informed_ran(cells, "other") is False


def test_a_card_written_before_the_per_cell_flags_keeps_its_marks():
    """`sparc-eval report` on a results.json without `strength.*.cells` marks wide and small on
    the attacker, as it was written."""
    from sparc_eval.jobs.card.report import _mark_legend, _marks

    old = {"strength": {"voice": {"flags": ["wide", "small", "learning"]}}}
    new = {"strength": {"voice": {"flags": ["wide", "small", "learning"], "cells": {}}}}
    assert _marks(old, "voice") == "†§" and _marks(new, "voice") == "§"
    assert any(line.startswith("- †") for line in _mark_legend(old))
    assert not any(line.startswith("- †") for line in _mark_legend(new))
