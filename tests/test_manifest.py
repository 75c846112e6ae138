import copy
import csv
import json
import pickle
import warnings

import pytest

from sparc_eval.data.manifest import (
    AttributeConflictWarning,
    AudioRef,
    Manifest,
    Utterance,
    normalise_sex,
    resolve_audio,
    word_counts,
)
from sparc_eval.errors import DataError


def _utts():
    return [
        Utterance(
            "a1",
            "A",
            "hello there",
            "ep1",
            audio=AudioRef("/x/a1.wav"),
            duration=1.5,
            sex="F",
            age=31.0,
            accent="Irish",
            extra={"ethnicity": "White"},
        ),
        Utterance(
            "b1",
            "B",
            "general kenobi",
            "ep1",
            audio=AudioRef("/x/rec.wav", 2.0, 3.5),
            duration=1.5,
            sex="M",
        ),
    ]


def test_jsonl_round_trip_keeps_every_field(tmp_path):
    manifest = Manifest(_utts())
    manifest.write_jsonl(tmp_path / "m.jsonl")
    back = Manifest.read_jsonl(tmp_path / "m.jsonl")
    assert [u.to_dict() for u in back] == [u.to_dict() for u in manifest]
    first = json.loads((tmp_path / "m.jsonl").read_text().splitlines()[0])
    assert list(first) == [
        "id",
        "speaker",
        "text",
        "episode",
        "series",
        "audio",
        "duration",
        "sex",
        "age",
        "accent",
        "extra",
    ]
    assert first["audio"] == {"path": "/x/a1.wav", "start": None, "stop": None}


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("f", "F"),
        ("Female", "F"),
        ("MALE", "M"),
        ("m", "M"),
        ("Demiboy", None),
        (float("nan"), None),
        (None, None),
    ],
)
def test_sex_is_normalised(raw, expected):
    assert normalise_sex(raw) == expected


def test_truncated_line_names_file_and_line(tmp_path):
    path = tmp_path / "m.jsonl"
    Manifest(_utts()).write_jsonl(path)
    text = path.read_text()
    path.write_text(text[: len(text) - 20])
    with pytest.raises(DataError, match=r"m\.jsonl, line 2: not valid JSON"):
        Manifest.read_jsonl(path)


def test_duplicate_ids_are_rejected():
    utts = _utts()
    utts[1].id = "a1"
    with pytest.raises(DataError, match="duplicate utterance id.*a1"):
        Manifest(utts).validate()


def test_text_only_corpus_needs_text():
    utts = [Utterance("a1", "A", "words", "e"), Utterance("a2", "A", "  ", "e")]
    with pytest.raises(DataError, match="'a2' has an empty transcript"):
        Manifest(utts).validate()
    # an audio-only corpus may have empty text
    Manifest([Utterance("a1", "A", "", "e", audio=AudioRef("/x.wav"))]).validate()


def test_unknown_field_is_rejected(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"id": "u", "speaker": "s", "text": "t", "gender": "f"}) + "\n")
    with pytest.raises(DataError, match="line 1.*unknown fields \\['gender'\\]"):
        Manifest.read_jsonl(path)


def test_speechbrain_csv_loads_in_dynamic_item_dataset(tmp_path):
    from sparc_eval.speechbrain_compat import import_speechbrain

    import_speechbrain()
    from speechbrain.dataio.dataset import DynamicItemDataset

    Manifest(_utts()).to_speechbrain_csv(tmp_path / "m.csv")
    rows = list(csv.DictReader(open(tmp_path / "m.csv")))
    assert rows[1]["start"] == "2.0" and rows[1]["stop"] == "3.5" and rows[0]["spk_id"] == "A"
    dataset = DynamicItemDataset.from_csv(str(tmp_path / "m.csv"))
    dataset.set_output_keys(["id", "spk_id", "wav", "duration"])
    assert dataset[1] == {"id": "b1", "spk_id": "B", "wav": "/x/rec.wav", "duration": 1.5}


def test_text_only_rule(tmp_path):
    (tmp_path / "present.wav").write_bytes(b"")
    all_missing = [
        Utterance("u1", "s", "t", audio=AudioRef(str(tmp_path / "no1.wav"))),
        Utterance("u2", "s", "t", audio=AudioRef(str(tmp_path / "no2.wav"))),
    ]
    with pytest.warns(UserWarning, match="none of the 2 listed audio files exist"):
        out = resolve_audio(all_missing, name="c")
    assert all(u.audio is None for u in out)

    def mixed():
        return [
            Utterance("u1", "s", "t", audio=AudioRef(str(tmp_path / "present.wav"))),
            Utterance("u2", "s", "t", audio=AudioRef(str(tmp_path / "gone.wav"))),
        ]

    with pytest.raises(DataError, match="1 of 2 audio files are missing.*u2"):
        resolve_audio(mixed(), name="c")
    with pytest.warns(UserWarning, match="skipped 1"):
        kept = resolve_audio(mixed(), name="c", skip_missing=True)
    assert [u.id for u in kept] == ["u1"]


