"""Speaker attributes turned into population segments: age groups and accent groups.

Numeric attributes are binned (age: <30, 30-60, 60+, as in SPARC). Accents come as free-text
self-reports (EdAcc's self-reported accent has 47 values among 60 test speakers) or as the
labels of SPARC's accent classifier (Vox-Profile / Voxlect, 16 English classes). Two groupings
turn them into segments (``ACCENT_GROUPINGS``):

- ``coarse`` (the default): classifier classes and short spellings through the exact tables
  ``VOXLECT_GROUPS`` and ``ACCENT_SPELLINGS``, free text through the ordered keyword table
  ``ACCENT_RULES`` ("Spanish accent", "Catalan" -> Spanish; "Midwestern United States" ->
  American); ``Other`` when nothing matches;
- ``fine``: the label itself, normalised for case, spacing and a trailing "accent" / "English"
  (``normalise_accent``: "Irish accent", " Irish English " -> "irish"), closest to the
  per-accent groups of the content-leakage paper's Figure 3.

Labels that say nothing about the accent (``NON_INFORMATIVE_ACCENTS``: "Fluent", "International",
"Neutral", "Asian", ...) count as missing: they form no segment in either grouping, and SPARC's
binary accent task (North American vs other, ``accent_region``) does not label them either.
"""

from __future__ import annotations

import math
from typing import Optional

from ..errors import DataError
from .manifest import clean_value

AGE_GROUPS = ("<30", "30-60", "60+")


def age_group(age) -> Optional[str]:
    """``<30`` below 30, ``30-60`` from 30 up to (not including) 60, ``60+`` from 60."""
    if age is None or (isinstance(age, float) and math.isnan(age)):
        return None
    age = float(age)
    if age < 30:
        return "<30"
    return "30-60" if age < 60 else "60+"


# --- accents -------------------------------------------------------------------------------------

ACCENT_GROUPINGS = ("coarse", "fine")
ACCENT_SUFFIXES = ("accent", "english")  # dropped from the end of a label: "Vietnamese English"

# Normalised labels (exact match) that name no accent: a fluency ("fluent"), a non-answer
# ("neutral") or a continent ("asian"); the last is EdAcc dev's. Treated as missing, never a segment.
NON_INFORMATIVE_ACCENTS = frozenset(
    {
        "fluent",
        "international",
        "neutral",
        "generic",
        "asian",
        "mixed",
        "unknown",
        "not sure",
        "no accent",
        "generic middle class white person",
    }
)

# Vox-Profile / Voxlect's 16 English dialect classes (SPARC's accent labels) -> coarse group
VOXLECT_GROUPS = {
    "East Asia": "East Asian",
    "English": "British",
    "Germanic": "Germanic",
    "Irish": "Irish",
    "North America": "North American",
    "Northern Irish": "Northern Irish",
    "Oceania": "Oceanian",
    "Other": "Other",
    "Romance": "Romance",
    "Scottish": "Scottish",
    "Semitic": "Semitic",
    "Slavic": "Slavic",
    "South African": "South African",
    "Southeast Asia": "Southeast Asian",
    "South Asia": "South Asian",
    "Welsh": "Welsh",
}

# Short spellings (locale codes, abbreviations) that the keyword rules would miss or misread
ACCENT_SPELLINGS = {
    "us": "American",
    "usa": "American",
    "u.s.": "American",
    "u.s.a.": "American",
    "en-us": "American",
    "en_us": "American",
    "en-ca": "Canadian",
    "en_ca": "Canadian",
}

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
    (("indian", "pakistan", "south asia"), "South Asian"),
    (("southeast asia", "south east asia"), "Southeast Asian"),
    (("east asia",), "East Asian"),
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
)

NORTH_AMERICAN_GROUPS = frozenset({"American", "Canadian", "North American"})

_EXACT_GROUPS = {**{k.lower(): v for k, v in VOXLECT_GROUPS.items()}, **ACCENT_SPELLINGS}


