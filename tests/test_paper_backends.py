"""The content-leakage paper's STT-TTS backends, run end to end: openai-whisper from a ``.pt`` and
NeMo FastPitch + HiFiGAN from ``.nemo`` files. The tests build tiny checkpoints in the real formats
with random weights, so the text is garbage and the audio noise: this checks the plumbing (loading,
types, rates, the anonymized corpus) and the errors a user meets, not quality.

Opt-in: ``make test-paper-backends`` installs the ``whisper`` and ``nemo`` extras into
``.venv-paper`` and runs this file; ``make test`` deselects the ``paper_backends`` marker.
"""

import dataclasses
import json
import pickle

import numpy as np
import pytest
import soundfile as sf

from anonymizers.stt_tts import SttTts
from sparc_eval.anonymization.options import RunnerOptions
from sparc_eval.anonymization.runner import anonymize_corpus
from sparc_eval.data.manifest import AudioRef, Manifest, Utterance
from sparc_eval.errors import DataError
from sparc_eval.speech.asr import OpenAIWhisperASR
from sparc_eval.speech.backends import BackendUnavailable
from sparc_eval.speech.tts import NemoTTS

pytestmark = pytest.mark.paper_backends
INSTALL_HINT = "run `make test-paper-backends` (it installs the whisper and nemo extras)"

# Tiny openai-whisper dimensions: the real mel and audio context (the audio front end is fixed)
# and the English-only vocabulary, with one narrow layer on each side.
WHISPER_DIMS = dict(
    n_mels=80,
    n_audio_ctx=1500,
    n_audio_state=64,
    n_audio_head=2,
    n_audio_layer=1,
    n_vocab=51864,
    n_text_ctx=448,
    n_text_state=64,
    n_text_head=2,
    n_text_layer=1,
)

# LJSpeech-style audio settings of NVIDIA's English FastPitch and HiFiGAN checkpoints.
SAMPLE_RATE, N_FFT, HOP, N_MELS, WIDTH = 22050, 1024, 256, 80, 32
DATASET = {  # FastPitch and HiFiGAN configs name a dataset; defer_setup: none is built here
    "defer_setup": True,
    "dataset": {"_target_": "nemo.collections.tts.data.dataset.TTSDataset"},
    "dataloader_params": {"batch_size": 1},
}


# --- checkpoints in the real formats ------------------------------------------------------------


def build_whisper_checkpoint(path):
    """A ``.pt`` as openai-whisper's own ``load_model`` reads it: ``dims`` and the state dict."""
    import torch
    from whisper.model import ModelDimensions, Whisper

    torch.manual_seed(0)
    dims = ModelDimensions(**WHISPER_DIMS)
    model = Whisper(dims)
    # torch.empty leaves the decoder's positions unset (a trained checkpoint fills them);
    # left as they are, the decoder may read NaN and emit only token 0 ("!").
    model.decoder.positional_embedding.data.normal_(0.0, 0.02)
    torch.save({"dims": dataclasses.asdict(dims), "model_state_dict": model.state_dict()}, path)
    return path


def mel_features(target: str, **extra) -> dict:
    """The mel front end both NeMo models share (FastPitch's preprocessor, HiFiGAN's targets)."""
    return dict(
        _target_=target,
        lowfreq=0,
        highfreq=8000,
        n_fft=N_FFT,
        n_window_size=N_FFT,
        n_window_stride=HOP,
        sample_rate=SAMPLE_RATE,
        window="hann",
        normalize=None,
        preemph=None,
        dither=0.0,
        frame_splicing=1,
        log=True,
        log_zero_guard_value=1e-05,
        mag_power=1.0,
        **extra,
    )


def fastpitch_config() -> dict:
    """NeMo's fastpitch_align_v1.05 recipe shrunk to one layer of width 32, with a character
    tokenizer (the released model's phoneme tokenizer needs a CMUdict file)."""
    fft = dict(n_layer=1, n_head=1, d_model=WIDTH, d_head=16, d_inner=64, kernel_size=3)
    fft.update(dropout=0.1, dropatt=0.1, dropemb=0.0)
    predictor = dict(
        _target_="nemo.collections.tts.modules.fastpitch.TemporalPredictor",
        input_size=WIDTH,
        kernel_size=3,
        filter_size=32,
        dropout=0.1,
        n_layers=1,
    )
    tokenizers = "nemo.collections.common.tokenizers.text_to_speech.tts_tokenizers"
    return dict(
        learn_alignment=True,
        n_speakers=1,
        max_token_duration=75,
        symbols_embedding_dim=WIDTH,
        pitch_embedding_kernel_size=3,
        pitch_mean=212.0,
        pitch_std=68.0,
        sample_rate=SAMPLE_RATE,
        n_mel_channels=N_MELS,
        text_tokenizer={
            "_target_": f"{tokenizers}.EnglishCharsTokenizer",
            "punct": True,
            "apostrophe": True,
            "pad_with_space": True,
        },
        train_ds=DATASET,
        validation_ds=DATASET,
        preprocessor=mel_features(
            "nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor",
            features=N_MELS,
            window_size=False,
            window_stride=False,
            pad_to=1,
            pad_value=0,
            log_zero_guard_type="add",
        ),
        input_fft={
            "_target_": "nemo.collections.tts.modules.transformer.FFTransformerEncoder",
            "d_embed": WIDTH,
            **fft,
        },
        output_fft={
            "_target_": "nemo.collections.tts.modules.transformer.FFTransformerDecoder",
            **fft,
        },
        alignment_module={
            "_target_": "nemo.collections.tts.modules.aligner.AlignmentEncoder",
            "n_text_channels": WIDTH,
            "n_mel_channels": N_MELS,
        },
        duration_predictor=predictor,
        pitch_predictor=predictor,
        optim={"name": "adam", "lr": 1e-3},
    )


