"""Protocol fidelity of the SPARC text evaluation (hand-made fixtures): L is a maximum, the
paper's presets, shared-text removal only where a loader marks read passages, ablations and
scorer comparisons, speaker-level CIs, unscored trials, provenance."""

import json
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from attackers.text.stylometric import StylometricScorer
from attackers.text.tfidf import TfidfScorer
from sparc_eval.data.manifest import Manifest, Utterance
from sparc_eval.jobs.text import SharedTextConfig, TrialBuilder, TrialConfig, detect_shared_text
from sparc_eval.jobs.text.cli import load_hparams
from sparc_eval.jobs.text.evaluate import (
    evaluate_text,
    parse_settings,
    remove_shared_text,
    trial_config_from_hparams,
)
from sparc_eval.jobs.text.settings import TextEvaluationOptions
from sparc_eval.metrics.settings import BootstrapSettings, trial_settings
from sparc_eval.text_trials.trials import EN, EP, HN, HP

REPO = Path(__file__).resolve().parents[1]
SAME = {"sex": "female", "age": 25, "accent": "American"}


def words(tag, n):
    return " ".join(f"{tag}{i}" for i in range(n))


def manifest(rows, attrs=None, series=None, meta=None, **kwargs):
    """rows: (speaker, episode, text); attrs: speaker -> sex/age/accent; series, meta: per episode."""
    utts, counter = [], {}
    for spk, ep, text in rows:
        k = counter[(spk, ep)] = counter.get((spk, ep), -1) + 1
        a = (attrs or {}).get(spk, {})
        utts.append(
            Utterance(
                id=f"{spk}-{ep}-{k:03d}".replace(" ", "_"),
                speaker=spk,
                text=text,
                episode=ep,
                sex=a.get("sex"),
                age=a.get("age"),
                accent=a.get("accent"),
                series=(series or {}).get(ep),
                extra=dict((meta or {}).get(ep, {})),
            )
        )
    return Manifest(utts, name="toy", **kwargs)


def preset(name, **changes) -> TrialConfig:
    hp = load_hparams(REPO / "hparams" / "text" / f"{name}.yaml", {"output_folder": "unused"})
    return replace(trial_config_from_hparams(hp), **changes)


def pairs(ts, label=None):
    return {
        (r["probe"]["episode"], r["enroll"]["episode"])
        for r in ts.records
        if label is None or r["label"] == label
    }


# ----------------------------------------------------------------------------- rule 6: L is a maximum


def test_L_is_a_maximum_so_a_larger_L_keeps_the_smaller_Ls_trials():
    rows = [("A", "e1", words(f"a1x{i}w", 5)) for i in range(12)] + [
        ("B", "e1", words(f"b{i}w", 5)) for i in range(6)
    ]
    rows += [("A", "e2", words(f"a2x{i}w", 5)) for i in range(6)] + [
        ("C", "e3", words(f"c{i}w", 5)) for i in range(6)
    ]
    rows += [
        ("D", "e4", words("d", 5))
    ]  # one utterance: too short for a probe, still an enrollment
    m = manifest(rows)
    cfg = TrialConfig(P=10, L=3, tolerance=0, max_probes=3, partners={EN: 5})
    key = lambda r: (r["probe"]["id"], r["enroll"]["speaker"], r["enroll"]["episode"], r["type"])
    alone = TrialBuilder(m, cfg, L_max=3).build("speaker", [3])[3]
    both = TrialBuilder(m, cfg, L_max=8).build("speaker", [3, 8])
    # adding L=8 to the run removes no L=3 trial, and L=8 has the same trials
    assert [key(r) for r in both[3].records] == [key(r) for r in alone.records]
    assert [key(r) for r in both[8].records] == [key(r) for r in alone.records]
    n_utts = {
        r["enroll"]["speaker"]: len(r["enroll"]["utt_ids"])
        for r in both[8].records
        if r["type"] == EN
    }
    assert n_utts["C"] == 6 and n_utts["D"] == 1  # fewer than L: enroll with what they have
    assert all(1 <= len(r["enroll"]["utt_ids"]) <= 8 for r in both[8].records)
    assert both[8].meta["enrollments_short_of_L"] > 0 and both[3].meta["enrollments_short_of_L"] > 0


