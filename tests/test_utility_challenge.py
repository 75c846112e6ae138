"""Utility as the challenges measure it (issue 31), on hand-made fixtures: WER with Whisper's
English normaliser and failed utterances as all deletions, G_VD per trial list on trial utterances
(VoicePrivacy 2022), rho_F0 from the trackers of sparc_eval.utility.f0 and the challenge code's
correlation, each departure named."""

import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import soundfile as sf

from sparc_eval.data.manifest import AudioRef, Manifest, Utterance
from sparc_eval.errors import DataError
from sparc_eval.utility import f0 as F0
from sparc_eval.utility.metrics import (
    PitchCorrelation,
    UtilityInput,
    VoiceDistinctiveness,
    WordErrorRate,
    asr_from_name,
    diagonal_dominance,
    similarity_matrix,
)
from sparc_eval.utility.wer import normalize, wer_from_pairs, whisper_normalize

REPO = Path(__file__).resolve().parents[1]
SR = 16000

# --- WER ------------------------------------------------------------------------------------------


def test_whisper_normaliser_scores_digits_and_abbreviations_as_the_words_they_spell():
    pytest.importorskip("whisper_normalizer")
    ref = "MISTER SMITH PAID TWENTY FIVE DOLLARS AND DIDN'T COMPLAIN"
    hyp = "Mr. Smith paid $25 and didn't complain."
    assert (
        whisper_normalize(ref)
        == whisper_normalize(hyp)
        == "mister smith paid $25 and did not complain"
    )
    assert whisper_normalize("Um, the colour... hmm") == "the color"  # fillers out, US spelling
    assert wer_from_pairs([("u", ref, hyp)])["wer"] == 0.0
    basic = wer_from_pairs([("u", ref, hyp)], normalizer="basic")
    # MR/MISTER, 25/TWENTY + FIVE deleted, DOLLARS deleted: 1 sub + 1 sub + 2 del... by hand:
    # ref MISTER SMITH PAID TWENTY FIVE DOLLARS AND DIDN'T COMPLAIN (9 words)
    # hyp MR SMITH PAID 25 AND DIDN'T COMPLAIN: MISTER->MR, TWENTY->25, FIVE and DOLLARS deleted
    assert (basic["substitutions"], basic["deletions"], basic["insertions"]) == (2, 2, 0)
    assert basic["wer"] == pytest.approx(4 / 9) and basic["normalizer"] == "basic"
    assert normalize("Mr. Smith") == "MR SMITH"  # the basic rule is unchanged
    with pytest.raises(DataError, match="unknown WER normalizer 'nfkc'"):
        wer_from_pairs([("u", "a", "a")], normalizer="nfkc")


def test_a_failed_utterance_counts_all_its_words_as_deletions():
    """Failing on a hard utterance must not lower the WER: its reference words are all errors."""
    result = wer_from_pairs(
        [("a", "the cat sat", "the cat sat"), ("b", "a b c d", "a x c d")],
        failed=[("c", "one two three four five six seven")],
        normalizer="basic",
    )
    assert (result["words"], result["errors"], result["deletions"]) == (14, 8, 7)
    assert result["wer"] == pytest.approx(8 / 14)
    assert (result["failed_utterances"], result["failed_words"]) == (1, 7)
    assert result["per_utterance"]["c"]["failed"] and result["utterances"] == 3
    left_out = wer_from_pairs([("a", "the cat sat", "the cat sat"), ("b", "a b c d", "a x c d")])
    assert left_out["wer"] == pytest.approx(1 / 7) and left_out["wer"] < result["wer"]


class ListASR:
    """Says the text its table holds for the audio file's length (in ms)."""

    def __init__(self, said):
        self.said = said

    def settings(self):
        return {"backend": "list", "model": "hand-made", "said": sorted(self.said.items())}

    def transcribe(self, wav, sr):
        return self.said[int(round(len(wav) / sr * 1000))]


