"""The phone inventory: the 39 CMU dictionary phones without stress, plus silence.

Index order is fixed (alphabetical CMU phones, then ``SIL`` at 39), so a one-hot column means
the same phone in every feature file, model and run.
"""

from __future__ import annotations

CMU_PHONES = (
    "AA",
    "AE",
    "AH",
    "AO",
    "AW",
    "AY",
    "B",
    "CH",
    "D",
    "DH",
    "EH",
    "ER",
    "EY",
    "F",
    "G",
    "HH",
    "IH",
    "IY",
    "JH",
    "K",
    "L",
    "M",
    "N",
    "NG",
    "OW",
    "OY",
    "P",
    "R",
    "S",
    "SH",
    "T",
    "TH",
    "UH",
    "UW",
    "V",
    "W",
    "Y",
    "Z",
    "ZH",
)
SILENCE = "SIL"
#: every phone symbol in index order, the 39 CMU phones without stress and then ``SIL``.
PHONES = CMU_PHONES + (SILENCE,)
PHONE_INDEX = {p: i for i, p in enumerate(PHONES)}
assert len(CMU_PHONES) == 39


def strip_stress(phone: str) -> str:
    """``AH0`` -> ``AH``; anything else unchanged (upper-cased)."""
    return phone.rstrip("012").upper()


def is_phone(symbol: str) -> bool:
    return symbol in PHONE_INDEX


def inventory(language=None) -> tuple:
    """The phones of a language, without silence: the 39 CMU phones for English (None), else
    espeak-ng's phonemes of the language (:func:`sparc_eval.phones.espeak_phones.inventory`)."""
    if language in (None, "en"):
        return CMU_PHONES
    from .espeak_phones import inventory as espeak_inventory

    return espeak_inventory(language)