def test_atomic_write_leaves_old_file_on_failure(tmp_path):
    from sparc_eval.atomic import atomic_open

    path = tmp_path / "out.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_open(path) as handle:
            handle.write("half")
            raise RuntimeError("interrupted")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_atomic_stream_writes_every_piece_in_order(tmp_path):
    from sparc_eval.atomic import atomic_stream

    path = tmp_path / "out.txt"
    pieces = [f"line {i} é\n" * (i % 7) for i in range(500)]  # more pieces than the queue holds
    with atomic_stream(path) as handle:
        for piece in pieces:
            handle.write(piece)
        assert not path.exists()  # the file appears only when the block is done
    assert path.read_text(encoding="utf-8") == "".join(pieces)
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_atomic_stream_failures_leave_the_old_file(tmp_path):
    from sparc_eval.atomic import atomic_stream

    path = tmp_path / "out.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError, match="interrupted"):
        with atomic_stream(path) as handle:
            handle.write("half")
            raise RuntimeError("interrupted")
    # the writing thread's own error (here: text the encoding cannot hold) reaches the caller
    with pytest.raises(UnicodeEncodeError):
        with atomic_stream(path, encoding="ascii") as handle:
            handle.write("é")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


# --- cached lookups, transforms that copy, and speaker attribute conflicts ----------------------


def _speaker(sid, values, field="sex"):
    """Utterances of speaker ``sid`` whose ``field`` takes ``values`` in turn (None: unknown)."""
    return [Utterance(f"{sid}{i}", sid, "t", **{field: v}) for i, v in enumerate(values)]


def test_lookups_are_built_once():
    manifest = Manifest(_utts())
    index = manifest.by_id()
    assert (
        manifest.by_id() is index
        and manifest.get("b1") is manifest[1]
        and manifest.get("zz") is None
    )
    assert index["a1"] is manifest[0] and set(index) == {"a1", "b1"}
    with pytest.raises(TypeError):
        index["c1"] = manifest[0]  # read-only: it is shared by every caller
    assert (
        manifest.speaker_attributes()["A"] is not manifest.speaker_attributes()["A"]
    )  # copies of a cached table
    spk = manifest.utt2spk()
    spk["a1"] = "Z"  # callers get their own dict
    assert manifest.utt2spk() == {"a1": "A", "b1": "B"} and manifest.speakers() == ["A", "B"]
    # the caches stay behind when a manifest goes to another process (ray, multiprocessing)
    back = pickle.loads(pickle.dumps(manifest))
    assert [u.to_dict() for u in back] == [
        u.to_dict() for u in manifest
    ] and back.by_id().keys() == index.keys()
    assert copy.deepcopy(manifest).get("a1").to_dict() == manifest[0].to_dict()


def test_transforms_leave_the_manifest_unchanged(tmp_path):
    utts = _utts()
    manifest = Manifest(utts, name="m", read_passages=True)
    before = [u.to_dict() for u in manifest]
    small = manifest.subset(lambda u: u.speaker == "A")
    renamed = manifest.replace(name="other")
    assert [u.id for u in small] == ["a1"] and (small.name, small.read_passages) == ("m", True)
    assert renamed.name == "other" and renamed.read_passages and list(renamed) == list(manifest)
    assert len(manifest) == 2 and manifest.name == "m" and [u.to_dict() for u in manifest] == before
    with pytest.raises(AttributeError):
        manifest.utterances = []  # the tuple behind the cached lookups cannot be swapped
    # the text-only rule copies the utterances it changes
    missing = [Utterance("u1", "s", "t", audio=AudioRef(str(tmp_path / "no.wav")))]
    with pytest.warns(UserWarning, match="text-only"):
        out = resolve_audio(missing, name="c")
    assert out[0].audio is None and missing[0].audio is not None


def test_load_manifest_resolves_relative_audio_on_copies(tmp_path):
    from sparc_eval.data.corpora import load_manifest

    (tmp_path / "a.wav").write_bytes(b"")
    Manifest([Utterance("a", "s", "t", audio=AudioRef("a.wav"))]).write_jsonl(
        tmp_path / "manifest.jsonl"
    )
    manifest = load_manifest(tmp_path)
    assert (
        manifest[0].audio.path == str((tmp_path / "a.wav").resolve()) and not manifest.read_passages
    )


def test_conflicting_speaker_is_reported_and_resolved_by_majority():
    utts = (
        _speaker("A", ["F", "M", None, "M"])
        + _speaker("B", ["M", "M"])
        + _speaker("C", [31.0, 45.0], "age")
    )
    manifest = Manifest(utts, name="toy")
    conflicts = manifest.attribute_conflicts()
    assert [(c.speaker, c.attribute, c.counts, c.resolved) for c in conflicts] == [
        ("A", "sex", (("F", 1), ("M", 2)), "M"),  # majority wins over first seen
        ("C", "age", ((31.0, 1), (45.0, 1)), 31.0),  # a tie goes to the first seen
    ]
    with pytest.warns(AttributeConflictWarning) as caught:
        table = manifest.speaker_attributes()
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "2 speaker attribute conflict" in message and "'F' (1) vs 'M' (2)" in message
    assert (
        "31.0 (1) vs 45.0 (1)" in message and "most frequent" in message and "first seen" in message
    )
    assert (table["A"]["sex"], table["B"]["sex"], table["C"]["age"]) == ("M", "M", 31.0)


