"""Phones of German, French and Spanish transcripts: espeak-ng's phonemization, one phone per espeak
phoneme, through libespeak-ng's ``espeak_TextToPhonemes`` (the library ``espeakng-loader`` ships,
driven as :mod:`sparc_eval.speech.espeak` drives it for synthesis)::

    from sparc_eval.phones.espeak_phones import EspeakPhonemizer
    EspeakPhonemizer("de").words("Schön ist das Wetter.")
    # [['S', 'Y:', 'n'], ['I', 's', 't'], ['d', 'a', 's'], ['v', 'E', 't', '3']]

A phone is written as espeak names the phoneme in its phoneme table (``Y:`` is IPA øː, ``pF`` is
pf, ``A~`` is ɑ̃): stress marks are dropped, length is part of the name (``A:`` and ``A`` are two
phones), pauses and espeak's virtual phonemes give no phone. The names, not espeak's IPA output,
index the features because espeak writes a phoneme's IPA by its context (German ``b`` is written
``p`` before a pause), so IPA strings cannot index a fixed inventory; either way there is one
phone per espeak phoneme. The inventory of a language (:func:`inventory`) is every sounding
phoneme (vowels, liquids, stops, fricatives, nasals) of that language's table in espeak's
``phontab``, with the tables it includes, in a fixed sorted order.
"""

from __future__ import annotations

import functools
import struct
from pathlib import Path

from ..data.languages import check_served, language_name
from ..errors import DataError

#: the languages phonemized here (English keeps g2p_en and ARPAbet, the paper's default)
LANGUAGES = ("de", "fr", "es")
# phoneme types (espeak-ng's phoneme.h) that sound: vowel, liquid, stop, voiced stop, fricative,
# voiced fricative, nasal; pauses (0), stress (1) and virtual phonemes (9) give no phone
_SOUNDING = range(2, 9)
_STRESS = "',%="
# a character no phoneme name holds, between the phonemes of a word
_SEPARATOR = "$"
_PHONEME_RECORD = struct.Struct(
    "<IIHBBBBBB"
)  # PHONEME_TAB: mnemonic, flags, program, code, type...
_TABLE_NAME_BYTES = 32


def voice_of(language: str) -> str:
    """The espeak-ng voice that phonemizes ``language``."""
    check_served("espeak-ng phonemization", language, LANGUAGES)
    return language


@functools.lru_cache(maxsize=1)
def _phoneme_tables() -> dict:
    """espeak's ``phontab``: table name -> (index of the table it includes or None, phonemes as
    (code, name, type))."""
    from ..speech.espeak import library_paths

    raw = (Path(library_paths()[1]) / "phontab").read_bytes()
    tables, offset, names = {}, 4, []
    for _ in range(raw[0]):
        count, includes = raw[offset], raw[offset + 1]
        name = raw[offset + 4 : offset + 4 + _TABLE_NAME_BYTES].split(b"\0")[0].decode("ascii")
        offset += 4 + _TABLE_NAME_BYTES
        phonemes = []
        for _ in range(count):
            mnemonic, _flags, _program, code, kind = _PHONEME_RECORD.unpack_from(raw, offset)[:5]
            phonemes.append(
                (code, struct.pack("<I", mnemonic).rstrip(b"\0").decode("latin-1"), kind)
            )
            offset += _PHONEME_RECORD.size
        names.append(name)
        tables[name] = (includes - 1 if includes else None, tuple(phonemes))
    return {
        name: (names[inc] if inc is not None else None, ph) for name, (inc, ph) in tables.items()
    }


@functools.lru_cache(maxsize=8)
def inventory(language: str) -> tuple:
    """The phones of ``language``: the sounding phonemes of its espeak table and the tables it
    includes (a phoneme code of the language's own table overrides the included one), by the name
    espeak writes (a variant after ``/`` is not written), sorted."""
    tables, name, chain = _phoneme_tables(), voice_of(language), []
    while name is not None and name not in chain:
        chain.append(name)
        name = tables[name][0]
    by_code = {}
    for table in reversed(chain):
        by_code.update({code: (mnemonic, kind) for code, mnemonic, kind in tables[table][1]})
    return tuple(
        sorted({m.split("/")[0] for m, kind in by_code.values() if kind in _SOUNDING and m})
    )


class EspeakPhonemizer:
    """Words -> espeak phones of one language (:data:`LANGUAGES`); the same interface as the
    English :class:`~sparc_eval.phones.g2p.G2P` where the features read it (``words``,
    ``settings``, ``tagger_id``)."""

    def __init__(self, language: str):
        self.language = language
        self.voice = voice_of(language)
        self.phones = inventory(language)
        self.index = {p: i for i, p in enumerate(self.phones)}  # phone -> feature column
        self._settings = None

    def settings(self) -> dict:
        """What its phones depend on (part of each utterance's cache key), worked out once."""
        if self._settings is None:
            from ..speech.espeak import engine_version

            self._settings = {
                "phonemizer": "espeak-ng",
                "espeak": engine_version(),
                "language": self.language,
            }
        return self._settings

    def tagger_id(self) -> None:
        return None

    def words(self, text: str) -> list:
        """The phones of each word of ``text`` that has any, in order."""
        if not isinstance(text, str):
            raise DataError(
                f"{language_name(self.language)} phonemization needs text, got {text!r}"
            )
        from ..speech.espeak import text_to_phonemes

        spoken = text_to_phonemes(self.voice, text, _SEPARATOR) if text.strip() else ""
        words = []
        for word in spoken.split():
            phones = [self._phone(token) for token in word.split(_SEPARATOR)]
            phones = [p for p in phones if p]
            if phones:
                words.append(phones)
        return words

    def _phone(self, token: str):
        """A written phoneme as a phone of the inventory (its stress marks dropped), or None for a
        pause or a virtual phoneme."""
        name = token.lstrip(_STRESS)
        return name if name in self.index else None
