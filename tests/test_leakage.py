"""recipes/compare_leakage.py: real LibriSpeech test-clean vs EdAcc test transcripts, the demo
corpus in both modes, and the parts (vocabulary, fair splits, bootstrap comparisons)."""

import importlib.util
import json
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from capture import call_captured

from sparc_eval.attack.compare import compare_cells, verdict
from sparc_eval.attack.evaluation_set import balanced_count, choose_speakers, restrict_split
from sparc_eval.attack.trials import Trials
from sparc_eval.data.manifest import Manifest, Utterance
from sparc_eval.data.splits import Split
from sparc_eval.errors import DataError
from sparc_eval.jobs.leakage.vocabulary import tokens, vocabulary_stats
from sparc_eval.metrics import paired_bootstrap, speaker_paired_bootstrap, unpaired_bootstrap
from sparc_eval.metrics.settings import BootstrapSettings, evaluation_settings

REPO = Path(__file__).resolve().parents[1]
TINY = "{channels: [32, 32, 32, 32, 96], emb_dim: 32, number_of_epochs: 2, batch_size: 16}"
DEMO_ATTACKERS = f"""    tfidf:
        kind: text
        P: 50
        L: 5
        scorer: !new:attackers.text.tfidf.TfidfScorer
    phones:
        kind: ecapa
        hparams: {REPO}/hparams/phones.yaml
        overrides: {TINY}"""