# ----------------------------------------------------------------------------- rule 7: presets


def test_presets_follow_appendix_A1():
    from sparc_eval.text_trials.protocol import PROTOCOLS, trial_deviations

    for name in ("naturalvoices", "sporc"):
        hp = load_hparams(REPO / "hparams" / "text" / f"{name}.yaml", {"output_folder": "unused"})
        cfg = trial_config_from_hparams(hp)
        assert hp["protocol"] == name and hp["bootstrap_unit"] == "two_way"
        assert parse_settings(hp["P"], hp["L"], hp["settings"]) == [
            (200, 20),
            (200, 5),
            (50, 20),
            (50, 5),
        ]
        assert trial_deviations(cfg, name, topic_on=name == "sporc") == {}
        assert (
            cfg.max_probes == 1 and cfg.shared_text.enabled is False
        )  # one probe per (speaker, podcast)
    nv = PROTOCOLS["naturalvoices"]["trials"]
    assert (
        set(nv["partners"].values()) == {1}
        and not nv["overlap_screen"]
        and nv["name_screen"] == "off"
    )
    sporc = PROTOCOLS["sporc"]["trials"]
    assert (
        sporc["partners"][EP] == sporc["partners"][HN] == 0
        and sporc["attribute_partners"]["same_episode"] == 0
    )
    assert sporc["match_negatives"] == ("sex", "age", "accent") and sporc["negatives_cross_series"]
    assert (
        sporc["overlap_screen"]
        and sporc["overlap_min_words"] == 1
        and sporc["name_screen"] == "speaker_positives"
    )
    assert sporc["topic_control"] == "on" and not sporc["positives_cross_series"]


def test_generic_files_name_their_departures():
    from sparc_eval.text_trials.protocol import trial_deviations

    cfg = preset("tfidf")
    assert cfg.max_probes == 10 and cfg.overlap_min_words == 5 and cfg.name_screen == "all"
    dev = trial_deviations(cfg, "naturalvoices", topic_on=False)
    assert {"max_probes", "partners", "attribute_partners", "overlap_screen", "name_screen"} <= set(
        dev
    )
    assert "yeah" in trial_deviations(cfg, "sporc", topic_on=True)["overlap_min_words"]


def test_naturalvoices_preset_one_probe_and_one_partner_per_type():
    rows = [
        (s, e, words(f"{s}{e}x{i}w", 5))
        for s, e in [("A", "e1"), ("B", "e1"), ("A", "e2"), ("C", "e2"), ("C", "e3"), ("B", "e3")]
        for i in range(12)
    ]
    m = manifest(rows, attrs={s: SAME for s in "ABC"})
    builder = TrialBuilder(m, preset("naturalvoices", P=10, L=3), L_max=3)
    ts = builder.build("speaker", [3])[3]
    assert builder.stats("speaker")["probes"] == 6  # one per (speaker, episode)
    per = {}
    for r in ts.records:
        per.setdefault((r["probe"]["id"], r["type"]), []).append(r)
    assert max(len(v) for v in per.values()) == 1 and {t for _, t in per} == {EP, HP, EN, HN}
    sex = TrialBuilder(m, preset("naturalvoices", P=10, L=3), L_max=3).build("sex", [3])[3]
    assert len(sex) <= 2 * 6  # one same-episode and one cross-episode partner per probe


