"""Speaker attributes turned into population segments: age groups and accent groups.

Numeric attributes are binned (age: <30, 30-60, 60+, as in SPARC). Free-text accents
(EdAcc's self-reported accent has 47 values among 60 test speakers) go through the ordered
keyword table ``ACCENT_RULES`` below to a coarse group, and from there to SPARC's binary
accent task: North American (American, Canadian) vs other.
"""

from __future__ import annotations

import math
from typing import Optional

AGE_GROUPS = ("<30", "30-60", "60+")


def age_group(age) -> Optional[str]:
    """``<30`` below 30, ``30-60`` from 30 up to (not including) 60, ``60+`` from 60."""
    if age is None or (isinstance(age, float) and math.isnan(age)):
        return None
    age = float(age)
    if age < 30:
        return "<30"
    return "30-60" if age < 60 else "60+"


# Ordered: the first rule whose keyword occurs in the lower-cased answer wins, so specific
# phrases ("spanish american", "indian english") come before the words they contain.
ACCENT_RULES = (
    (("vietnam",), "Vietnamese"),
    (("nigeria",), "Nigerian"),
    (("ghana",), "Ghanaian"),
    (("kenya",), "Kenyan"),
    (("south african",), "South African"),
    (("afri",), "African"),  # "African accent", and the typo "Afrian"
    (("jamaica",), "Jamaican"),
    (("caribbean", "west indi", "trinidad", "barbad"), "Caribbean"),
    (("irish", "dublin"), "Irish"),
    (("scottish", "glaswegian", "scotland"), "Scottish"),
    (("indian", "pakistan"), "South Asian"),
    (("spanish american", "latin", "mexic", "south american", "brazil"), "Latin American"),
    (("spanish", "catalan", "spain"), "Spanish"),
    (("italian",), "Italian"),
    (("chinese", "mandarin", "cantonese"), "Chinese"),
    (("indonesia",), "Indonesian"),
    (("japan",), "Japanese"),
    (("egypt",), "Egyptian"),
    (("canad",), "Canadian"),
    (("american", "united states", "midwest", "trans-atlantic", "west coast"), "American"),
    (("british", "english", "london", "rp"), "British"),
    (("bulgaria", "romania", "lithuania", "east-european", "eastern european"), "Eastern European"),
    (("french",), "French"),
    (("german",), "German"),
    (("dutch",), "Dutch"),
    (("israel",), "Israeli"),
    (("european",), "European"),
    (("international", "neutral", "fluent", "generic", "asian"), "Unspecified"),
)

NORTH_AMERICAN_GROUPS = frozenset({"American", "Canadian"})


def accent_group(raw) -> Optional[str]:
    """Coarse accent group for a free-text accent; ``Other`` when no rule matches, None if missing."""
    if raw is None or (isinstance(raw, float) and math.isnan(raw)):
        return None
    text = " ".join(str(raw).lower().split())
    if not text or text == "nan":
        return None
    words = set(text.replace("/", " ").replace(",", " ").replace("(", " ").replace(")", " ").split())
    for keywords, group in ACCENT_RULES:
        for key in keywords:
            # short keys must be whole words ("rp" is not "Europe"); longer ones may be stems
            if (len(key) <= 3 and key in words) or (len(key) > 3 and key in text):
                return group
    return "Other"


def accent_region(raw) -> Optional[str]:
    """SPARC's accent task: ``North American`` or ``other`` (None when the accent is unknown)."""
    group = raw if raw in NORTH_AMERICAN_GROUPS else accent_group(raw)
    if group is None:
        return None
    return "North American" if group in NORTH_AMERICAN_GROUPS else "other"


# raw speaker attributes segmented under another name (their values are grouped)
SEGMENT_NAMES = {"age": "age_group", "accent": "accent_group"}


def segment_table(speakers: dict) -> dict:
    """speaker -> {attribute: segment value} for population-segment EERs.

    ``speakers`` maps a speaker id to its attributes (as from ``Manifest.speaker_attributes``
    or a speaker file). ``sex`` is kept, ``age`` becomes ``age_group``, ``accent`` becomes
    ``accent_group`` (raw free text is too sparse to segment); other string attributes are kept
    as they are; other numbers are left out (they need a binning the caller chooses).
    """
    table = {}
    for spk, attrs in speakers.items():
        row = {}
        for key, value in attrs.items():
            if key == "speaker" or value is None:
                continue
            if isinstance(value, float) and math.isnan(value):
                continue
            if key == "age":
                row[SEGMENT_NAMES["age"]] = age_group(value)
            elif key == "accent":
                row[SEGMENT_NAMES["accent"]] = accent_group(value)
            elif isinstance(value, str) and value.strip():
                row[key] = value.strip()
        table[str(spk)] = {k: v for k, v in row.items() if v is not None}
    return table
