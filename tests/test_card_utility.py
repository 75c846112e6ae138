"""Utility metrics of the anonymizer card on hand-made fixtures: G_VD, rho_F0 and WER follow their
VoicePrivacy definitions (sparc_eval/utility/metrics.py)."""

import math

import numpy as np
import pytest
import soundfile as sf

from sparc_eval.data.manifest import AudioRef, Manifest, Utterance
from sparc_eval.utility.metrics import (
    PitchCorrelation,
    UtilityInput,
    VoiceDistinctiveness,
    WordErrorRate,
    diagonal_dominance,
    similarity_matrix,
    speaker_bootstrap,
)


def _manifest(ids_by_speaker, text="a b c d", durations=None, folder=None):
    utts = []
    for spk, ids in ids_by_speaker.items():
        for i in ids:
            audio = AudioRef(str(folder / f"{i}.wav")) if folder else None
            utts.append(
                Utterance(
                    i, spk, text, f"{spk}-ep", audio=audio, duration=(durations or {}).get(i, 2.0)
                )
            )
    return Manifest(utts)


class TableEncoder:
    """A speaker encoder that looks embeddings up by utterance id (tags: o / a)."""

    def __init__(self, table):
        self.table = table

    def embeddings(self, utterances):
        return {u.id: self.table[(u.extra.get("side", "o"), u.id)] for u in utterances}


def _sides(manifest, side):
    from dataclasses import replace

    return Manifest([replace(u, extra={"side": side}) for u in manifest])


def test_similarity_matrix_and_diagonal_dominance_by_hand():
    emb = {
        "a1": np.array([1.0, 0.0]),
        "a2": np.array([1.0, 0.0]),
        "b1": np.array([0.0, 1.0]),
        "b2": np.array([0.6, 0.8]),
    }
    utt2spk = {"a1": "A", "a2": "A", "b1": "B", "b2": "B"}
    m = similarity_matrix(emb, utt2spk, ["A", "B"])
    sig = lambda x: 1 / (1 + math.exp(-x))
    # A-A: the one pair k != l (twice, symmetric) cos 1; B-B: cos(b1, b2) = 0.8; A-B: mean(0, 0.6, 0, 0.6) = 0.3
    assert m[0, 0] == pytest.approx(sig(1.0)) and m[1, 1] == pytest.approx(sig(0.8))
    assert m[0, 1] == pytest.approx(sig(0.3)) and m[1, 0] == pytest.approx(sig(0.3))
    assert diagonal_dominance(m) == pytest.approx(abs((sig(1.0) + sig(0.8)) / 2 - sig(0.3)))


def test_gvd_is_zero_for_identity_and_negative_when_voices_merge():
    original = _manifest({"A": ["a1", "a2"], "B": ["b1", "b2"], "C": ["c1", "c2"]})
    rng = np.random.default_rng(0)
    centres = {s: rng.normal(size=8) for s in "ABC"}
    table = {}
    for u in original:
        v = centres[u.speaker] + 0.1 * rng.normal(size=8)
        table[("o", u.id)] = v
        table[("a", u.id)] = v  # identity anonymizer
    pair = UtilityInput("identity", _sides(original, "o"), _sides(original, "a"))
    same = VoiceDistinctiveness(TableEncoder(table)).compute(pair)
    assert same["value"] == pytest.approx(0.0, abs=1e-12) and same["speakers"] == 3
    common = rng.normal(size=8)
    for u in original:  # every voice pulled towards one: less distinct
        table[("a", u.id)] = 0.2 * table[("o", u.id)] + common
    merged = VoiceDistinctiveness(TableEncoder(table)).compute(pair)
    assert merged["value"] < -3 and merged["d_diag_anonymized"] < merged["d_diag_original"]


