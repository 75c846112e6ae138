"""Per-speaker and population-segment EERs, and evaluate_trials' null + not_applicable rule."""

import json

import numpy as np
import pytest

from sparc_eval.errors import DataError
from sparc_eval.metrics import core, evaluate_trials
from sparc_eval.metrics.breakdown import per_speaker_eer, segment_eers
from sparc_eval.metrics.panel import PANEL_KEYS
from sparc_eval.metrics.settings import trial_settings


def toy(seed=0, n_spk=7, utts=6):
    """Speakers s0..s6 enrolled as themselves; every test utterance scored against every
    enrollment speaker. Speaker s6 is never enrolled (no target trials)."""
    rng = np.random.default_rng(seed)
    spk = [f"s{i}" for i in range(n_spk)]
    enrolled = spk[:-1]
    enroll, test, score, label, utt2spk = [], [], [], [], {}
    for s in spk:
        for u in range(utts):
            utt = f"{s}-u{u}"
            utt2spk[utt] = s
            for e in enrolled:
                enroll.append(e)
                test.append(utt)
                label.append(e == s)
                score.append(rng.normal(1.0 if e == s else 0.0, 1.0))
    return np.array(enroll), np.array(test), np.array(score), np.array(label), utt2spk


ATTRS = {  # accent: A has 3 speakers, B 2 (skipped), s6 has no accent; sex: 4 F / 3 M
    "s0": {"accent": "Irish", "sex": "F", "age": 25},
    "s1": {"accent": "Irish", "sex": "F", "age": 70},
    "s2": {"accent": "Irish", "sex": "M", "age": 40},
    "s3": {"accent": "Nigerian", "sex": "M", "age": 41},
    "s4": {"accent": "Nigerian", "sex": "F", "age": 42},
    "s5": {"accent": "Jamaican", "sex": "M", "age": 43},
    "s6": {"accent": None, "sex": "F", "age": float("nan")},
}


def test_per_speaker_equals_subset_eer():
    enroll, test, score, label, utt2spk = toy()
    test_spk = np.array([utt2spk[t] for t in test])
    st = core.sort_trials(score, label)
    per, reasons = per_speaker_eer(st, test_spk)
    assert list(per) == sorted(per)
    for spk, row in per.items():
        mask = test_spk == spk
        assert row["n_target"] == label[mask].sum() and row["n_nontarget"] == (~label[mask]).sum()
        if spk == "s6":
            assert row["eer"] is None and reasons[spk] == "no target trials"
        else:
            assert row["eer"] == core.eer(score[mask], label[mask]).eer
    assert set(reasons) == {"s6"}


def test_segments_intra_inter_and_skipped():
    from sparc_eval.data.attributes import segment_table

    enroll, test, score, label, utt2spk = toy()
    test_spk = np.array([utt2spk[t] for t in test])
    table = segment_table(ATTRS)
    st = core.sort_trials(score, label)
    segs, skipped, reasons = segment_eers(st, enroll, test_spk, table)
    irish = {"s0", "s1", "s2"}
    intra = np.isin(test_spk, list(irish)) & np.isin(enroll, list(irish))
    inter = np.isin(test_spk, list(irish))
    assert segs["accent_group"]["Irish"] == {
        "intra_eer": core.eer(score[intra], label[intra]).eer,
        "inter_eer": core.eer(score[inter], label[inter]).eer,
        "n_speakers": 3,
    }
    assert ("accent_group", "Nigerian") in skipped and ("accent_group", "Jamaican") in skipped
    assert segs["sex"]["F"]["n_speakers"] == 4 and segs["sex"]["M"]["n_speakers"] == 3
    assert "<30" not in segs.get("age_group", {}) and skipped[("age_group", "<30")] == 1
    # s6 has no age or accent: it is in no segment of those attributes
    assert sum(v["n_speakers"] for v in segs["sex"].values()) == 7
    assert not reasons


