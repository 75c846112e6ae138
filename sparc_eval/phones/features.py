"""Phone features of manifest utterances, from the transcript or from the audio, cached on disk.

``source: transcript`` phonemizes the words the utterance says with the offline G2P: what a
perfect phone recognizer would find. Of anonymized speech that is the anonymizer's own transcript
(STT-TTS) or the reference text of an anonymizer that keeps the words (``text: spoken``, the
default; :mod:`sparc_eval.data.words`); ``text: reference`` forces the reference text, ``text: asr``
requires the anonymizer's transcript. ``source: audio`` runs a phone recognizer (pocketsphinx by
default) on the audio and is the only source with real durations; a forced aligner
(``recognizer: align``) aligns the audio to the text the same rule picks.

An utterance's language (:mod:`sparc_eval.data.languages`) picks its phones: English the CMU
phones of the offline G2P (the paper's), German, French and Spanish espeak-ng's phonemes
(:mod:`.espeak_phones`, transcripts only: no recognizer or aligner serves them).
"""

from __future__ import annotations

import warnings

import numpy as np
from tqdm import tqdm

from ..cache import ArrayCache, content_key, default_cache_dir
from ..data.words import TEXT_CHOICES, spoken_text
from ..errors import DataError
from .onehot import one_hot
from .phoneset import PHONE_INDEX, SILENCE, inventory

SOURCES = ("transcript", "audio")