def test_rho_f0_is_one_for_identity_and_not_applicable_when_timing_changes(tmp_path):
    pytest.importorskip("librosa")
    sr, n = 16000, 16000
    t = np.arange(n) / sr
    pitch = 120 + 40 * np.sin(2 * np.pi * 1.5 * t)  # a gliding voiced tone
    wav = 0.3 * np.sin(2 * np.pi * np.cumsum(pitch) / sr)
    for i in ("u1", "u2"):
        sf.write(tmp_path / f"{i}.wav", wav, sr)
    original = _manifest(
        {"A": ["u1"], "B": ["u2"]}, durations={"u1": 1.0, "u2": 1.0}, folder=tmp_path
    )
    metric = PitchCorrelation(max_utterances=None)
    same = metric.compute(UtilityInput("identity", original, original, n_boot=50))
    assert same["value"] > 0.99 and same["utterances"] == 2
    slower = _manifest(
        {"A": ["u1"], "B": ["u2"]}, durations={"u1": 1.4, "u2": 1.0}, folder=tmp_path
    )
    na = metric.compute(UtilityInput("stt_tts", original, slower))
    assert "timing" in na["not_applicable"] and "u1" in na["not_applicable"]


class ListASR:
    def __init__(self, said):
        self.said = said

    def settings(self):
        return {"asr": "list", "said": sorted(self.said.items())}

    def transcribe(self, wav, sr):
        return self.said[int(round(len(wav) / sr * 1000))]  # the file's length in ms says which


def test_wer_counts_cache_and_paired_difference(tmp_path):
    sr = 16000
    lengths = {"o1": 1000, "o2": 1100, "x1": 1200, "x2": 1300}
    for name, ms in lengths.items():
        sf.write(tmp_path / f"{name}.wav", np.zeros(sr * ms // 1000), sr)
    said = {1000: "a b c d", 1100: "a b c d", 1200: "a b x d", 1300: "a b"}
    original = Manifest(
        [
            Utterance("u1", "A", "a b c d", "e", audio=AudioRef(str(tmp_path / "o1.wav"))),
            Utterance("u2", "B", "a b c d", "e", audio=AudioRef(str(tmp_path / "o2.wav"))),
        ]
    )
    anonymized = Manifest(
        [
            Utterance("u1", "A", "a b c d", "e", audio=AudioRef(str(tmp_path / "x1.wav"))),
            Utterance("u2", "B", "a b c d", "e", audio=AudioRef(str(tmp_path / "x2.wav"))),
        ]
    )
    metric = WordErrorRate(asr=ListASR(said))
    pair = UtilityInput("x", original, anonymized, cache_folder=str(tmp_path / "cache"), n_boot=200)
    found = metric.compute(pair)
    assert (
        found["value"] == pytest.approx(3 / 8) and found["original"]["value"] == 0.0
    )  # 1 sub + 2 del of 8 words
    assert found["per_utterance"] == {"u1": [1, 4], "u2": [2, 4]}
    cached = list((tmp_path / "cache" / "transcripts").rglob("*.txt"))
    assert len(cached) == 4  # original and anonymized, once each
    other = WordErrorRate(asr=ListASR({k: "wrong" for k in said}))  # another ASR: its own cache
    assert other.transcripts(list(anonymized), str(tmp_path / "cache"), False) == {
        "u1": "wrong",
        "u2": "wrong",
    }
    same = WordErrorRate.compare(found, found, pair, pair)
    assert same["diff"] == 0.0 and same["ci95"] == [0.0, 0.0]


def test_speaker_bootstrap_resamples_speakers_not_utterances():
    values, weights = np.array([1.0, 1.0, 0.0]), np.array([1.0, 1.0, 1.0])
    draws = speaker_bootstrap(values, weights, ["A", "A", "B"], n_boot=2000, seed=0)
    # speaker A (2 of 2 errors) and B (0 of 1): a draw is AA (1), BB (0) or AB (2/3)
    assert set(np.round(draws, 6)) <= {1.0, 0.0, round(2 / 3, 6)}