def recipe():
    spec = importlib.util.spec_from_file_location(
        "compare_leakage", REPO / "recipes" / "compare_leakage.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(capsys, hparams, *args):
    code = recipe().main([str(hparams), *map(str, args)])
    cap = capsys.readouterr()
    return code, cap.out.strip().splitlines(), cap.err


def write_hparams(path, *, out, cache, corpora: str, attackers: str, extra: str = "") -> Path:
    path.write_text(f"""seed: 0
output_folder: {out}
cache_folder: {cache}
progress: False
plots: True
num_threads: 1
n_boot: 100
bootstrap_unit: speaker
conditions: [all, no_shared]
balance_speakers: auto
balance_trial_utterances: null
min_segment_speakers: 3
vocabulary_sample_tokens: auto
segment_attributes: [sex, age_group, accent_group]
corpora_enabled: null
attackers_enabled: null
corpora:
{corpora}
attackers:
{attackers}
{extra}
""")
    return path


# --- parts ---------------------------------------------------------------------------------------


def _manifest(rows):
    return Manifest(
        [
            Utterance(id=f"u{i}", speaker=s, text=t, episode=f"{s}-e")
            for i, (s, t) in enumerate(rows)
        ]
    )


def test_vocabulary_stats_by_hand():
    m = _manifest(
        [("a", "the cat sat"), ("a", "the cat's hat"), ("b", "the dog sat"), ("b", "Dog, dog!")]
    )
    assert tokens("The cat's HAT, isn't it?") == ["the", "cat's", "hat", "isn't", "it"]
    v = vocabulary_stats(m, sample_tokens=3)
    assert (v["n_tokens"], v["n_types"]) == (11, 6)  # types: the cat sat cat's hat dog
    # a: the cat sat the cat's hat -> cat, cat's, hat are a's alone: 3 of 6 tokens, 3 of 5 types
    assert v["speakers"]["a"]["unique_token_share"] == pytest.approx(3 / 6)
    assert v["speakers"]["a"]["unique_type_share"] == pytest.approx(3 / 5)
    # b: the dog sat dog dog -> dog x3 of 5 tokens, 1 of 3 types
    assert v["speakers"]["b"]["unique_token_share"] == pytest.approx(3 / 5)
    assert v["speakers"]["b"]["ttr_sample"] == pytest.approx(3 / 3)
    assert v["unique_token_share"]["mean"] == pytest.approx((0.5 + 0.6) / 2)
    assert vocabulary_stats(m, sample_tokens=6)["speaker_ttr"]["n_speakers_too_short"] == 1


def test_restrict_split_keeps_speakers_drops_ids_and_caps_trials():
    utt2spk = {f"{s}{i}": s for s in "abc" for i in range(6)}
    split = Split(
        {s: [f"{s}0", f"{s}1"] for s in "abc"}, [f"{s}{i}" for s in "abc" for i in range(2, 6)]
    )
    out = restrict_split(
        split, utt2spk, speakers={"a", "b"}, drop_ids={"a0", "b2"}, trials_per_speaker=2, seed=0
    )
    assert out.enroll == {"a": ["a1"], "b": ["b0", "b1"]}
    assert all(utt2spk[t] in "ab" and t != "b2" for t in out.trial_ids)
    assert sorted(utt2spk[t] for t in out.trial_ids) == ["a", "a", "b", "b"]
    again = restrict_split(
        split, utt2spk, speakers={"a", "b"}, drop_ids={"a0", "b2"}, trials_per_speaker=2, seed=0
    )
    assert again.trial_ids == out.trial_ids  # same seed, same draw
    # fixed pairs are filtered on both sides; a speaker whose enrollment is all shared text is listed
    pairs = [(s, t, utt2spk[t] == s) for s in "abc" for t in split.trial_ids]
    out = restrict_split(
        Split(split.enroll, split.trial_ids, pairs),
        utt2spk,
        speakers={"a", "b", "c"},
        drop_ids={"c0", "c1"},
    )
    assert "c" not in out.enroll and "c" in out.dropped
    assert {p[0] for p in out.pairs} == {"a", "b"}
    with pytest.raises(DataError, match="no trial utterances"):
        restrict_split(split, utt2spk, speakers={"a"}, drop_ids={f"a{i}" for i in range(2, 6)})


def test_balancing_counts_and_seeded_choice():
    assert balanced_count("auto", {"x": 40, "y": 60}, "balance_speakers") == 40
    assert balanced_count(None, {"x": 40}, "balance_speakers") is None
    with pytest.raises(DataError, match="balance_speakers"):
        balanced_count("most", {"x": 40}, "balance_speakers")
    speakers = [f"s{i:02d}" for i in range(60)]
    pick = choose_speakers(speakers, 40, seed=3)
    assert len(pick) == 40 and pick == choose_speakers(list(reversed(speakers)), 40, seed=3)
    assert choose_speakers(speakers, 80, seed=3) == speakers


def _trials(n_spk, n_utt, shift, rng, prefix="t"):
    enroll, test, spk, labels = [], [], [], []
    for s in range(n_spk):
        for u in range(n_utt):
            for e in range(n_spk):
                enroll.append(f"e{e}")
                test.append(f"{prefix}{s}_{u}")
                spk.append(f"s{s}")
                labels.append(e == s)
    labels = np.array(labels)
    return Trials(
        enroll, test, rng.normal(size=labels.size) + shift * labels, labels, test_speaker=spk
    )


def test_comparisons_resample_both_sides_when_the_enrolled_speakers_are_known(tmp_path):
    """Enrollment ids that are not speakers (``e3`` for speaker ``s3``, as a text attacker's
    enrollment sets are): with the enrolled speakers (a cell's ``enroll2spk``) the comparison is
    two-way; without them (a cell written before they were kept) it resamples test speakers and
    says so."""
    rng = np.random.default_rng(0)
    a = _trials(12, 6, 1.0, rng)
    b = replace(a, score=a.score + 0.5 * a.label)
    fixed = compare_cells(
        a,
        b,
        evaluation_settings(n_boot=100, seed=0),
    )
    assert fixed["unit"] == "speaker" and fixed["enrollment_side"].startswith("held fixed")
    mapping = {f"e{i}": f"s{i}" for i in range(12)}
    a.write(tmp_path / "scores.txt")
    known = Trials.read(tmp_path / "scores.txt", a.utt2spk(), enroll2spk=mapping)
    assert known.enrolled_known() and not a.enrolled_known()
    both = compare_cells(
        known,
        replace(known, score=known.score + 0.5 * known.label),
        evaluation_settings(n_boot=100, seed=0),
    )
    assert both["unit"] == "two_way" and "enrollment_side" not in both
    assert both["eer_diff"] == fixed["eer_diff"]  # the same trials and scores: only the CI moves
    # the reports mark a comparison that held the enrolled side fixed
    from sparc_eval.jobs.card.report import _pairing
    from sparc_eval.jobs.leakage.report import _paired

    assert _paired({**fixed, "paired": "trials"}) == "trials; enrolled side held fixed"
    assert _pairing({**fixed, "paired": "trials"}) == "same trials; enrolled side held fixed"
    assert _pairing({**both, "paired": "trials"}) == "same trials"
    # a gap in the enrolled speakers is no speaker: the evaluation holds that side fixed
    gap = replace(known, enroll_speaker=[None] + list(known.enroll_speaker[1:]))
    assert not gap.enrolled_known() and gap.enroll2spk() is None
    from sparc_eval.attack.evaluation import EvaluationSettings, evaluate

    ran = evaluate(gap, None, EvaluationSettings()).details["bootstrap"]
    assert ran["unit"] == "speaker" and "enrollment_side" in ran


def test_comparisons_pair_when_trials_are_shared():
    rng = np.random.default_rng(0)
    a = _trials(12, 6, 1.0, rng)
    b = replace(a, score=a.score + 0.8 * a.label + 0.1 * rng.normal(size=a.label.size))
    shuffled = b.select(np.arange(len(b))[::-1])  # order does not matter
    paired = compare_cells(
        a,
        shuffled,
        evaluation_settings(n_boot=200, seed=0, min_verdict_speakers=10),
    )
    assert paired["paired"] and paired["eer_diff"] < 0
    assert (
        paired["eer_diff_ci95"][1] < 0 and verdict(paired, "A", "B") == "B leaks more (lower EER)"
    )
    # 12 test speakers are too few for a verdict under the default rule (20): the CI stays, the verdict goes
    default = compare_cells(
        a,
        shuffled,
        evaluation_settings(n_boot=200, seed=0),
    )
    assert default["eer_diff_ci95"] == paired["eer_diff_ci95"] and default["n_speakers_a"] == 12
    assert verdict(default, "A", "B").startswith("no verdict: too few speakers")
    other = _trials(
        12, 6, 1.8, rng, prefix="x"
    )  # other trials of the same speakers: paired on speakers
    assert (
        compare_cells(
            a,
            other,
            evaluation_settings(n_boot=200, seed=0),
        )["paired"]
        == "speakers"
    )
    other = replace(
        other, test_speaker=np.char.add("other-", other.test_speaker.astype(str))
    )  # another corpus's
    unpaired = compare_cells(
        a,
        other,
        evaluation_settings(n_boot=200, seed=0),
    )
    assert unpaired["paired"] is False
    # sharing trials cancels the common noise: the paired interval is the narrower one
    p = paired_bootstrap(
        a.score,
        b.score,
        a.label,
        boot=BootstrapSettings(unit="trial", n_boot=300, seed=1),
    ).ci95["eer"]
    u = unpaired_bootstrap(
        a.score,
        a.label,
        b.score,
        b.label,
        boot=BootstrapSettings(unit="trial", n_boot=300, seed=1),
    ).ci95["eer"]
    assert p[1] - p[0] < u[1] - u[0]
    # speakers that are easy or hard for both systems: pairing on speakers narrows the interval too
    spk = a.test_speaker.astype(str)
    ease = dict(zip(np.unique(spk), rng.normal(scale=1.5, size=12)))
    lift = np.array([ease[s] for s in spk]) * a.label
    x_scores, y_scores = a.score + lift, rng.normal(size=spk.size) + (1.4 * a.label) + lift
    sp = speaker_paired_bootstrap(
        x_scores,
        a.label,
        spk,
        y_scores,
        a.label,
        spk,
        boot=BootstrapSettings(n_boot=300, seed=1),
    ).ci95["eer"]
    un = unpaired_bootstrap(
        x_scores,
        a.label,
        y_scores,
        a.label,
        boot=BootstrapSettings(n_boot=300, seed=1, unit="speaker"),
        groups_a=spk,
        groups_b=spk,
    ).ci95["eer"]
    assert sp[1] - sp[0] < un[1] - un[0]
    # a few unscored trials (an LLM judge's failures) keep the comparison paired, on the trials both scored
    holes = replace(b, score=np.where(np.arange(len(b)) % 50 == 0, np.nan, b.score))
    partial = compare_cells(
        a,
        holes,
        evaluation_settings(n_boot=100, seed=0),
    )
    assert partial["paired"] and partial["n_trials_a"] == partial["n_trials_b"] < len(a)
    same = compare_cells(
        a,
        a,
        evaluation_settings(n_boot=100, seed=0, min_verdict_speakers=10),
    )
    assert same["eer_diff"] == 0 and "no significant" in verdict(same, "A", "B")


# --- real data: LibriSpeech test-clean vs EdAcc test ---------------------------------------------


@pytest.fixture(scope="module")
def real_run(data_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("leakage_real")
    d = data_dir
    train = f"[{d}/librispeech/spane_lists/ls-train-clean-5.txt]"
    corpora = f"""    librispeech:
        data_folder: {d}/librispeech/derived/LibriSpeech/test-clean
        train_folders: {train}
        enroll_list: {d}/librispeech/spane_lists/privacy_eval/ls-test-clean_enrolls.txt
        trial_list: {d}/librispeech/spane_lists/privacy_eval/ls-test-clean_trials.txt
    edacc:
        data_folder: {d}/edacc/spane_lists/edacc-test.txt
        train_folders: {train}"""
    attackers = f"""    tfidf:
        kind: text
        P: 100
        L: 10
        scorer: !new:attackers.text.tfidf.TfidfScorer
    phones:
        kind: ecapa
        hparams: {REPO}/hparams/phones.yaml
        overrides: {TINY}
    mel:
        kind: ecapa
        hparams: {REPO}/hparams/mel.yaml
        overrides: {TINY}"""
    hp = write_hparams(
        tmp / "leakage.yaml",
        out=tmp / "out",
        cache=tmp / "cache",
        corpora=corpora,
        attackers=attackers,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        first = call_captured(recipe().main, [str(hp)])
    return hp, tmp / "out", first


@pytest.mark.slow("trains the phone ECAPA on real LibriSpeech and EdAcc: about 30 s")
def test_librispeech_and_edacc_side_by_side(real_run):
    hp, out, (code, lines, err) = real_run
    assert code == 0, err
    assert lines[-1] == str(out / "results.json")
    doc = json.loads((out / "results.json").read_text())
    cells = doc["cells"]
    # fair: LibriSpeech's 40 trial speakers, and 40 of EdAcc's 60, drawn with the seed
    assert doc["fairness"]["speakers_per_corpus"] == {"librispeech": 40, "edacc": 40}
    assert doc["fairness"]["speakers_available"] == {"librispeech": 40, "edacc": 60}
    for corpus in ("librispeech", "edacc"):
        mel = cells[corpus]["mel"]["all"]
        assert mel["status"] == "not_applicable" and "text-only" in mel["reason"]
        assert f"cells.{corpus}.mel.all" in doc["not_applicable"]
        for attacker in ("tfidf", "phones"):
            cell = cells[corpus][attacker]["all"]
            assert cell["status"] == "ok", cell.get("reason")
            assert 0 < cell["overall"]["eer"] <= 0.55
            assert cell["n_trial_speakers"] == 40
            assert sum(v["eer"] is not None for v in cell["per_speaker"].values()) >= 20
    # read books leak more words than conversations (SPARC; content-leakage paper Table 1)
    assert (
        cells["librispeech"]["tfidf"]["all"]["overall"]["eer"]
        < cells["edacc"]["tfidf"]["all"]["overall"]["eer"]
    )
    ls_vocab = doc["corpora"]["librispeech"]["conditions"]["all"]["vocabulary"]
    ed_vocab = doc["corpora"]["edacc"]["conditions"]["all"]["vocabulary"]
    assert ls_vocab["unique_token_share"]["mean"] > ed_vocab["unique_token_share"]["mean"]
    # EdAcc's read passage is shared text; LibriSpeech has none, so its second condition is the first
    assert doc["corpora"]["edacc"]["shared_text"]["n_removed"] > 50
    assert doc["corpora"]["librispeech"]["shared_text"]["n_removed"] == 0
    ls_no_shared = cells["librispeech"]["tfidf"]["no_shared"]
    assert (
        ls_no_shared["same_as"] == "all"
        and ls_no_shared["overall"] == cells["librispeech"]["tfidf"]["all"]["overall"]
    )
    assert not (out / "cells/librispeech/tfidf/no_shared").exists()
    assert cells["edacc"]["tfidf"]["no_shared"]["status"] == "ok"
    assert cells["edacc"]["phones"]["no_shared"]["status"] == "ok"
    # segments: EdAcc accent groups below 3 speakers are listed, not reported
    grouping = doc["corpora"]["edacc"][
        "accent_grouping"
    ]  # free-text accents -> the groups segmented
    assert (
        sum(grouping["American"].values()) >= 3
        and "accent_grouping" in doc["corpora"]["librispeech"]
    )
    assert "Unspecified" not in grouping and "Fluent" in doc["corpora"]["edacc"]["accent_left_out"]
    assert doc["run"]["accent_grouping"] == "coarse"
    left = cells["edacc"]["phones"]["all"]["segments_left_out"]
    assert any(k.startswith("accent_group.") for k in left)
    segs = cells["edacc"]["phones"]["all"]["segments"]
    assert set(segs) <= {"sex", "age_group", "accent_group"}
    assert all(v["n_speakers"] >= 3 for values in segs.values() for v in values.values())
    # distinctiveness correlations are signed, with n
    corr = doc["correlations"]["librispeech"]["all"]["phones"]["distinctiveness"]
    assert corr["n"] >= 20 and -1 <= corr["pearson_r"] <= 1
    # corpus comparisons are unpaired (different trials); tfidf vs phones too
    rows = [
        r
        for r in doc["comparisons"]["corpora"]
        if r["attacker"] == "tfidf" and r["condition"] == "all"
    ]
    assert len(rows) == 1 and rows[0]["paired"] is False and rows[0]["unit"] == "speaker"
    mixed = [r for r in doc["comparisons"]["attackers"] if {r["a"], r["b"]} == {"tfidf", "phones"}]
    assert mixed and all(r["paired"] in ("speakers", False) for r in mixed)
    assert len([r for r in doc["comparisons"]["corpora"] if r["condition"] == "no_shared"]) == 2
    # what removing EdAcc's shared text changes, per attacker (LibriSpeech has none to remove)
    assert {(r["corpus"], r["attacker"]) for r in doc["comparisons"]["shared_text"]} == {
        ("edacc", "tfidf"),
        ("edacc", "phones"),
    }
    lo, hi = rows[0]["eer_diff_ci95"]
    assert lo <= rows[0]["eer_diff"] <= hi
    report = (out / "report.md").read_text()
    assert (
        "## Which corpus leaks more" in report
        and "| librispeech |" in report
        and "Left out" in report
    )
    assert "Accent groups of edacc" in report
    for name in ("eer_by_corpus.png", "distinctiveness_all.png", "segments_all.png"):
        assert (out / name).stat().st_size > 1000
    assert (out / "cells/edacc/phones/all/results.json").is_file()
    # one model, trained once, shared by both corpora
    assert len(list((out / "models" / "phones").iterdir())) == 1


@pytest.mark.slow("reads the real LibriSpeech and EdAcc run (about 30 s)")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_rerun_reuses_finished_cells(real_run, capsys):
    hp, out, (first_code, _, first_err) = real_run
    assert first_code == 0, first_err
    before = json.loads((out / "results.json").read_text())
    code, lines, err = run(capsys, hp)
    assert code == 0, err
    assert err.count("reused") >= 6
    after = json.loads((out / "results.json").read_text())
    assert after["cells"] == before["cells"] and after["comparisons"] == before["comparisons"]


# --- the demo corpus in both modes ---------------------------------------------------------------


@pytest.mark.slow("builds the conversation demo corpus and trains two ECAPA models: about 20 s")
def test_demo_reading_leaks_more_than_conversation(
    demo_reading_corpus, demo_conversation_corpus, tmp_path, capsys
):
    corpora = f"""    reading:
        data_folder: {Path(demo_reading_corpus.name).parent}
    conversation:
        data_folder: {Path(demo_conversation_corpus.name).parent}"""
    hp = write_hparams(
        tmp_path / "demo.yaml",
        out=tmp_path / "out",
        cache=tmp_path / "cache",
        corpora=corpora,
        attackers=DEMO_ATTACKERS,
    )
    code, lines, err = run(capsys, hp)
    assert code == 0, err
    doc = json.loads(Path(lines[-1]).read_text())
    cells = doc["cells"]
    assert doc["fairness"]["speakers_per_corpus"] == {"reading": 24, "conversation": 24}
    # each corpus trains its own phone attacker on the other half of its speakers
    assert len(list((tmp_path / "out" / "models" / "phones").iterdir())) == 2
    assert (
        cells["reading"]["tfidf"]["all"]["overall"]["eer"]
        < cells["conversation"]["tfidf"]["all"]["overall"]["eer"]
    )
    flags = doc["corpora"]["conversation"]["shared_text"]["scripted_flags"]
    assert flags["n_scripted"] > 0 and flags["recall"] > 0.9
    for corpus in ("reading", "conversation"):
        assert cells[corpus]["phones"]["no_shared"]["status"] == "ok"
        assert (
            cells[corpus]["phones"]["no_shared"]["n_utterances"]
            < cells[corpus]["phones"]["all"]["n_utterances"]
        )
    # the phone attacker's comparison between the two conditions of one corpus is not made;
    # attackers on one corpus are compared within each condition
    assert {(r["a"], r["b"]) for r in doc["comparisons"]["attackers"]} == {("tfidf", "phones")}


# --- bad input -----------------------------------------------------------------------------------


def test_bad_specs_are_named(tmp_path, capsys):
    tfidf = """    tfidf:
        kind: text
        scorer: !new:attackers.text.tfidf.TfidfScorer"""
    hp = write_hparams(
        tmp_path / "a.yaml",
        out=tmp_path / "o",
        cache=tmp_path / "c",
        corpora="    x:\n        data_folder: demo:reading\n        trial_lists: nope",
        attackers=tfidf,
    )
    code, _, err = run(capsys, hp)
    assert code == 2 and "corpora.x: unknown keys ['trial_lists']" in err
    hp = write_hparams(
        tmp_path / "b.yaml",
        out=tmp_path / "o",
        cache=tmp_path / "c",
        corpora="    x:\n        data_folder: demo:reading",
        attackers=tfidf,
    )
    code, _, err = run(capsys, hp, "--attackers_enabled=[tfidf, bert]")
    assert code == 2 and "bert" in err
    code, _, err = run(capsys, hp, "--balance_speakers=most")
    assert code == 2 and "balance_speakers" in err
    bad = "    y:\n        kind: ecapa\n        hparams: hparams/nope.yaml"
    hp = write_hparams(
        tmp_path / "c.yaml",
        out=tmp_path / "o",
        cache=tmp_path / "c",
        corpora="    x:\n        data_folder: demo:reading",
        attackers=bad,
    )
    code, _, err = run(capsys, hp)
    assert code == 2 and "attackers.y: hparams 'hparams/nope.yaml' is not a file" in err


def test_cli_lists_the_leakage_command():
    from sparc_eval.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["leakage", "--help"])
    assert exit_info.value.code == 0


@pytest.mark.slow("trains the phone ECAPA on the full demo corpus: about 6 s")
def test_after_an_anonymizer_text_attackers_read_its_transcripts(
    demo_reading_corpus, tmp_path, capsys
):
    """An STT-TTS anonymizer's transcript (extra.asr_text) is what a text attacker reads; here it
    is random common words, the same draw for every speaker, so neither the text nor the phone
    attacker can tell speakers apart, while the same corpus without the anonymizer leaks (the
    demo test above)."""
    anon_dir = tmp_path / "anon"
    anon_dir.mkdir()
    words = (
        "the a of to and in that it was for on are with as his they be at one have this from or had by "
        "word but what some we can out other were all there when up use your how said an each she"
    ).split()
    rng = np.random.default_rng(0)
    anonymized = Manifest(
        [
            Utterance(
                **{**vars(u), "extra": {**u.extra, "asr_text": " ".join(rng.choice(words, 12))}}
            )
            for u in demo_reading_corpus
        ]
    )
    anonymized.write_jsonl(anon_dir / "manifest.jsonl")
    corpora = f"""    reading_anon:
        data_folder: {Path(demo_reading_corpus.name).parent}
        scenario: lazy-informed
        anon_eval_folder: {anon_dir}
        anonymizer_name: same-words
        phone_text: asr"""
    hp = write_hparams(
        tmp_path / "anon.yaml",
        out=tmp_path / "out",
        cache=tmp_path / "cache",
        corpora=corpora,
        attackers=DEMO_ATTACKERS,
    )
    code, lines, err = run(capsys, hp, "--conditions=all")
    assert code == 0, err
    doc = json.loads(Path(lines[-1]).read_text())
    assert doc["run"]["scenario"] == ["lazy-informed"]
    assert doc["run"]["environment"]["packages"]["numpy"]
    assert "phones: model_size_custom" in doc["run"]["deviations"]  # gathered from the cells
    text_cell = doc["cells"]["reading_anon"]["tfidf"]["all"]
    assert text_cell["overall"]["eer"] >= 0.4  # words drawn alike for everybody: near chance
    phones = json.loads((tmp_path / "out/cells/reading_anon/phones/all/results.json").read_text())
    assert phones["run"]["scenario"] == "lazy-informed" and phones["overall"]["eer"] >= 0.4


# --- population segments: accent groupings -------------------------------------------------------

SEGMENT_ACCENTS = {  # coarse: Irish 3, Spanish 3; fine: irish 3, spanish 2, catalan 1; 3 say nothing, 1 missing
    "s0": "Irish",
    "s1": "Irish accent",
    "s2": " irish English ",
    "s3": "Fluent",
    "s4": "International",
    "s5": "Neutral",
    "s6": "Spanish",
    "s7": "Catalan",
    "s8": "Spanish accent",
    "s9": None,
}


def test_cell_segments_follow_the_accent_grouping():
    from sparc_eval.attack.cell_results import cell_summary
    from sparc_eval.attack.evaluation import EvaluationSettings, SegmentSettings, evaluate

    base = _trials(10, 4, 1.5, np.random.default_rng(0))
    trials = replace(base, enroll_speaker=np.char.replace(base.enroll.astype(str), "e", "s"))

    def CellSettings(
        n_boot, segment_attributes, accent_grouping="coarse"
    ):  # the cells' evaluation settings
        return EvaluationSettings(
            bootstrap=BootstrapSettings(n_boot=n_boot),
            segments=SegmentSettings(
                attributes=tuple(segment_attributes), accent_grouping=accent_grouping
            ),
        )

    def cell_metrics(trials, speakers, settings):
        return cell_summary(evaluate(trials, speakers, settings), trials)

    speakers = {
        f"s{i}": {"speaker": f"s{i}", "sex": "FM"[i % 2], "accent": a}
        for i, a in enumerate(SEGMENT_ACCENTS.values())
    }

    def accent_segments(settings):
        cell = cell_metrics(trials, speakers, settings)
        assert set(cell["segments"]) == {"accent_group"}
        return {v: s["n_speakers"] for v, s in cell["segments"]["accent_group"].items()}

    # the three labels that name no accent are no segment (they were "Unspecified", 3 speakers)
    assert accent_segments(CellSettings(n_boot=0, segment_attributes=["accent_group"])) == {
        "Irish": 3,
        "Spanish": 3,
    }
    fine = CellSettings(n_boot=0, segment_attributes=["accent_group"], accent_grouping="fine")
    assert accent_segments(fine) == {"irish": 3}  # spanish (2) and catalan (1) are too small


def _accent_corpus(folder: Path) -> Path:
    """Ten speakers with the accents above, two episodes each; each speaker talks about their own things."""
    rng = np.random.default_rng(0)
    common = "the a and of to in it is that was we so like yeah you know i".split()
    rows = []
    for i, (spk, accent) in enumerate(SEGMENT_ACCENTS.items()):
        own = [f"{spk}word{k}" for k in range(12)]
        for n in range(20):
            words = rng.choice(common + own, 14)
            rows.append(
                Utterance(
                    id=f"{spk}-{n:02d}",
                    speaker=spk,
                    text=" ".join(words),
                    episode=f"{spk}-e{n // 10}",
                    sex="FM"[i % 2],
                    age=25 + 5 * i,
                    accent=accent,
                )
            )
    folder.mkdir()
    Manifest(rows).write_jsonl(folder / "manifest.jsonl")
    return folder


def test_leakage_results_record_the_grouping_and_list_labels_in_no_segment(tmp_path, capsys):
    corpus = _accent_corpus(tmp_path / "accents")
    attackers = """    tfidf:
        kind: text
        P: 50
        L: 5
        scorer: !new:attackers.text.tfidf.TfidfScorer"""
    # train_folders: every speaker is evaluated (nothing trains on them: the attacker reads text)
    corpora = f"    accents:\n        data_folder: {corpus}\n        train_folders: [{corpus}]"

    def hparams(name, extra=""):
        return write_hparams(
            tmp_path / f"{name}.yaml",
            out=tmp_path / name,
            cache=tmp_path / "cache",
            corpora=corpora,
            attackers=attackers,
            extra=extra,
        )

    code, lines, err = run(
        capsys, hparams("out"), "--conditions=all", "--n_boot=0", "--plots=False"
    )
    assert code == 0, err
    doc = json.loads(Path(lines[-1]).read_text())
    block = doc["corpora"]["accents"]
    assert {g: sum(raws.values()) for g, raws in block["accent_grouping"].items()} == {
        "Irish": 3,
        "Spanish": 3,
    }
    assert doc["run"]["accent_grouping"] == "coarse"  # the default
    assert {k: v["n_speakers"] for k, v in block["accent_left_out"].items()} == {
        "(missing)": 1,
        "Fluent": 1,
        "International": 1,
        "Neutral": 1,
    }
    cell = doc["cells"]["accents"]["tfidf"]["all"]
    assert cell["status"] == "ok", cell.get("reason")
    assert set(cell["segments"]["accent_group"]) == {"Irish", "Spanish"}
    report = (tmp_path / "out" / "report.md").read_text()
    assert (
        "In no accent segment of accents: (missing) (1): no accent given; Fluent (1), International (1), "
        "Neutral (1): says nothing about the accent"
    ) in report
    code, lines, err = run(
        capsys,
        hparams("fine", "accent_grouping: fine"),
        "--conditions=all",
        "--n_boot=0",
        "--plots=False",
    )
    assert code == 0, err
    doc = json.loads(Path(lines[-1]).read_text())
    assert doc["run"]["accent_grouping"] == "fine"
    assert set(doc["corpora"]["accents"]["accent_grouping"]) == {"irish", "spanish", "catalan"}
    assert set(doc["cells"]["accents"]["tfidf"]["all"]["segments"]["accent_group"]) == {"irish"}
    code, _, err = run(capsys, hparams("bad", "accent_grouping: raw"))
    assert code == 2 and "accent_grouping must be one of coarse, fine" in err


def _plain_yaml(path):
    """An hparams file's plain keys (tags such as !new: read as None, nothing is built)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    return yaml.load(Path(path).read_text(), Loader=Loader)


def test_paper_settings_evaluate_every_edacc_speaker_with_coarse_accent_groups():
    real = _plain_yaml(REPO / "hparams" / "leakage_real.yaml")
    assert real["balance_speakers"] is None  # every speaker: EdAcc test's 60, as in the paper
    assert real["accent_grouping"] == "coarse" and real["min_segment_speakers"] == 3
    assert _plain_yaml(REPO / "hparams" / "leakage.yaml")["accent_grouping"] == "coarse"


def test_unscored_trials_are_kept_out_of_score_files_and_metrics(tmp_path):
    """Unscored trials (score NaN: an LLM judge without a reply) are counted, left out of the score
    file and of the metrics, and the scored ones keep their speakers."""
    from sparc_eval.attack.evaluation import BootstrapSettings as Boot
    from sparc_eval.attack.evaluation import EvaluationSettings, evaluate

    rows = [
        ("A/e1", "p1", "A", "A", 0.9, True),
        ("B/e1", "p1", "B", "A", np.nan, False),
        ("C/e1", "p2", "C", "B", 0.1, False),
        ("B/e2", "p2", "B", "B", 0.7, True),
    ]
    t = Trials(
        *zip(*[(e, p, s, y) for e, p, _, _, s, y in rows]),
        test_speaker=[r[3] for r in rows],
        enroll_speaker=[r[2] for r in rows],
    )
    assert t.write(tmp_path / "scores.txt") == 1 and t.n_unscored == 1
    got = Trials.read(tmp_path / "scores.txt", t.utt2spk())
    assert got.enroll.tolist() == ["A/e1", "C/e1", "B/e2"] and got.test_speaker.tolist() == [
        "A",
        "B",
        "B",
    ]
    assert t.scored().enroll_speakers.tolist() == ["A", "C", "B"]
    ev = evaluate(t, None, EvaluationSettings(bootstrap=Boot(n_boot=0)))
    assert (
        ev["overall"]["n_target"] + ev["overall"]["n_nontarget"] == 3
        and ev.details["n_unscored"] == 1
    )


def test_default_hparams_run_the_quick_grid_and_name_its_departures(monkeypatch):
    """hparams/leakage.yaml's default is the quick grid (a first run to wait for): fewer attackers,
    fewer ECAPA epochs, each a named deviation; --grid=full runs every attacker as its recipe sets
    it. Nothing is trained: the settings alone are read."""
    from sparc_eval.hparams import load_hparams
    from sparc_eval.jobs.leakage.run import leakage_deviations, model_folder
    from sparc_eval.jobs.leakage.settings import LeakageSettings

    monkeypatch.chdir(REPO)  # the attackers' hparams paths are relative to the repository
    quick = LeakageSettings.from_hparams(load_hparams("hparams/leakage.yaml", {}))
    assert quick.grid == "quick" and quick.num_threads == 1
    assert [c.data_folder for c in quick.corpora] == ["demo:reading", "demo:conversation"]
    assert [(a.name, a.overrides) for a in quick.attackers] == [
        ("tfidf", {}),
        ("embedding", {}),
        ("phones", {"number_of_epochs": 8}),
        ("mel", {"number_of_epochs": 2}),
    ]
    assert str(quick.output_folder) == "results/leakage/demo_quick"
    deviations = leakage_deviations(quick, {})
    assert {"grid_quick", "phones: number_of_epochs_8", "mel: number_of_epochs_2"} <= set(
        deviations
    )
    assert (
        "left out: phone_durations" in deviations["grid_quick"]
        and "--grid=full" in deviations["grid_quick"]
    )
    assert "hparams/phones.yaml sets 15" in deviations["phones: number_of_epochs_8"]
    assert "hparams/mel.yaml sets 10" in deviations["mel: number_of_epochs_2"]
    phones = next(a for a in quick.attackers if a.name == "phones")
    assert "/models_quick/phones/" in model_folder(
        quick, phones, quick.corpora[0]
    )  # never resumed by full

    full = LeakageSettings.from_hparams(load_hparams("hparams/leakage.yaml", {"grid": "full"}))
    assert [a.name for a in full.attackers] == [
        "tfidf",
        "embedding",
        "phones",
        "phone_durations",
        "mel",
    ]
    assert all(a.overrides == {} for a in full.attackers if a.hparams)
    assert str(full.output_folder) == "results/leakage/demo_full"
    assert not {
        k for k in leakage_deviations(full, {}) if k.startswith("grid") or "number_of_epochs" in k
    }
    phones = next(a for a in full.attackers if a.name == "phones")
    assert "/models/phones/" in model_folder(full, phones, full.corpora[0])

    # attackers_enabled still chooses under the quick grid; its overrides still apply
    chosen = LeakageSettings.from_hparams(
        load_hparams("hparams/leakage.yaml", {"attackers_enabled": ["phones"]})
    )
    assert [(a.name, a.overrides) for a in chosen.attackers] == [
        ("phones", {"number_of_epochs": 8})
    ]
    with pytest.raises(DataError, match="grid"):
        LeakageSettings.from_hparams(load_hparams("hparams/leakage.yaml", {"grid": "fast"}))
    with pytest.raises(DataError, match="bert"):
        LeakageSettings.from_hparams(
            load_hparams("hparams/leakage.yaml", {"quick_overrides": {"bert": {}}})
        )