class PhoneFeatures:
    """utterance -> (T, 39|40) one-hot matrix (paper equation 1), with an on-disk cache."""

    def __init__(
        self,
        *,
        source: str = "transcript",
        durations: bool = False,
        silence="auto",
        text: str = "spoken",
        recognizer: str = "pocketsphinx",
        recognizer_options: dict | None = None,
        cache_dir=None,
        use_cache: bool = True,
    ):
        if source not in SOURCES:
            raise DataError(f"phone source {source!r} is not one of {SOURCES}")
        if source == "transcript" and durations:
            raise DataError(
                "phone durations need audio: transcripts have no timings",
                hint="set source: audio (a phone recognizer) or durations: False",
            )
        if text not in TEXT_CHOICES:
            raise DataError(f"phone text {text!r} is not one of {', '.join(TEXT_CHOICES)}")
        # auto: a recognizer's silence is a phone (40 columns, as in the paper); transcripts have none
        silence = source == "audio" if silence == "auto" else bool(silence)
        self.source, self.durations, self.silence, self.text = source, durations, silence, text
        self.recognizer_name, self.recognizer_options = recognizer, dict(recognizer_options or {})
        self._g2p = self._recognizer = None
        self._phonemizers = {}  # language -> EspeakPhonemizer
        self.cache = (
            ArrayCache(cache_dir or default_cache_dir(), "phones", self.settings())
            if use_cache
            else None
        )

    def settings(self) -> dict:
        settings = {"source": self.source, "version": 1}
        if self.source == "audio":  # an aligner's transcript is in each utterance's key
            settings.update(
                recognizer=self.recognizer_name,
                options=self.recognizer_options,
                backend=self._recognizer_settings(),
            )
        else:  # the G2P's versions and tagger, so an upgrade invalidates cached phones
            g2p = self._load_g2p()
            settings.update(text=self.text, g2p=g2p.settings(), tagger=g2p.tagger_id())
        return settings

    def _load_recognizer(self):
        if self._recognizer is None:
            from .recognizer import make_recognizer

            self._recognizer = make_recognizer(self.recognizer_name, **self.recognizer_options)
        return self._recognizer

    def _load_g2p(self):
        if self._g2p is None:
            from .g2p import G2P

            self._g2p = G2P()
        return self._g2p

    def _recognizer_settings(self) -> dict:
        """The backend's own settings (decoder parameters...), so a change of defaults
        invalidates cached phones; loading the recognizer is cheap next to recognising."""
        settings = getattr(self._load_recognizer(), "settings", None)
        return settings() if callable(settings) else {}

    def _phonemizer(self, language: str):
        """The espeak phonemizer of a language other than English (built once)."""
        if language not in self._phonemizers:
            from .espeak_phones import EspeakPhonemizer

            self._phonemizers[language] = EspeakPhonemizer(language)
        return self._phonemizers[language]

    def _other_language(self, utt):
        """The utterance's language when it is not English, checked against the source."""
        language = getattr(utt, "language", None)
        if language in (None, "en"):
            return None
        if self.source == "audio":
            from ..data.languages import check_served

            check_served(f"the {self.recognizer_name} phone recognizer", language, ("en",))
        return language

    # phone sequences -----------------------------------------------------------------------
    def _text_of(self, utt) -> str:
        return spoken_text(utt, self.text)

    def _espeak_segments(self, utt, language: str) -> np.ndarray:
        phonemizer = self._phonemizer(language)
        text = self._text_of(utt)
        key = content_key(utt, source=self.source, text=text, settings=phonemizer.settings())
        cached = self.cache.get(key) if self.cache is not None else None
        if cached is not None:
            return cached
        phones = [p for word in phonemizer.words(text) for p in word]
        array = np.array(
            [[phonemizer.index[p], 0.0, 0.0] for p in phones], dtype=np.float64
        ).reshape(-1, 3)
        if self.cache is not None:
            self.cache.put(key, array)
        return array

    def segments(self, utt) -> np.ndarray:
        """(N, 3) float array: phone index, start, end (transcript phones get start=end=0); the
        index is into the utterance language's :func:`~sparc_eval.phones.phoneset.inventory`."""
        language = self._other_language(utt)
        if language is not None:
            return self._espeak_segments(utt, language)
        if self.source == "transcript":
            text = self._text_of(utt)
        else:
            if utt.audio is None:
                raise DataError(
                    f"utterance {utt.id!r} has no audio; source: audio needs it",
                    hint="use source: transcript for text-only corpora",
                )
            # an aligner's output depends on the transcript as well as the audio
            text = (
                self._text_of(utt)
                if getattr(self._load_recognizer(), "needs_text", False)
                else None
            )
        key = content_key(utt, source=self.source, text=text)
        cached = self.cache.get(key) if self.cache is not None else None
        if cached is not None:
            return cached
        if self.source == "transcript":
            phones = [p for word in self._load_g2p().words(text) for p in word]
            array = np.array(
                [[PHONE_INDEX[p], 0.0, 0.0] for p in phones], dtype=np.float64
            ).reshape(-1, 3)
        else:
            from .recognizer import recognize_utterance

            segments = recognize_utterance(self._load_recognizer(), utt, text)
            array = np.array(
                [[PHONE_INDEX[p], s, e] for p, s, e in segments], dtype=np.float64
            ).reshape(-1, 3)
        if self.cache is not None:
            self.cache.put(key, array)
        return array

    def _symbols(self, utt) -> tuple:
        """(the utterance language's phones, the symbols its indices read: silence last)."""
        phones = inventory(self._other_language(utt))
        return phones, phones + (SILENCE,)

    def phones(self, utt, *, keep_silence: bool = False) -> list:
        _, symbols = self._symbols(utt)
        return [
            symbols[int(i)]
            for i, _, _ in self.segments(utt)
            if keep_silence or symbols[int(i)] != SILENCE
        ]

    def __call__(self, utt) -> np.ndarray:
        seq, (phones, symbols) = self.segments(utt), self._symbols(utt)
        items = (
            [(symbols[int(i)], s, e) for i, s, e in seq]
            if self.durations
            else [symbols[int(i)] for i, _, _ in seq]
        )
        return one_hot(
            items,
            durations=self.durations,
            silence=self.silence,
            utt_id=utt.id,
            inventory=phones,
        )

    def corpus(self, manifest, *, progress: bool = True) -> dict:
        """utterance id -> feature matrix for every utterance; empty ones are reported once."""
        features, empty = {}, []
        for utt in tqdm(
            list(manifest), desc=f"phones ({self.source})", disable=not progress, leave=False
        ):
            matrix = self(utt)
            if matrix.shape[0] == 0:
                empty.append(utt.id)
            features[utt.id] = matrix
        if empty:
            warnings.warn(
                f"{len(empty)} utterances have no phones (e.g. {empty[:3]}); they are dropped "
                f"from training and scored as empty input",
                stacklevel=2,
            )
        return features