def hifigan_config() -> dict:
    """NeMo's HiFiGAN v1 recipe with a narrow generator (upsampling 8 x 8 x 4 = the hop of 256).
    The discriminators have no size settings: they make the file about 280 MB."""
    return dict(
        preprocessor=mel_features(
            "nemo.collections.asr.parts.preprocessing.features.FilterbankFeatures",
            nfilt=N_MELS,
            pad_to=0,
            pad_value=-11.52,
            log_zero_guard_type="clamp",
            use_grads=False,
            exact_pad=True,
        ),
        generator={
            "_target_": "nemo.collections.tts.modules.hifigan_modules.Generator",
            "resblock": 1,
            "upsample_rates": [8, 8, 4],
            "upsample_kernel_sizes": [16, 16, 8],
            "upsample_initial_channel": 32,
            "resblock_kernel_sizes": [3],
            "resblock_dilation_sizes": [[1, 3, 5]],
        },
        train_ds=DATASET,
        validation_ds=DATASET,
        optim={"_target_": "torch.optim.AdamW", "lr": 2e-4},
        max_steps=1,
    )


def import_nemo_tts_models():
    """NeMo's TTS models, after the torchaudio stand-in where no working torchaudio imports."""
    pytest.importorskip("nemo", reason=INSTALL_HINT)
    from sparc_eval.speechbrain_compat import ensure_torchaudio

    ensure_torchaudio()
    return pytest.importorskip("nemo.collections.tts.models", reason=INSTALL_HINT)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """{"whisper", "fastpitch", "hifigan"}: paths of tiny random checkpoints in the real formats."""
    pytest.importorskip("whisper", reason=INSTALL_HINT)
    models = import_nemo_tts_models()
    from omegaconf import OmegaConf

    folder = tmp_path_factory.mktemp("paper_checkpoints")
    paths = {"whisper": build_whisper_checkpoint(folder / "whisper-tiny-random.pt")}
    for name, cls, config in (
        ("fastpitch", models.FastPitchModel, fastpitch_config()),
        ("hifigan", models.HifiGanModel, hifigan_config()),
    ):
        paths[name] = folder / f"{name}-tiny-random.nemo"
        cls(cfg=OmegaConf.create(config)).save_to(str(paths[name]))
    return paths


@pytest.fixture(scope="module")
def paper_stt_tts(checkpoints):
    """SttTts as the paper configures it, with the models loaded (setup)."""
    anonymizer = SttTts(
        asr="openai-whisper",
        tts="nemo",
        asr_options={"checkpoint": str(checkpoints["whisper"])},
        tts_options={
            "fastpitch": str(checkpoints["fastpitch"]),
            "hifigan": str(checkpoints["hifigan"]),
        },
    )
    anonymizer.setup()
    return anonymizer


def noise(seconds: float, sr: int, seed: int) -> np.ndarray:
    return (0.1 * np.random.default_rng(seed).standard_normal(int(seconds * sr))).astype(np.float32)


# --- each backend alone -------------------------------------------------------------------------


def test_openai_whisper_transcribes_from_a_tiny_pt(paper_stt_tts):
    import whisper

    asr = paper_stt_tts.asr
    assert isinstance(asr, OpenAIWhisperASR) and isinstance(asr.load(), whisper.model.Whisper)
    text = asr.transcribe(noise(1.0, 8000, seed=1), 8000)  # resampled to 16 kHz on the way
    assert isinstance(text, str) and any(ch.isalnum() for ch in text)
    assert asr.transcribe(np.zeros(0, np.float32), 16000) == ""
    clone = pickle.loads(pickle.dumps(asr))  # travels to workers as settings, loads there
    assert clone._model is None and clone.settings() == asr.settings()