def test_non_informative_accents_and_the_fine_grouping_in_segments():
    """Labels that name no accent make no segment, however many speakers give them; the fine
    grouping, made before evaluate_trials, reaches the segments unchanged."""
    from sparc_eval.data.attributes import segment_table

    enroll, test, score, label, utt2spk = toy()
    attrs = {
        **ATTRS,
        "s3": {"accent": "Fluent"},
        "s4": {"accent": "International"},
        "s5": {"accent": "Neutral"},
        "s1": {"accent": "Irish accent"},
        "s2": {"accent": " irish English "},
    }
    res = evaluate_trials(
        enroll,
        test,
        score,
        label,
        utt2spk=utt2spk,
        speakers=attrs,
        settings=trial_settings(n_boot=0),
    )
    assert set(res["segments"]["accent_group"]) == {"Irish"}
    assert not any(k.startswith("segments.accent_group.") for k in res["not_applicable"])
    fine = evaluate_trials(
        enroll,
        test,
        score,
        label,
        utt2spk=utt2spk,
        settings=trial_settings(n_boot=0),
        speakers=segment_table(attrs, accent_grouping="fine"),
    )
    assert fine["segments"]["accent_group"] == {"irish": res["segments"]["accent_group"]["Irish"]}


def test_evaluate_trials_full_document():
    enroll, test, score, label, utt2spk = toy()
    res = evaluate_trials(
        enroll,
        test,
        score,
        label,
        utt2spk=utt2spk,
        speakers=ATTRS,
        settings=trial_settings(n_boot=50),
    )
    assert set(res) == {"overall", "per_speaker", "segments", "not_applicable"}
    ov = res["overall"]
    assert set(ov) == {
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
    }
    assert set(ov["tpr_at_fpr"]) == {"0.01", "0.001"}
    assert set(ov["ci95"]) == {
        "eer",
        "auc",
        "tpr_at_fpr",
        "min_dcf",
        "min_cllr",
        "dece",
        "linkability",
        "mean_speaker_eer",
    }
    assert ov["eer"] == core.eer(score, label).eer
    na = res["not_applicable"]
    assert na["per_speaker.s6.eer"] == "no target trials"
    assert "skipped" in na["segments.accent_group.Nigerian"]
    assert res["per_speaker"]["s6"]["eer"] is None
    json.dumps(dict(res), allow_nan=False)  # plain JSON, no NaN
    assert res.curves["fpr"][0] == 0 and res.curves["tpr"][-1] == 1


def test_evaluate_trials_words_and_no_utt2spk():
    enroll, test, score, label, _ = toy()
    words = np.where(label, "target", "nontarget")
    res = evaluate_trials(enroll, test, score, words, settings=trial_settings(n_boot=0))
    assert res["per_speaker"] is None and "per_speaker" in res["not_applicable"]
    assert res["overall"]["ci95"] is None and "overall.ci95" in res["not_applicable"]
    assert res["segments"] == {} and "segments" in res["not_applicable"]
    res = evaluate_trials(
        enroll, test, score, words, speakers=ATTRS, settings=trial_settings(n_boot=0)
    )
    assert "utt2spk" in res["not_applicable"]["segments"]
    with pytest.raises(DataError, match="'maybe'"):
        evaluate_trials(
            enroll[:2], test[:2], score[:2], ["target", "maybe"], settings=trial_settings(n_boot=0)
        )


def test_one_class_gives_nulls_not_numbers():
    enroll, test, score, label, utt2spk = toy()
    keep = ~label
    res = evaluate_trials(
        enroll[keep],
        test[keep],
        score[keep],
        label[keep],
        utt2spk=utt2spk,
        settings=trial_settings(n_boot=20),
    )
    ov = res["overall"]
    assert ov["eer"] is None and ov["auc"] is None and ov["min_dcf"] is None and ov["ci95"] is None
    assert ov["tpr_at_fpr"] == {"0.01": None, "0.001": None}
    assert ov["n_target"] == 0 and ov["n_nontarget"] == keep.sum()
    assert "no target" in res["not_applicable"]["overall"]
    assert all(v["eer"] is None for v in res["per_speaker"].values())