def _wav(folder, name, ms, signal=None):
    path = folder / f"{name}.wav"
    sf.write(path, np.zeros(SR * ms // 1000) if signal is None else signal, SR)
    return AudioRef(str(path))


def test_wer_metric_counts_the_anonymizers_failures_and_names_its_departures(tmp_path):
    said = {1000: "a b c d", 1100: "a b c d", 1200: "one two", 1300: "a b x d"}
    original = Manifest(
        [
            Utterance("u1", "A", "a b c d", "e", audio=_wav(tmp_path, "o1", 1000)),
            Utterance("u2", "B", "a b c d", "e", audio=_wav(tmp_path, "o2", 1100)),
        ]
    )
    failed = Manifest([Utterance("u3", "B", "one two", "e", audio=_wav(tmp_path, "o3", 1200))])
    anonymized = Manifest(
        [
            Utterance("u1", "A", "a b c d", "e", audio=_wav(tmp_path, "x1", 1300)),
            Utterance("u2", "B", "a b c d", "e", audio=_wav(tmp_path, "x2", 1100)),
        ]
    )
    pair = UtilityInput(
        "x", original, anonymized, cache_folder=str(tmp_path / "c"), n_boot=50, failed=failed
    )
    found = WordErrorRate(asr=ListASR(said), normalizer="basic").compute(pair)
    # anonymized: 1 sub in u1, u3 failed (2 deletions): 3 errors / 10 words
    assert found["value"] == pytest.approx(3 / 10)
    assert (found["failed_utterances"], found["failed_words"]) == (1, 2)
    assert found["per_utterance"]["u3"] == [2, 2]
    # the original speech on the same utterances, u3's original audio transcribed
    assert found["original"]["value"] == 0.0 and found["original"]["words"] == 10
    assert set(found["deviations"]) == {"wer: asr", "wer: basic normaliser"}
    assert "list hand-made" in found["deviations"]["wer: asr"]
    left = WordErrorRate(asr=ListASR(said), failures="left_out").compute(pair)
    assert left["value"] == pytest.approx(1 / 8) and left["failed_left_out"] == 1
    assert "wer (x): failures left out" in left["deviations"]
    with pytest.raises(DataError, match="unknown WER failures rule"):
        WordErrorRate(failures="ignore")


def test_any_local_whisper_model_is_selectable_by_name_or_path(tmp_path):
    pytest.importorskip("faster_whisper")
    from sparc_eval.speech.asr import FasterWhisperASR, PocketsphinxASR
    from sparc_eval.speech.backends import BackendUnavailable

    assert asr_from_name(None).model == "tiny.en"
    big = asr_from_name(
        str(tmp_path), {"beam_size": 5}
    )  # a local CTranslate2 folder, loaded lazily
    assert isinstance(big, FasterWhisperASR) and big.model == str(tmp_path) and big.beam_size == 5
    assert isinstance(asr_from_name("base"), FasterWhisperASR)
    assert isinstance(asr_from_name("pocketsphinx"), PocketsphinxASR)
    checkpoint = tmp_path / "large-v3.pt"
    checkpoint.write_bytes(b"")
    try:
        import whisper  # noqa: F401
    except ImportError:  # the openai-whisper backend names its extra
        with pytest.raises(BackendUnavailable, match="openai-whisper"):
            asr_from_name(str(checkpoint))
    metric = WordErrorRate(asr=str(tmp_path), asr_options={"beam_size": 5})
    assert metric._asr().model == str(tmp_path)


# --- G_VD per trial list ----------------------------------------------------------------------------


class TableEncoder:
    def __init__(self, table):
        self.table = table

    def embeddings(self, utterances):
        return {u.id: self.table[(u.extra["side"], u.id)] for u in utterances}


def _gvd_fixture():
    """Four speakers (two per sex), three utterances each: the first is enrollment, two are trials."""
    rng = np.random.default_rng(1)
    utts, table = [], {}
    for spk, sex in (("F1", "F"), ("F2", "F"), ("M1", "M"), ("M2", "M")):
        centre = rng.normal(size=6)
        for k in range(3):
            uid = f"{spk}-{k}"
            utts.append(Utterance(uid, spk, "a b", f"{spk}-ep", sex=sex))
            table[("o", uid)] = centre + 0.2 * rng.normal(size=6)
            # anonymized: every voice pulled towards one point, females more than males
            table[("a", uid)] = (0.3 if sex == "F" else 0.6) * table[("o", uid)] + rng.normal(
                size=6
            )
    trials = frozenset(u.id for u in utts if not u.id.endswith("-0"))

    def side(tag):
        from dataclasses import replace

        return Manifest([replace(u, extra={"side": tag}) for u in utts])

    return side("o"), side("a"), trials, TableEncoder(table)


def _gvd_by_hand(table, ids, utt2spk):
    speakers = sorted({utt2spk[i] for i in ids})
    sub = {i: utt2spk[i] for i in ids}
    m_oo = similarity_matrix({i: table[("o", i)] for i in ids}, sub, speakers)
    m_aa = similarity_matrix({i: table[("a", i)] for i in ids}, sub, speakers)
    return 10 * math.log10(diagonal_dominance(m_aa) / diagonal_dominance(m_oo))


def test_gvd_is_computed_per_trial_list_on_trial_utterances():
    """VoicePrivacy 2022: G_VD per trial list (one per sex), on the list's trial utterances only."""
    original, anonymized, trials, encoder = _gvd_fixture()
    pair = UtilityInput("x", original, anonymized, trial_ids=trials)
    assert {n: [o.id for o, _ in got] for n, got in pair.lists().items()} == {
        "trials_f": ["F1-1", "F1-2", "F2-1", "F2-2"],
        "trials_m": ["M1-1", "M1-2", "M2-1", "M2-2"],
    }
    found = VoiceDistinctiveness(encoder).compute(pair)
    utt2spk = {u.id: u.speaker for u in original}
    f = _gvd_by_hand(encoder.table, ["F1-1", "F1-2", "F2-1", "F2-2"], utt2spk)
    m = _gvd_by_hand(encoder.table, ["M1-1", "M1-2", "M2-1", "M2-2"], utt2spk)
    assert found["per_list"]["trials_f"]["value"] == pytest.approx(f)
    assert found["per_list"]["trials_m"]["value"] == pytest.approx(m)
    assert found["value"] == pytest.approx((f + m) / 2) and found["grouping"] == "lists"
    assert found["speakers"] == 4 and set(found["deviations"]) == {"gvd: cosine"}
    # today's pooled value: both sexes, enrollment and trial utterances in one matrix (named)
    pooled = VoiceDistinctiveness(encoder, grouping="pooled").compute(pair)
    assert pooled["value"] == pytest.approx(_gvd_by_hand(encoder.table, list(utt2spk), utt2spk))
    assert "gvd: pooled" in pooled["deviations"]
    # 0.3's keys keep their meaning beside the per-list default: the pooled matrix's D_diag values
    assert found["value_pooled"] == pytest.approx(pooled["value"])
    for key in ("d_diag_original", "d_diag_anonymized"):
        assert found[key] == pytest.approx(pooled[key]) == pooled["per_list"]["pooled"][key]
    # VoicePrivacy lists given by a preset are read as they are
    listed = UtilityInput(
        "x",
        original,
        anonymized,
        trial_ids=trials,
        trial_lists={"libri_test_trials_f": ["F1-1", "F1-2", "F2-1", "F2-2"]},
    )
    only = VoiceDistinctiveness(encoder).compute(listed)
    assert list(only["per_list"]) == ["libri_test_trials_f"] and only["value"] == pytest.approx(f)
    with pytest.raises(DataError, match="unknown G_VD grouping"):
        VoiceDistinctiveness(encoder, grouping="sex")


def test_a_list_without_two_speakers_is_named_not_averaged():
    original, anonymized, trials, encoder = _gvd_fixture()
    keep = lambda u: u.speaker != "M2"  # trials_m keeps one speaker
    pair = UtilityInput("x", original.subset(keep), anonymized.subset(keep), trial_ids=trials)
    found = VoiceDistinctiveness(encoder).compute(pair)
    assert found["per_list"]["trials_m"]["value"] is None
    assert "two speakers" in found["per_list"]["trials_m"]["why"]
    assert found["value"] == pytest.approx(found["per_list"]["trials_f"]["value"])


# --- rho_F0 -------------------------------------------------------------------------------------------


def test_voiced_correlation_by_hand():
    x = np.array([100.0, 0.0, 200.0, 300.0, 250.0])
    y = np.array([110.0, 120.0, 0.0, 330.0, 260.0, 999.0])  # one frame longer: cut
    # voiced in both: frames 0, 3, 4 -> r of (100, 300, 250) and (110, 330, 260)
    expected = np.corrcoef([100, 300, 250], [110, 330, 260])[0, 1]
    assert F0.voiced_correlation(x, y, min_frames=3) == pytest.approx(expected)
    assert F0.voiced_correlation(x, y, min_frames=4) is None
    assert F0.voiced_correlation(x, np.where(x > 0, 150.0, 0.0), min_frames=2) is None  # constant


def test_the_challenge_codes_correlation_by_hand():
    """Stretch to the longer length, zero outside [75, 500], align by the cross-correlation's
    peak, then Pearson over every frame, unvoiced zeros included."""
    a = np.array([0.0, 100.0, 200.0, 300.0, 0.0, 0.0])
    b = np.roll(a, 1)  # the same contour one frame late: the alignment undoes it
    assert F0.vpc2022_code_correlation(a, b) == pytest.approx(1.0)
    # the raw cross-correlation (no mean removed) peaks with c one frame late: 100 * 200 + 200 *
    # 300 = 80,000 against 100 * 100 + 200 * 200 = 50,000 in place; then r over every frame,
    # the voiced 300 against an unvoiced 0 included
    c = np.array([0.0, 100.0, 200.0, 0.0, 0.0, 0.0])
    shifted = np.array([0.0, 0.0, 100.0, 200.0, 0.0, 0.0])
    assert F0.vpc2022_code_correlation(a, c) == pytest.approx(np.corrcoef(a, shifted)[0, 1])
    assert F0.vpc2022_code_correlation(a, c) < 1.0
    # out of range values become 0 (600 Hz > 500), and the shorter side is stretched
    d = np.array([0.0, 100.0, 600.0])
    stretched = np.interp(np.linspace(0, 2, 6), np.arange(3), d)
    stretched[(stretched < 75) | (stretched > 500)] = 0.0
    lag = int(np.argmax(np.correlate(a, stretched, "full"))) - 5
    want = np.corrcoef(a, np.roll(stretched, lag))[0, 1]
    assert F0.vpc2022_code_correlation(a, d) == pytest.approx(want)
    assert F0.vpc2022_code_correlation(a, np.zeros(6)) == 0.0  # constant: 0, kept in the mean


def _glide(seconds=1.0, base=140.0, depth=40.0, rate=1.5):
    t = np.arange(int(SR * seconds)) / SR
    pitch = base + depth * np.sin(2 * np.pi * rate * t)
    phase = 2 * np.pi * np.cumsum(pitch) / SR
    # a few harmonics, like a voice: every tracker sees the fundamental
    return 0.2 * sum(np.sin(k * phase) / k for k in (1, 2, 3)), pitch


@pytest.mark.parametrize("tracker", F0.TRACKERS)
def test_every_tracker_follows_a_gliding_voice(tracker):
    pytest.importorskip({"praat": "parselmouth", "yaapt": "amfm_decompy"}.get(tracker, "librosa"))
    wav, pitch = _glide()
    f0 = F0.track(wav, SR, tracker, fmin=75.0, fmax=500.0, hop_s=0.01)
    assert abs(len(f0) - 100) <= 6
    voiced = f0 > 0
    assert voiced.mean() > 0.6
    # against the true pitch at each frame's centre, allowing the trackers' offsets of a frame
    truth = np.interp(np.arange(len(f0)) * 0.01, np.arange(len(pitch)) / SR, pitch)
    assert np.median(np.abs(f0[voiced] / truth[voiced] - 1)) < 0.05
    assert F0.voiced_correlation(f0, f0) == pytest.approx(1.0)


def _tone_corpus(folder, *, shift=1.0):
    utts = []
    for spk, sex, base in (("F1", "F", 210.0), ("F2", "F", 190.0), ("M1", "M", 120.0)):
        for k in range(2):
            wav, _ = _glide(base=base, rate=1.0 + 0.5 * k)
            uid = f"{spk}-{k}"
            sf.write(folder / f"{uid}.wav", wav, SR)
            sf.write(folder / f"{uid}-anon.wav", 0.5 * wav, SR)  # same pitch, quieter
            utts.append(
                Utterance(
                    uid,
                    spk,
                    "a",
                    "e",
                    audio=AudioRef(str(folder / f"{uid}.wav")),
                    duration=1.0,
                    sex=sex,
                )
            )
    from dataclasses import replace

    anon = [replace(u, audio=AudioRef(u.audio.path.replace(".wav", "-anon.wav"))) for u in utts]
    return Manifest(utts), Manifest(anon)


def test_rho_f0_per_trial_list_with_the_challenges_tracker(tmp_path):
    pytest.importorskip("parselmouth")
    original, anonymized = _tone_corpus(tmp_path)
    trials = frozenset(u.id for u in original if u.id.endswith("-1") or u.speaker == "M1")
    pair = UtilityInput("x", original, anonymized, trial_ids=trials, n_boot=50)
    found = PitchCorrelation().compute(pair)
    assert found["tracker"] == "praat" and found["deviations"] == {}
    assert set(found["per_list"]) == {"trials_f", "trials_m"}
    assert found["per_list"]["trials_f"]["utterances"] == 2  # F1-1, F2-1: enrollment left out
    assert found["per_list"]["trials_m"]["utterances"] == 2
    assert found["value"] > 0.99 and found["sampled"] == found["sampled_from"] == 4
    named = PitchCorrelation(tracker="yin", max_utterances=2, utterances="all").compute(pair)
    assert set(named["deviations"]) == {
        "rho_f0 (x): yin",
        "rho_f0 (x): sample",
        "rho_f0 (x): all utterances",
    }
    assert named["sampled"] == 2 and named["sampled_from"] == 6
    code = PitchCorrelation(frames="vpc2022_code").compute(pair)
    assert code["value"] > 0.99 and "challenge code's correlation" in code["estimator"]
    with pytest.raises(DataError, match="unknown F0 tracker 'pyworld'"):
        PitchCorrelation(tracker="pyworld")
    assert PitchCorrelation(tracker="pyin").lowpass_hz == 1000.0
    assert PitchCorrelation().lowpass_hz is None


# --- the card's wiring ------------------------------------------------------------------------------


def test_utility_context_reads_the_users_failures_and_the_trial_lists(tmp_path):
    from sparc_eval.jobs.card.run import utility_context

    enroll = [Utterance("e1", "A", "x", "ep"), Utterance("e2", "B", "x", "ep")]
    trials = [Utterance("t1", "A", "y", "ep"), Utterance("t2", "B", "z", "ep")]
    plan = SimpleNamespace(
        enroll_utterances=lambda: enroll,
        trial_utterances=lambda: trials,
        eval_original=SimpleNamespace(name="fixture"),
        split=SimpleNamespace(trial_ids=["t1", "t2"]),
        lists=None,
    )
    eval_folder = tmp_path / "eval"
    eval_folder.mkdir()
    (eval_folder / "failures.jsonl").write_text(
        json.dumps({"id": "t2", "reason": "no words"}) + "\n"
    )
    found = utility_context(plan, {"stt_tts": SimpleNamespace(eval_folder=eval_folder)})
    assert [u.id for u in found["failed"]["stt_tts"]] == ["t2"]
    assert found["trial_ids"] == frozenset({"t1", "t2"}) and found["trial_lists"] is None
    trial_list = SimpleNamespace(name="libri_test_trials_f")
    plan.lists = SimpleNamespace(lists=((trial_list, [("A", "t1", True), ("B", "t1", False)]),))
    assert utility_context(plan, {})["trial_lists"] == {"libri_test_trials_f": ["t1"]}


def test_the_card_reports_failures_and_lists_beside_the_table():
    from sparc_eval.jobs.card.utility_report import utility_section

    doc = {
        "utility": {
            "stt_tts": {
                "wer": {
                    "value": 0.2,
                    "ci95": None,
                    "failed_utterances": 1,
                    "failed_words": 12,
                    "words": 300,
                    "original": {"value": 0.1, "ci95": None},
                },
                "gvd": {
                    "value": -2.0,
                    "ci95": None,
                    "per_list": {"trials_f": {"value": -1.5}, "trials_m": {"value": -2.5}},
                },
            }
        }
    }
    text = "\n".join(utility_section(doc))
    assert (
        "stt_tts: 1 utterances the anonymizer failed on count as all deletions in its WER (12 of 300 words)"
        in text
    )
    assert "stt_tts: gvd per trial list: trials_f -1.500, trials_m -2.500" in text


def test_bench_f0_compares_trackers_against_the_named_baseline(tmp_path, capsys):
    pytest.importorskip("parselmouth")
    sys.path.insert(0, str(REPO / "benchmarks"))
    import bench_f0

    original, anonymized = _tone_corpus(tmp_path)
    original.write_jsonl(tmp_path / "o.jsonl")
    anonymized.write_jsonl(tmp_path / "a.jsonl")
    out = tmp_path / "f0.json"
    code = bench_f0.main(
        [
            "--original",
            str(tmp_path / "o.jsonl"),
            "--anonymized",
            str(tmp_path / "a.jsonl"),
            "--trackers",
            "yin",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    report = json.loads(out.read_text())
    assert set(report["trackers"]) == {"praat", "yin", "praat (vpc2022_code)"}
    assert report["trackers"]["praat"]["agreement"]["mean_abs_diff"] == 0.0
    assert "baseline: praat" in capsys.readouterr().out
