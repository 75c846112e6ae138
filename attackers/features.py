"""What an ECAPA attacker's input is: mel spectrograms or the layers of a self-supervised model
(``ssl``, :mod:`.ssl_upstream`), both computed from audio in the model, or phone one-hot rows
(+ durations) from the words an utterance says or from a phone recognizer.

Phones of anonymized speech are those of the words it says (``phone_text: spoken``, the default;
:mod:`sparc_eval.data.words`): the anonymizer's own transcript (STT-TTS), or the reference text of an
anonymizer that keeps the words. Original speech says its reference text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sparc_eval.data.words import reference_text_deviation
from sparc_eval.errors import DataError

FEATURE_TYPES = ("mel", "ssl", "phones", "phone_durations")
WAVEFORM_FEATURES = ("mel", "ssl")  # computed in the model from the waveform
N_PHONES = 39  # the CMU phone set without stress


@dataclass(frozen=True)
class FeatureSettings:
    feature_type: str
    phone_source: str = "transcript"  # transcript | audio (phone_durations: always audio)
    phone_text: str = "spoken"  # spoken | reference (a named deviation) | asr
    recognizer: str = "pocketsphinx"
    silence: object = "auto"  # auto | True | False
    n_mels: int = 80
    cache_folder: str = "results/cache"
    ssl_source: object = None  # ssl: a local Hugging Face snapshot folder

    def __post_init__(self):
        if self.feature_type not in FEATURE_TYPES:
            raise DataError(
                f"feature_type {self.feature_type!r} is not one of {', '.join(FEATURE_TYPES)}"
            )
        if self.silence != "auto" and not isinstance(self.silence, bool):
            raise DataError(f"silence must be auto, True or False, not {self.silence!r}")

    @classmethod
    def from_hparams(cls, hp: dict) -> "FeatureSettings":
        keys = (
            "phone_source",
            "phone_text",
            "recognizer",
            "silence",
            "n_mels",
            "cache_folder",
            "ssl_source",
        )
        return cls(hp["feature_type"], **{k: hp[k] for k in keys if hp.get(k) is not None})

    @property
    def source(self) -> str:
        return "audio" if self.feature_type == "phone_durations" else self.phone_source

    @property
    def uses_silence(self) -> bool:
        """``silence: auto``: a recognizer's silence symbol is a feature column, as in the paper
        (its recognizer's alphabet has silence, and its phone-only run is the phone+duration run
        without durations); transcripts have no silence, so 39 columns."""
        return self.source == "audio" if self.silence == "auto" else self.silence

    @property
    def input_size(self) -> int:
        """The model's input width on English speech (:meth:`input_size_for` another language)."""
        return self.input_size_for(None)

    def input_size_for(self, language) -> int:
        """The model's input width on speech in ``language``: phone columns are the language's
        phones (39 CMU phones for English, espeak's phonemes otherwise)."""
        if self.feature_type == "mel":
            return self.n_mels
        if self.feature_type == "ssl":
            from .ssl_upstream import hidden_size

            return hidden_size(self.ssl_source)
        if language in (None, "en"):
            return N_PHONES + (1 if self.uses_silence else 0)
        from sparc_eval.phones.phoneset import inventory

        return len(inventory(language)) + (1 if self.uses_silence else 0)

    @property
    def languages(self):
        """Which languages these features read, None for any. Mel and SSL read any speech, a
        phone recognizer or aligner English only (pocketsphinx en-us), transcripts English,
        German, French and Spanish."""
        if self.from_waveform:
            return None
        if self.source == "audio":
            return ("en",)
        from sparc_eval.data.languages import SCORED

        return SCORED

    @property
    def from_waveform(self) -> bool:
        return self.feature_type in WAVEFORM_FEATURES

    @property
    def reads_words(self) -> bool:
        """Whether the features depend on the words an utterance says (G2P, or forced alignment)."""
        return not self.from_waveform and (
            self.source == "transcript" or self.recognizer == "align"
        )

    @property
    def needs_audio(self) -> bool:
        return self.from_waveform or self.source == "audio"

    def extractor(self):
        """None for mel and ssl (computed in the model from audio), else PhoneFeatures."""
        if self.from_waveform:
            return None
        from sparc_eval.phones.features import PhoneFeatures

        return PhoneFeatures(
            source=self.source,
            durations=self.feature_type == "phone_durations",
            silence=self.uses_silence,
            text=self.phone_text,
            recognizer=self.recognizer,
            cache_dir=Path(self.cache_folder) / "features",
        )

    def deviations(self, utterances) -> dict:
        out = {}
        if self.reads_words:
            out.update(reference_text_deviation(utterances, self.phone_text))
        if self.source == "audio" and not self.from_waveform and not self.uses_silence:
            out["no_silence"] = (
                "the recognizer's silence symbol is dropped (the paper keeps it as a phone)"
            )
        return out