def test_missing_speakers_are_errors():
    enroll, test, score, label, utt2spk = toy()
    partial = {k: v for k, v in utt2spk.items() if not k.startswith("s3-")}
    with pytest.raises(DataError, match="s3-u0"):
        evaluate_trials(
            enroll, test, score, label, utt2spk=partial, settings=trial_settings(n_boot=0)
        )
    attrs = {k: v for k, v in ATTRS.items() if k != "s4"}
    with pytest.raises(DataError, match="s4"):
        evaluate_trials(
            enroll,
            test,
            score,
            label,
            utt2spk=utt2spk,
            speakers=attrs,
            settings=trial_settings(n_boot=0),
        )


def test_enrollment_utterance_ids_map_through_utt2spk():
    enroll, test, score, label, utt2spk = toy()
    # enrollment models named by an utterance of the speaker instead of the speaker id
    enr_utt = {f"s{i}": f"s{i}-enr" for i in range(7)}
    full = {**utt2spk, **{u: s for s, u in enr_utt.items()}}
    by_utt = np.array([enr_utt[e] for e in enroll])
    a = evaluate_trials(
        enroll,
        test,
        score,
        label,
        utt2spk=utt2spk,
        speakers=ATTRS,
        settings=trial_settings(n_boot=0),
    )
    b = evaluate_trials(
        by_utt, test, score, label, utt2spk=full, speakers=ATTRS, settings=trial_settings(n_boot=0)
    )
    assert a["segments"] == b["segments"]


def test_speaker_bootstrap_through_evaluate():
    enroll, test, score, label, utt2spk = toy()
    res = evaluate_trials(
        enroll,
        test,
        score,
        label,
        utt2spk=utt2spk,
        settings=trial_settings(n_boot=50, bootstrap_unit="speaker"),
    )
    lo, hi = res["overall"]["ci95"]["eer"]
    assert lo <= hi
    with pytest.raises(DataError, match="utt2spk"):
        evaluate_trials(
            enroll,
            test,
            score,
            label,
            settings=trial_settings(n_boot=10, bootstrap_unit="speaker"),
        )


def test_write_report_from_library(tmp_path):
    from sparc_eval.metrics import write_report

    enroll, test, score, label, utt2spk = toy()
    res = evaluate_trials(
        enroll,
        test,
        score,
        label,
        utt2spk=utt2spk,
        speakers=ATTRS,
        settings=trial_settings(n_boot=30, seed=5),
    )
    written = write_report(
        tmp_path / "a", res, {"dataset": "toy", "seed": 5, "extra_key": 1}, plots=False
    )
    assert set(written) == {"results.json", "report.md"}
    doc = json.loads(written["results.json"].read_text())
    assert list(doc) == ["run", "overall", "per_speaker", "segments", "not_applicable"]
    assert (
        doc["run"]["dataset"] == "toy"
        and doc["run"]["features"] is None
        and doc["run"]["extra_key"] == 1
    )
    assert doc["overall"] == json.loads(json.dumps(dict(res)))["overall"]
    # a plain dict (no ROC points attached) still gets per-speaker and segment plots
    written = write_report(tmp_path / "b", dict(res), plots=True)
    assert {"per_speaker_eer.png", "segments.png"} <= set(written) and "roc.png" not in written
    doc = json.loads(written["results.json"].read_text())
    assert "plots.roc" in doc["not_applicable"]


def test_per_speaker_plot_names_a_few_speakers_and_draws_many_as_one_curve(tmp_path):
    """Up to MAX_NAMED_SPEAKERS a bar and a name each; beyond, the sorted EERs as one step curve
    in a figure of fixed width (1,000 bars made a figure 250 inches wide)."""
    from matplotlib.image import imread

    from sparc_eval.metrics.plots import MAX_NAMED_SPEAKERS, plot_per_speaker

    def per(n):
        return {
            f"s{i}": {"eer": (i % 50) / 100, "n_target": 5, "n_nontarget": 50} for i in range(n)
        }

    few = imread(plot_per_speaker(tmp_path / "few.png", per(MAX_NAMED_SPEAKERS)))
    many = imread(plot_per_speaker(tmp_path / "many.png", per(1000), overall_eer=0.2))
    assert few.shape[1] > many.shape[1]  # the named bars need the width; the curve does not
    assert many.shape[1] <= 8 * 150  # 8 inches at the plots' 120 dpi, with room to spare