def test_nemo_tts_speaks_16k_from_tiny_nemo_files(paper_stt_tts):
    tts = paper_stt_tts.tts
    assert isinstance(tts, NemoTTS) and tts._sample_rate() == SAMPLE_RATE
    audio, sr = tts.synthesize("Hello world, this is a test.")
    assert sr == 16000 and audio.dtype == np.float32 and audio.ndim == 1 and audio.size > 0
    assert np.all(np.isfinite(audio)) and np.abs(audio).max() <= 1.0
    # HiFiGAN writes HOP samples per mel frame at 22.05 kHz; resampling keeps whole frames' time
    frames = audio.size * SAMPLE_RATE / 16000 / HOP
    assert abs(frames - round(frames)) < 0.05, frames
    clone = pickle.loads(pickle.dumps(tts))
    assert clone._model is None and clone._vocoder is None and clone.settings() == tts.settings()


# --- audio -> ASR text -> TTS audio -> the anonymized corpus ------------------------------------


def test_stt_tts_corpus_run_with_the_paper_backends(paper_stt_tts, tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    utterances = []
    for k, (speaker, sr) in enumerate((("spk1", 16000), ("spk2", 22050))):
        path = source / f"utt{k}.wav"
        sf.write(path, noise(1.5, sr, seed=10 + k), sr)
        utterances.append(
            Utterance(id=f"utt{k}", speaker=speaker, text="a reference", audio=AudioRef(str(path)))
        )
    corpus = Manifest(utterances, name="noise")
    out_dir = tmp_path / "anonymized"
    out = anonymize_corpus(corpus, paper_stt_tts, out_dir, options=RunnerOptions(progress=False))

    assert [u.id for u in out] == ["utt0", "utt1"]
    rows = [json.loads(line) for line in (out_dir / "manifest.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows] == ["utt0", "utt1"]
    for source_utt, utt, row in zip(corpus, out, rows):
        assert utt.speaker == source_utt.speaker == row["speaker"] and row["text"] == "a reference"
        assert utt.extra["anonymizer"] == "stt_tts" and utt.extra["asr_text"].strip()
        assert row["extra"]["asr_text"] == utt.extra["asr_text"]
        info = sf.info(utt.audio.path)
        assert info.samplerate == 16000 and info.channels == 1 and info.frames > 0
    assert (out_dir / "failures.jsonl").read_text().strip() == ""
    report = json.loads((out_dir / "anonymization.json").read_text())
    settings = json.dumps(report)
    assert "openai-whisper" in settings and "fastpitch-tiny-random.nemo" in settings


# --- what a user meets with the wrong files -----------------------------------------------------


def test_missing_checkpoint_files_are_named(tmp_path, checkpoints):
    with pytest.raises(BackendUnavailable, match=r"openai-whisper checkpoint.*does not exist"):
        OpenAIWhisperASR(tmp_path / "small.pt")
    with pytest.raises(BackendUnavailable, match=r"FastPitch checkpoint.*does not exist"):
        NemoTTS(tmp_path / "fastpitch.nemo", checkpoints["hifigan"])
    with pytest.raises(BackendUnavailable, match=r"HiFiGAN checkpoint.*does not exist"):
        NemoTTS(checkpoints["fastpitch"], tmp_path / "hifigan.nemo")


def not_whisper_files(folder, checkpoints):
    """Files a user might pass as an openai-whisper .pt by mistake."""
    import torch

    junk = folder / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    no_dims = folder / "state_dict_only.pt"
    torch.save({"model_state_dict": {}}, no_dims)
    return [junk, no_dims, checkpoints["fastpitch"]]


def test_files_that_are_not_whisper_checkpoints_are_clean_errors(tmp_path, checkpoints):
    for path in not_whisper_files(tmp_path, checkpoints):
        asr = OpenAIWhisperASR(path)  # cheap: the file is read on first use
        with pytest.raises(DataError, match=r"not an openai-whisper checkpoint.*faster-whisper"):
            asr.load()


def test_nemo_files_of_another_kind_are_clean_errors(tmp_path, checkpoints):
    junk = tmp_path / "junk.nemo"
    junk.write_bytes(b"not a checkpoint")
    fastpitch, hifigan = checkpoints["fastpitch"], checkpoints["hifigan"]
    cases = [
        ((junk, hifigan), r"junk.nemo: cannot be restored as a NeMo model.*'fastpitch'"),
        ((checkpoints["whisper"], hifigan), r"cannot be restored as a NeMo model.*'fastpitch'"),
        ((hifigan, hifigan), r"holds a NeMo HifiGanModel, not a FastPitch.*'fastpitch'"),
        ((fastpitch, fastpitch), r"holds a NeMo FastPitchModel, not a HiFiGAN.*'hifigan'"),
    ]
    for (fastpitch_path, hifigan_path), message in cases:
        with pytest.raises(DataError, match=message):
            NemoTTS(fastpitch_path, hifigan_path).load()
    with pytest.raises(DataError, match="holds a NeMo HifiGanModel"):  # where a run meets it
        SttTts(
            asr="openai-whisper",
            tts="nemo",
            asr_options={"checkpoint": str(checkpoints["whisper"])},
            tts_options={"fastpitch": str(hifigan), "hifigan": str(hifigan)},
        ).setup()