def test_runs_of_equal_values_are_counted_as_their_utterances():
    """Attributes are counted a run of equal utterances at a time: a speaker's runs split by
    another speaker's utterances add up, ties still go to the first seen, NaN counts nowhere."""
    nan = float("nan")
    utts = (
        _speaker("A", ["F", "F"])
        + _speaker("B", ["M"])
        + [Utterance(f"a{i}", "A", "t", sex="M") for i in range(2, 5)]
        + [Utterance(f"c{i}", "C", "t", sex=s, age=nan) for i, s in enumerate("MMFF")]
    )
    conflicts = Manifest(utts).attribute_conflicts()
    assert [(c.speaker, c.counts, c.resolved) for c in conflicts] == [
        ("A", (("F", 2), ("M", 3)), "M"),
        ("C", (("M", 2), ("F", 2)), "M"),
    ]
    assert Manifest(utts).speaker_attributes(warn=False)["C"]["age"] is None


def test_word_counts_are_counted_once_per_manifest():
    utts = [Utterance("a", "A", " two  words "), Utterance("b", "A", ""), Utterance("c", "B", "x")]
    manifest = Manifest(utts)
    assert manifest.word_counts() == (2, 0, 1) and manifest.word_counts() is manifest.word_counts()
    assert word_counts(utts) == (2, 0, 1) and word_counts(manifest) is manifest.word_counts()


def test_read_extra_strings_are_held_once_and_extra_must_be_an_object(tmp_path):
    title = "".join(["An episode title ", "read from a file"])  # built: not a code constant
    rows = [
        {
            "id": f"u{i}",
            "speaker": "A",
            "text": "t",
            "extra": {"title": title, "asr_text": f"said {i % 1}"},
        }
        for i in range(2)
    ]
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    a, b = Manifest.read_jsonl(path)
    assert a.extra == rows[0]["extra"] and b.extra == rows[1]["extra"]
    assert a.extra["title"] is b.extra["title"]  # an episode's title: one object
    assert a.extra["asr_text"] is not b.extra["asr_text"]  # a transcript: left as read
    path.write_text(json.dumps({"id": "u", "speaker": "A", "text": "t", "extra": ["t"]}) + "\n")
    with pytest.raises(DataError, match="line 1: 'extra' must be null or a JSON object"):
        Manifest.read_jsonl(path)


def test_extra_attribute_conflicts_and_utterance_fields():
    utts = [
        Utterance("a1", "A", "t", extra={"ethnicity": "White", "asr_text": "one", "tags": ["x"]}),
        Utterance("a2", "A", "t", extra={"ethnicity": "Asian", "asr_text": "two", "tags": ["x"]}),
        Utterance("a3", "A", "t", extra={"ethnicity": "Asian"}),
    ]
    manifest = Manifest(utts)
    # asr_text is per utterance by design (UTTERANCE_EXTRA): resolved, never reported
    assert [(c.attribute, c.counts) for c in manifest.attribute_conflicts()] == [
        ("ethnicity", (("White", 1), ("Asian", 2)))
    ]
    with pytest.warns(AttributeConflictWarning, match="1 speaker attribute conflict"):
        row = manifest.speaker_attributes()["A"]
    assert (row["ethnicity"], row["asr_text"], row["tags"]) == ("Asian", "one", ["x"])


def test_consistent_speakers_warn_nothing():
    utts = _utts() + [
        Utterance("a2", "A", "again", sex="F", age=31.0, extra={"ethnicity": "White"}),
        Utterance("b2", "B", "more", sex=None, accent=float("nan")),
    ]  # unknowns never conflict
    manifest = Manifest(utts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = manifest.speaker_attributes()
    assert manifest.attribute_conflicts() == []
    assert table["A"] == {
        "speaker": "A",
        "sex": "F",
        "age": 31.0,
        "accent": "Irish",
        "ethnicity": "White",
    }
    assert table["B"] == {"speaker": "B", "sex": "M", "age": None, "accent": None}


def test_corpus_info_lists_conflicts(tmp_path, capsys):
    from sparc_eval.cli import main as cli

    Manifest(_speaker("A", ["F", "M", "M"]), name="m").write_jsonl(tmp_path / "manifest.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("error", AttributeConflictWarning)  # listed, not warned twice
        assert cli(["corpus", "info", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "attribute_conflicts: 1" in out and "speaker A sex: 'F' (1) vs 'M' (2), kept 'M'" in out
    assert "attribute_rule: kept each speaker's most frequent value" in out