def normalise_accent(raw) -> Optional[str]:
    """The label lower-cased, spaces collapsed, trailing "accent" / "English" dropped (not a
    label's only word: "English" stays); None when missing."""
    value = clean_value(raw)
    if value is None:
        return None
    words = str(value).lower().split()
    while len(words) > 1 and words[-1] in ACCENT_SUFFIXES:
        words.pop()
    return " ".join(words)


def fine_accent(raw) -> Optional[str]:
    """The fine-grained group: the normalised label; None when missing or non-informative."""
    label = normalise_accent(raw)
    return None if label in NON_INFORMATIVE_ACCENTS else label


def accent_group(raw) -> Optional[str]:
    """Coarse accent group; ``Other`` when no table or rule matches, None when the label is
    missing or non-informative."""
    text = fine_accent(raw)
    if text is None:
        return None
    if text in _EXACT_GROUPS:
        return _EXACT_GROUPS[text]
    words = set(
        text.replace("/", " ").replace(",", " ").replace("(", " ").replace(")", " ").split()
    )
    for keywords, group in ACCENT_RULES:
        for key in keywords:
            # short keys must be whole words ("rp" is not "Europe"); longer ones may be stems
            if (len(key) <= 3 and key in words) or (len(key) > 3 and key in text):
                return group
    return "Other"


def check_accent_grouping(grouping) -> str:
    if grouping not in ACCENT_GROUPINGS:
        raise DataError(
            f"accent_grouping must be one of {', '.join(ACCENT_GROUPINGS)}, not {grouping!r}"
        )
    return grouping


def accent_segment(raw, grouping: str = "coarse") -> Optional[str]:
    """The accent's segment value under ``grouping`` (``coarse`` or ``fine``)."""
    check_accent_grouping(grouping)
    return accent_group(raw) if grouping == "coarse" else fine_accent(raw)


def accent_region(raw) -> Optional[str]:
    """SPARC's accent task: ``North American`` or ``other`` (None when the accent is unknown)."""
    group = accent_group(raw)
    if group is None:
        return None
    return "North American" if group in NORTH_AMERICAN_GROUPS else "other"


def accent_groups(speakers: dict, grouping: str = "coarse") -> tuple:
    """How a corpus's accents were grouped: ``({group: {label: speakers}}, {label: {"n_speakers",
    "reason"}})``, the second for the labels in no segment (missing ones under ``(missing)``)."""
    groups, left_out = {}, {}
    for attrs in speakers.values():
        raw = attrs.get("accent")
        group = accent_segment(raw, grouping)
        if group is not None:
            by_label = groups.setdefault(group, {})
            by_label[str(raw)] = by_label.get(str(raw), 0) + 1
            continue
        missing = normalise_accent(raw) is None
        entry = left_out.setdefault(
            "(missing)" if missing else str(raw),
            {
                "n_speakers": 0,
                "reason": "no accent given"
                if missing
                else "says nothing about the accent (NON_INFORMATIVE_ACCENTS in sparc_eval/data/attributes.py)",
            },
        )
        entry["n_speakers"] += 1
    return (
        {g: dict(sorted(v.items())) for g, v in sorted(groups.items())},
        dict(sorted(left_out.items())),
    )


# raw speaker attributes segmented under another name (their values are grouped)
SEGMENT_NAMES = {"age": "age_group", "accent": "accent_group"}


def segment_table(speakers: dict, accent_grouping: str = "coarse") -> dict:
    """speaker -> {attribute: segment value} for population-segment EERs.

    ``speakers`` maps a speaker id to its attributes (as from ``Manifest.speaker_attributes``
    or a speaker file). ``sex`` is kept, ``age`` becomes ``age_group``, ``accent`` becomes
    ``accent_group`` under ``accent_grouping`` (raw free text is too sparse to segment; missing
    and non-informative accents give no value); other string attributes are kept as they are;
    other numbers are left out (they need a binning the caller chooses). A table it made goes
    through unchanged, so callers may group accents first and hand the table on.
    """
    check_accent_grouping(accent_grouping)  # a bad grouping fails even without accents
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
                row[SEGMENT_NAMES["accent"]] = accent_segment(value, accent_grouping)
            elif isinstance(value, str) and value.strip():
                row[key] = value.strip()
        table[str(spk)] = {k: v for k, v in row.items() if v is not None}
    return table