def sporc_corpus(first_lines=None, other_sex=("Eve Stone",)):
    """Single-speaker episodes: Alice in series s1 (e1, e2) and s2 (e3); Bob, Carol, Dan, Eve in their
    own series; ``other_sex`` differ in sex (never negatives for Alice). Distinct titles, one category."""
    owners = {
        "e1": "Alice Smith",
        "e2": "Alice Smith",
        "e3": "Alice Smith",
        "e4": "Bob Jones",
        "e5": "Carol King",
        "e6": "Dan Brown",
        "e7": "Eve Stone",
    }
    series = {"e1": "s1", "e2": "s1", "e3": "s2", "e4": "s3", "e5": "s4", "e6": "s5", "e7": "s6"}
    meta = {
        e: {"title": f"title{e}", "description": f"about{e}", "category": "Talk"} for e in owners
    }
    rows = []
    for e, spk in owners.items():
        if first_lines and e in first_lines:
            rows.append((spk, e, first_lines[e]))
        rows += [(spk, e, words(f"{e}x{i}w", 5)) for i in range(6)]
    attrs = {s: {**SAME, "sex": "male"} if s in other_sex else SAME for s in owners.values()}
    return manifest(rows, attrs=attrs, series=series, meta=meta)


def test_sporc_preset_pairs_matched_cross_series_and_balanced():
    m = sporc_corpus()
    builder = TrialBuilder(m, preset("sporc", P=10, L=3), L_max=3)
    ts = builder.build("speaker", [3])[3]
    series = {u.episode: u.series for u in m}
    assert ts.type_counts()[EP] == ts.type_counts()[HN] == 0
    neg = [r for r in ts.records if r["label"] == 0]
    assert neg and all(series[r["probe"]["episode"]] != series[r["enroll"]["episode"]] for r in neg)
    assert all(
        "Eve Stone" not in (r["probe"]["speaker"], r["enroll"]["speaker"]) for r in neg
    )  # matched on sex
    assert int(ts.labels.sum()) == len(neg)  # balanced classes
    assert builder.stats("speaker")["topic_control"] is True
    for task in ("sex", "age", "accent"):
        t = TrialBuilder(m, preset("sporc", P=10, L=3), L_max=3).build(task, [3])[3]
        assert 2 * int(t.labels.sum()) == len(t)
    # appendix A.4: positives must cross series too
    every = {EP: 0, HP: 2, EN: 1, HN: 0}
    for flag, same_series_positives in ((False, True), (True, False)):
        cfg = preset("sporc", P=10, L=3, partners=every, positives_cross_series=flag)
        pos = [
            r
            for r in TrialBuilder(m, cfg, L_max=3).build("speaker", [3])[3].records
            if r["label"] == 1
        ]
        assert (
            pos
            and any(series[r["probe"]["episode"]] == series[r["enroll"]["episode"]] for r in pos)
            is same_series_positives
        )


def test_sporc_name_screen_only_on_positive_speaker_trials():
    m = sporc_corpus(
        {"e3": "alice here again with you", "e4": "thanks alice for coming on"},
        other_sex=("Carol King", "Dan Brown", "Eve Stone"),
    )  # Bob: Alice's only negative
    ts = TrialBuilder(m, preset("sporc", P=10, L=3, tolerance=0), L_max=3).build("speaker", [3])[3]
    assert ("e1", "e3") not in pairs(ts, 1) and ("e1", "e2") in pairs(
        ts, 1
    )  # a positive naming the speaker
    assert ("e1", "e4") in pairs(
        ts, 0
    )  # Bob naming Alice in a negative trial is no leak of the answer
    everywhere = TrialBuilder(
        m, preset("sporc", P=10, L=3, tolerance=0, name_screen="all"), L_max=3
    )
    assert ("e1", "e4") not in pairs(everywhere.build("speaker", [3])[3], 0)


def test_sporc_overlap_screen_has_no_minimum_length():
    m = sporc_corpus(
        {"e1": "yeah", "e2": "yeah", "e4": "yeah", "e5": "yeah", "e6": "yeah", "e7": "yeah"}
    )
    builder = TrialBuilder(m, preset("sporc", P=10, L=3), L_max=3)
    ts = builder.build("speaker", [3])[3]
    assert builder.stats("speaker")["excluded_overlap"] > 0
    assert not any(p == "e1" for p, _ in pairs(ts))  # every partner of e1's probe shares its "yeah"
    generic = TrialBuilder(m, preset("sporc", P=10, L=3, overlap_min_words=5), L_max=3)
    generic.build("speaker", [3])
    assert generic.stats("speaker")["excluded_overlap"] == 0


