import csv
import json

import pytest

from sparc_eval.errors import DataError
from sparc_eval.manifest import AudioRef, Manifest, Utterance, normalise_sex, resolve_audio


def _utts():
    return [
        Utterance("a1", "A", "hello there", "ep1", audio=AudioRef("/x/a1.wav"), duration=1.5, sex="F", age=31.0,
                  accent="Irish", extra={"ethnicity": "White"}),
        Utterance("b1", "B", "general kenobi", "ep1", audio=AudioRef("/x/rec.wav", 2.0, 3.5), duration=1.5, sex="M"),
    ]


def test_jsonl_round_trip_keeps_every_field(tmp_path):
    manifest = Manifest(_utts())
    manifest.write_jsonl(tmp_path / "m.jsonl")
    back = Manifest.read_jsonl(tmp_path / "m.jsonl")
    assert [u.to_dict() for u in back] == [u.to_dict() for u in manifest]
    first = json.loads((tmp_path / "m.jsonl").read_text().splitlines()[0])
    assert list(first) == ["id", "speaker", "text", "episode", "series", "audio", "duration", "sex", "age",
                           "accent", "extra"]
    assert first["audio"] == {"path": "/x/a1.wav", "start": None, "stop": None}


@pytest.mark.parametrize("raw,expected", [("f", "F"), ("Female", "F"), ("MALE", "M"), ("m", "M"),
                                          ("Demiboy", None), (float("nan"), None), (None, None)])
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
    all_missing = [Utterance("u1", "s", "t", audio=AudioRef(str(tmp_path / "no1.wav"))),
                   Utterance("u2", "s", "t", audio=AudioRef(str(tmp_path / "no2.wav")))]
    with pytest.warns(UserWarning, match="none of the 2 listed audio files exist"):
        out = resolve_audio(all_missing, name="c")
    assert all(u.audio is None for u in out)

    def mixed():
        return [Utterance("u1", "s", "t", audio=AudioRef(str(tmp_path / "present.wav"))),
                Utterance("u2", "s", "t", audio=AudioRef(str(tmp_path / "gone.wav")))]

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
