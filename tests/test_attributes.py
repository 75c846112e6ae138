"""Accent groupings (coarse and fine), non-informative labels, and SPARC's Voxlect labels mapped
to North American vs other (sparc_eval/data/attributes.py)."""

import pytest

from sparc_eval.errors import DataError

# Vox-Profile / Voxlect's 16 English classes (SPARC's accent labels) and the paper's binarisation
VOXLECT_REGIONS = {
    "East Asia": "other",
    "English": "other",
    "Germanic": "other",
    "Irish": "other",
    "North America": "North American",
    "Northern Irish": "other",
    "Oceania": "other",
    "Other": "other",
    "Romance": "other",
    "Scottish": "other",
    "Semitic": "other",
    "Slavic": "other",
    "South African": "other",
    "Southeast Asia": "other",
    "South Asia": "other",
    "Welsh": "other",
}


def test_voxlect_classes_map_to_north_american_or_other():
    from sparc_eval.data.attributes import accent_group, accent_region

    assert {label: accent_region(label) for label in VOXLECT_REGIONS} == VOXLECT_REGIONS
    from sparc_eval.data.attributes import VOXLECT_GROUPS

    assert len(VOXLECT_REGIONS) == 16 and set(VOXLECT_GROUPS) == set(VOXLECT_REGIONS)
    # as an export may spell them: case and spacing do not matter
    assert accent_region("north america") == accent_region(" North  America ") == "North American"
    # every class but Other is a named coarse group (segments on a SPARC export)
    assert [c for c in VOXLECT_REGIONS if accent_group(c) == "Other"] == ["Other"]
    assert accent_group("Northern Irish") != accent_group("Irish")


@pytest.mark.parametrize(
    "label",
    [
        "North America",
        "North American",
        "USA",
        "US",
        "U.S.",
        "en-us",
        "en-US",
        "American",
        "Canadian",
        "en-ca",
    ],
)
def test_north_american_spellings(label):
    from sparc_eval.data.attributes import accent_region

    assert accent_region(label) == "North American"


def test_accent_task_labels_a_sparc_export():
    """The text evaluation's accent task on Voxlect labels has North American speakers."""
    from sparc_eval.text_trials.trials import task_labeller

    attrs = {
        "a": {"accent": "North America"},
        "b": {"accent": "USA"},
        "c": {"accent": "English"},
        "d": {"accent": "South Asia"},
        "e": {"accent": None},
    }
    assert task_labeller("accent", attrs) == {
        "a": "North American",
        "b": "North American",
        "c": "other",
        "d": "other",
        "e": None,
    }


def test_fine_grouping_normalises_case_spacing_and_suffixes():
    from sparc_eval.data.attributes import fine_accent, normalise_accent

    for label in (
        "Irish accent",
        "irish",
        " Irish English ",
        "IRISH  accent",
        "Irish English accent",
    ):
        assert fine_accent(label) == "irish", label
    assert fine_accent("Spanish accent") == fine_accent("Spanish") == "spanish"
    assert fine_accent("Standard Indian English") == "standard indian"
    assert (
        fine_accent("English") == fine_accent("English accent") == "english"
    )  # a label's only word stays
    assert (
        fine_accent("Catalan") == "catalan"
    )  # not merged with Spanish: that is the coarse grouping
    assert normalise_accent("Fluent ") == "fluent" and fine_accent("Fluent ") is None
    assert (
        fine_accent(None) is None
        and fine_accent(float("nan")) is None
        and fine_accent(" NaN ") is None
    )


@pytest.mark.parametrize("grouping", ["coarse", "fine"])
def test_non_informative_labels_form_no_segment(grouping):
    from sparc_eval.data.attributes import accent_region, segment_table

    speakers = {
        "a": {"accent": "Fluent"},
        "b": {"accent": "Fluent "},
        "c": {"accent": "International"},
        "d": {"accent": "Neutral accent"},
        "e": {"accent": "Asian"},
        "f": {"accent": None},
        "g": {"accent": "Irish"},
        "h": {"accent": "East Asian"},
        "i": {"accent": "South Asian"},
    }
    assert {s for s, row in segment_table(speakers).items() if "accent_group" in row} == {
        "g",
        "h",
        "i",
    }
    assert all(
        accent_region(speakers[s]["accent"]) is None for s in "abcdef"
    )  # unknown to the accent task
    from sparc_eval.data.attributes import NON_INFORMATIVE_ACCENTS, accent_groups

    assert {"fluent", "international", "neutral", "asian"} <= NON_INFORMATIVE_ACCENTS
    table = segment_table(speakers, accent_grouping=grouping)
    assert {s for s, row in table.items() if "accent_group" in row} == {"g", "h", "i"}
    groups, left_out = accent_groups(speakers, grouping)
    assert sum(n for raws in groups.values() for n in raws.values()) == 3
    assert {k: v["n_speakers"] for k, v in left_out.items()} == {
        "(missing)": 1,
        "Asian": 1,
        "Fluent": 1,
        "Fluent ": 1,
        "International": 1,
        "Neutral accent": 1,
    }
    assert left_out["(missing)"]["reason"] == "no accent given"
    assert all(
        "says nothing about the accent" in v["reason"]
        for k, v in left_out.items()
        if k != "(missing)"
    )
    assert {table[s]["accent_group"] for s in "hi"} == (
        {"East Asian", "South Asian"} if grouping == "coarse" else {"east asian", "south asian"}
    )


def test_coarse_and_fine_groupings_side_by_side():
    from sparc_eval.data.attributes import accent_groups, segment_table

    speakers = {
        "a": {"accent": "Spanish"},
        "b": {"accent": "Spanish accent"},
        "c": {"accent": "Catalan"},
        "d": {"accent": "Irish"},
        "e": {"accent": " irish English"},
    }
    assert accent_groups(speakers, "coarse")[0] == {
        "Irish": {" irish English": 1, "Irish": 1},
        "Spanish": {"Catalan": 1, "Spanish": 1, "Spanish accent": 1},
    }
    assert accent_groups(speakers, "fine")[0] == {
        "catalan": {"Catalan": 1},
        "irish": {" irish English": 1, "Irish": 1},
        "spanish": {"Spanish": 1, "Spanish accent": 1},
    }
    assert segment_table(speakers)["c"]["accent_group"] == "Spanish"  # coarse is the default
    assert segment_table(speakers, accent_grouping="fine")["c"]["accent_group"] == "catalan"
    with pytest.raises(DataError, match="accent_grouping"):
        segment_table(speakers, accent_grouping="raw")


def test_segment_table_of_a_segment_table_is_the_same():
    from sparc_eval.data.attributes import segment_table

    speakers = {
        "a": {"speaker": "a", "sex": "F", "age": 70, "accent": "Irish accent", "n_languages": 2},
        "b": {"sex": "M", "age": None, "accent": "Fluent"},
    }
    for grouping in ("coarse", "fine"):
        table = segment_table(speakers, accent_grouping=grouping)
        assert segment_table(table) == table
    assert segment_table(speakers, accent_grouping="fine") == {
        "a": {"sex": "F", "age_group": "60+", "accent_group": "irish"},
        "b": {"sex": "M"},
    }