# ----------------------------------------------------------------------------- rule 8: shared text


PASSAGE = "please call stella ask her to bring these things with her from the store"


def read_corpus(n_speakers, idiom_speakers=0, **kwargs):
    rows = []
    for k in range(n_speakers):
        rows.append((f"S{k}", f"c{k}", f"okay so {PASSAGE}"))
        rows.append((f"S{k}", f"c{k}", f"my own words number {k} about my {k} cats and dogs"))
        if k < idiom_speakers:
            rows.append((f"S{k}", f"c{k}", "you know what i mean"))
    return manifest(rows, **kwargs)


def test_shared_text_auto_is_on_only_where_the_loader_marks_read_passages():
    default = TrialConfig().shared_text
    assert default.enabled == "auto" and default.min_speakers == "auto"
    marked = read_corpus(6, read_passages=True)
    _, res = remove_shared_text(marked, default)
    assert res.n_removed == 6 and res.settings["enabled"] is True
    assert (
        remove_shared_text(marked.subset(lambda u: True), default)[1].n_removed == 6
    )  # subsets keep the mark
    _, res = remove_shared_text(read_corpus(6), default)
    assert (
        res.n_removed == 0
        and res.settings["enabled"] is False
        and res.requested["enabled"] == "auto"
    )


def test_edacc_loaders_mark_read_passages(tmp_path):
    from sparc_eval.data.corpora import load_corpus

    def datafile(name, ids):
        path = tmp_path / name
        path.write_text(
            "".join(
                json.dumps({"path": f"{{root}}/{i}.wav", "label": spk, "text": "some words here"})
                + "\n"
                for i, spk in ids
            )
        )
        return path

    edacc = datafile(
        "edacc.txt",
        [("EDACC-C01_P1-000000001", "EDACC-C01-A"), ("EDACC-C01_P2-000000002", "EDACC-C01-B")],
    )
    libri = datafile("libri.txt", [("1089-134686-0000", "1089"), ("1089-134686-0001", "1089")])
    release = (
        tmp_path / "edacc_v1.0"
    )  # the release layout (sparc_eval/data/corpora/edacc.py), text only
    (release / "test").mkdir(parents=True)
    (release / "test" / "segments").write_text("EDACC-C01_P1-000000001 EDACC-C01_P1 1.0 2.0\n")
    (release / "test" / "utt2spk").write_text("EDACC-C01_P1-000000001 EDACC-C01-A\n")
    (release / "test" / "text").write_text("EDACC-C01_P1-000000001 please call stella\n")
    (release / "linguistic_background.csv").write_text(
        "PARTICIPANT_ID,What is your gender?\nEDACC-C01-A,Female\n"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert load_corpus(edacc).read_passages is True
        assert load_corpus(release).read_passages is True
        assert load_corpus(libri).read_passages is False
    # EdAcc in any other layout (a JSON-lines manifest here), and corpora that flag scripted utterances
    from sparc_eval.data.manifest import Manifest, Utterance

    Manifest([Utterance(id="EDACC-C01-000000001", speaker="EDACC-C01-A", text="w")]).write_jsonl(
        tmp_path / "e.jsonl"
    )
    Manifest([Utterance(id="d1", speaker="s", text="w", extra={"scripted": True})]).write_jsonl(
        tmp_path / "d.jsonl"
    )
    assert (
        load_corpus(tmp_path / "e.jsonl").read_passages
        and load_corpus(tmp_path / "d.jsonl").read_passages
    )


def test_shared_text_threshold_scales_with_the_speakers():
    from sparc_eval.text_trials.shared_text import auto_min_speakers

    assert auto_min_speakers(60) == 5 and auto_min_speakers(12_500) == 625
    # small end: EdAcc's 60 speakers, a passage everyone reads, an idiom 4 of them say
    small = read_corpus(60, idiom_speakers=4)
    res = detect_shared_text(small)
    assert res.settings["min_speakers"] == 5 and res.n_removed == 60
    assert res.n_removed == detect_shared_text(small, SharedTextConfig(min_speakers=5)).n_removed
    # large end: 2,000 speakers; 40 (2%) say an idiom: a fixed 5 removes it, auto keeps it
    large = read_corpus(2000, idiom_speakers=40)
    fixed = detect_shared_text(large, SharedTextConfig(min_speakers=5))
    auto = detect_shared_text(large)
    assert (
        fixed.n_removed == 2040 and auto.n_removed == 2000 and auto.settings["min_speakers"] == 100
    )
    assert auto.requested["min_speakers"] == "auto" and auto.n_speakers == 2000


# ----------------------------------------------------------------------------- rules 9-11 and provenance


def conversations():
    """Six speakers, six two-speaker episodes, each speaker in two: all four trial types, 40
    utterances of 25 words per appearance (long enough for P200 L20)."""
    rng = np.random.default_rng(0)
    common = [f"c{i}" for i in range(60)]
    episodes = [("S0", "S1"), ("S2", "S3"), ("S4", "S5"), ("S0", "S2"), ("S1", "S4"), ("S3", "S5")]
    rows = []
    for e, speakers in enumerate(episodes):
        for _ in range(40):
            for spk in speakers:
                vocab = (
                    common + [f"{spk}w{i}" for i in range(40)] + [f"e{e}t{i}" for i in range(20)]
                )
                rows.append((spk, f"e{e}", " ".join(rng.choice(vocab, 25))))
    return manifest(
        rows, attrs={f"S{k}": {**SAME, "sex": "female" if k % 2 else "male"} for k in range(6)}
    )


SETTINGS = [(200, 20), (200, 5), (50, 20), (50, 5)]


class Gappy(TfidfScorer):
    """TF-IDF that gives no score to every fourth trial (an LLM reply without a number)."""

    name = "gappy"

    def score(self, trials):
        s = np.array(super().score(trials), dtype=float)
        s[::4] = np.nan
        return s


def read_scores(path):
    return [line.split() for line in Path(path).read_text().splitlines()]


@pytest.mark.slow("every P and L ablation with paired comparisons: about 3 s")
def test_ablations_and_paired_scorer_comparisons(tmp_path):
    from sparc_eval.metrics import paired_bootstrap

    out = tmp_path / "out"
    doc = evaluate_text(
        conversations(),
        [TfidfScorer(), StylometricScorer(min_df=1)],
        tasks=["speaker", "sex"],
        settings=SETTINGS,
        options=TextEvaluationOptions(n_boot=30, plots=False),
        output_folder=out,
    )
    assert doc["run"]["scorers"] == ["tfidf", "stylometric"] and set(doc["scorers"]) == {
        "tfidf",
        "stylometric",
    }
    assert doc["tasks"] == doc["scorers"]["tfidf"]["tasks"]
    assert all(doc["scorers"][n]["scoring_s"] > 0 for n in ("tfidf", "stylometric"))
    abl = doc["ablations"]
    assert abl["base"] == "P200_L20"
    for name, tasks in doc["scorers"].items():
        base = tasks["tasks"]["speaker"]["P200_L20"]["conditions"]
        for key in ("P200_L5", "P50_L20", "P50_L5"):
            for cond, d in abl["by_scorer"][name]["speaker"][key].items():
                block = tasks["tasks"]["speaker"][key]["conditions"][cond]
                assert d["eer"] == pytest.approx(block["eer"] - base[cond]["eer"])
                assert d["auc"] == pytest.approx(block["auc"] - base[cond]["auc"])
    rows = [
        r
        for r in doc["comparisons"]
        if (r["task"], r["setting"], r["condition"]) == ("speaker", "P50_L5", "combined")
    ]
    assert len(rows) == 1 and (rows[0]["scorer_a"], rows[0]["scorer_b"]) == ("tfidf", "stylometric")
    a = read_scores(out / "scores" / "speaker_P50_L5.txt")
    b = read_scores(out / "scores" / "stylometric" / "speaker_P50_L5.txt")
    trials = [
        json.loads(line)
        for line in (out / "trials" / "speaker_P50_L5.jsonl").read_text().splitlines()
    ]
    again = paired_bootstrap(
        [float(x[2]) for x in a],
        [float(x[2]) for x in b],
        [x[3] == "target" for x in a],
        boot=BootstrapSettings(n_boot=30, unit="two_way"),
        groups=[t["probe"]["speaker"] for t in trials],
        enroll_groups=[t["enroll"]["speaker"] for t in trials],
    )
    assert rows[0]["diff"]["eer"] == pytest.approx(again.diff["eer"])
    assert rows[0]["ci95"]["eer"] == pytest.approx(again.ci95["eer"])
    report = (out / "report.md").read_text()
    assert (
        "## Ablations" in report and "Scorer comparisons" in report and "### stylometric" in report
    )


def test_cis_resample_the_speakers_on_both_sides_by_default(tmp_path):
    from sparc_eval.metrics import evaluate_trials

    out = tmp_path / "out"
    doc = evaluate_text(
        conversations(),
        TfidfScorer(),
        settings=[(50, 5)],
        options=TextEvaluationOptions(n_boot=40, plots=False),
        output_folder=out,
    )
    assert doc["run"]["bootstrap_unit"] == "two_way" and not any(
        k.startswith("bootstrap_unit") for k in doc["run"]["deviations"]
    )
    scores = read_scores(out / "scores" / "speaker_P50_L5.txt")
    trials = [
        json.loads(line)
        for line in (out / "trials" / "speaker_P50_L5.jsonl").read_text().splitlines()
    ]
    again = evaluate_trials(
        [s[0] for s in scores],
        [s[1] for s in scores],
        [float(s[2]) for s in scores],
        [s[3] for s in scores],
        utt2spk={t["probe"]["id"]: t["probe"]["speaker"] for t in trials},
        enroll2spk={t["enroll"]["id"]: t["enroll"]["speaker"] for t in trials},
        settings=trial_settings(n_boot=40, seed=0, bootstrap_unit="two_way"),
    )
    block = doc["tasks"]["speaker"]["P50_L5"]["conditions"]["combined"]
    assert again.details["bootstrap"]["unit"] == "two_way"
    assert block["ci95"]["eer"] == pytest.approx(again["overall"]["ci95"]["eer"])
    report = (out / "report.md").read_text()
    assert "bootstrap resamples of speakers on both sides of the trials" in report
    doc = evaluate_text(
        conversations(),
        TfidfScorer(),
        settings=[(50, 5)],
        options=TextEvaluationOptions(n_boot=40, bootstrap_unit="trial"),
    )
    assert (
        doc["run"]["bootstrap_unit"] == "trial"
        and "bootstrap_unit_trial" in doc["run"]["deviations"]
    )
    assert (
        doc["tasks"]["speaker"]["P50_L5"]["conditions"]["combined"]["ci95"]["eer"]
        != block["ci95"]["eer"]
    )


def test_unscored_trials_are_listed_and_left_out_of_the_score_file(tmp_path):
    out = tmp_path / "out"
    doc = evaluate_text(
        conversations(),
        Gappy(),
        settings=[(50, 5)],
        options=TextEvaluationOptions(n_boot=0, plots=False),
        output_folder=out,
    )
    block = doc["tasks"]["speaker"]["P50_L5"]
    trials = [
        json.loads(line)
        for line in (out / "trials" / "speaker_P50_L5.jsonl").read_text().splitlines()
    ]
    text = (out / "scores" / "speaker_P50_L5.txt").read_text()
    assert "nan" not in text.lower()
    assert block["unscored"] == [t["id"] for t in trials[::4]] and block["missing_scores"] == len(
        trials[::4]
    )
    assert len(text.splitlines()) == len(trials) - block["missing_scores"]
    assert f"{block['missing_scores']} unscored trials" in (out / "report.md").read_text()


def test_results_carry_environment_and_deviations(tmp_path):
    out = tmp_path / "out"
    doc = evaluate_text(
        read_corpus(8, read_passages=True),
        TfidfScorer(),
        settings=[(5, 2)],
        options=TextEvaluationOptions(n_boot=0, plots=False),
        config=TrialConfig(tolerance=1),
        output_folder=out,
    )
    run = doc["run"]
    assert {"python", "packages", "cpu_count"} <= set(run["environment"])
    assert {"max_probes", "partners", "shared_text"} <= set(run["deviations"]) and run[
        "protocol"
    ] == "naturalvoices"
    report = (out / "report.md").read_text()
    assert (
        "## Deviations from the paper" in report
        and "## Environment" in report
        and "`shared_text`" in report
    )


def test_text_attackers_read_the_words_anonymized_speech_says(tmp_path):
    """The content-leakage rule for text attackers: an STT-TTS corpus is scored on its own
    transcripts; its reference text only when asked for by name, recorded as a deviation."""
    import json as _json

    from attackers.text.tfidf import TfidfScorer
    from sparc_eval.jobs.text.evaluate import evaluate_from_hparams

    rows = []
    for spk in ("a", "b", "c", "d"):
        for ep in range(3):
            for k in range(6):
                rows.append(
                    {
                        "id": f"{spk}{ep}{k}",
                        "speaker": spk,
                        "episode": f"{spk}-{ep}",
                        "text": f"{spk} book word{spk} line {k} of chapter {ep} " * 3,
                        "extra": {
                            "anonymizer": "stt_tts",
                            "keeps_words": False,
                            "asr_text": "the same words for everybody here " * 3,
                        },
                    }
                )
    path = tmp_path / "anon.jsonl"
    path.write_text("".join(_json.dumps(r) + "\n" for r in rows))
    base = {
        "data_folder": str(path),
        "scorer": TfidfScorer(),
        "tasks": ["speaker"],
        "settings": [[20, 2]],
        "n_boot": 0,
        "plots": False,
        "shared_text": False,
        "max_probes": 2,
        "tolerance": 5,
        "overlap_screen": False,
    }
    spoken = _json.loads(
        evaluate_from_hparams({**base, "output_folder": str(tmp_path / "s")}).read_text()
    )
    forced = _json.loads(
        evaluate_from_hparams(
            {**base, "output_folder": str(tmp_path / "r"), "words": "reference"}
        ).read_text()
    )
    eer = [
        d["tasks"]["speaker"]["P20_L2"]["conditions"]["combined"]["eer"] for d in (spoken, forced)
    ]
    assert eer[0] >= 0.4 and eer[1] < 0.2  # identical transcripts say nothing; the books identify
    assert (
        spoken["run"]["words"] == "spoken"
        and "reference_text_of_anonymized_speech" not in spoken["run"]["deviations"]
    )
    assert "reference_text_of_anonymized_speech" in forced["run"]["deviations"]


def test_text_corpus_anonymized_by_another_tool_must_declare_its_words(tmp_path):
    import json as _json

    from attackers.text.tfidf import TfidfScorer
    from sparc_eval.errors import DataError
    from sparc_eval.jobs.text.evaluate import evaluate_from_hparams

    rows = [
        {
            "id": f"{s}{k}",
            "speaker": s,
            "episode": f"{s}-{k % 2}",
            "text": f"{s} says line {k} " * 4,
        }
        for s in "abc"
        for k in range(8)
    ]
    (tmp_path / "c.jsonl").write_text("".join(_json.dumps(r) + "\n" for r in rows))
    hp = {
        "data_folder": str(tmp_path / "c.jsonl"),
        "output_folder": str(tmp_path / "o"),
        "scorer": TfidfScorer(),
        "tasks": ["speaker"],
        "settings": [[10, 2]],
        "n_boot": 0,
        "plots": False,
        "anonymized": True,
    }
    with pytest.raises(DataError, match="anon_keeps_words"):
        evaluate_from_hparams(hp)
    assert evaluate_from_hparams({**hp, "anon_keeps_words": True}).is_file()
