"""A folder of audio files as a corpus (sparc_eval/data/corpora/audio_folder.py): a table of
speakers (CSV or JSON lines) or one folder per speaker; bad input named; detection after the
specific layouts; and the 100 LibriSpeech samples as a bare folder plus a CSV."""

import csv
import json
import warnings

import numpy as np
import pytest
import soundfile as sf

from sparc_eval.cli import main as cli
from sparc_eval.data.corpora import detect_layout, load_corpus
from sparc_eval.data.corpora.audio_folder import load_audio_folder
from sparc_eval.errors import DataError


def write_audio(folder, relative, seconds=0.25, rate=16000):
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, np.zeros(int(seconds * rate), np.float32), rate)
    return path


def write_csv(path, rows, delimiter=","):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, delimiter=delimiter).writerows(rows)


def info(capsys, *args):
    assert cli(["corpus", "info", *map(str, args)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    return dict(line.split(": ", 1) for line in lines)


@pytest.fixture
def flat_with_csv(tmp_path):
    """a1, a2 (alice), b1 (bob) at the top of the folder, listed in metadata.csv."""
    for name, seconds in (("a1.wav", 0.5), ("a2.flac", 0.25), ("b1.wav", 1.0)):
        write_audio(tmp_path, name, seconds)
    write_csv(
        tmp_path / "metadata.csv",
        [
            ("file", "speaker", "text", "sex", "age", "accent", "dialect"),
            ("a1.wav", "alice", "hello there", "Female", "31", "Irish", "north"),
            ("a2.flac", "alice", "good morning", "f", "", "", "north"),
            ("b1.wav", "bob", "see you", "m", "n/a", "Scottish", ""),
        ],
    )
    return tmp_path


# --- layouts ------------------------------------------------------------------------------------


def test_a_flat_folder_with_a_csv_table(flat_with_csv):
    corpus = load_corpus(flat_with_csv)
    assert [u.id for u in corpus] == ["a1", "a2", "b1"]
    assert corpus.speakers() == ["alice", "bob"]
    a1, b1 = corpus.get("a1"), corpus.get("b1")
    assert (a1.text, a1.sex, a1.age, a1.accent) == ("hello there", "F", 31.0, "Irish")
    assert (b1.sex, b1.age, b1.accent, b1.extra) == ("M", None, "Scottish", {})
    assert a1.extra == {"dialect": "north"} and a1.episode is None  # files not in folders
    assert [u.duration for u in corpus] == [0.5, 0.25, 1.0]
    assert a1.audio.path == str((flat_with_csv / "a1.wav").resolve())


def test_a_json_lines_table_with_files_grouped_in_folders(tmp_path):
    for rel in ("day1/a1.wav", "day1/b1.ogg", "day 2/a2.wav"):
        write_audio(tmp_path, rel)
    rows = [
        {"File": "day1/a1.wav", "Speaker": "alice", "gender": "female", "age": 40},
        {"File": "day1/b1.ogg", "Speaker": 7, "gender": "MALE"},
        {"File": "./day 2/a2.wav", "Speaker": "alice", "text": "hi", "episode": "walk"},
    ]
    (tmp_path / "who.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert detect_layout(tmp_path) == "audio_folder"  # not a conventional name: its header
    corpus = load_corpus(tmp_path)
    assert [u.id for u in corpus] == ["day1-a1", "day1-b1", "day_2-a2"]
    assert [u.speaker for u in corpus] == ["alice", "7", "alice"]
    assert [u.sex for u in corpus] == ["F", "M", None]
    assert [u.episode for u in corpus] == ["day1", "day1", "walk"]  # folder, or the column
    assert corpus.get("day1-a1").age == 40.0


def test_speaker_folders_without_a_table(tmp_path):
    for rel in ("alice/a1.wav", "alice/a2.flac", "bob/b 1.ogg", "bob/.hidden.wav"):
        write_audio(tmp_path, rel)
    (tmp_path / "bob" / "notes.txt").write_text("not audio\n")
    (tmp_path / "bob" / "._a1.wav").write_bytes(b"resource fork, not audio")
    corpus = load_corpus(tmp_path)
    assert [u.id for u in corpus] == ["alice-a1", "alice-a2", "bob-b_1"]
    assert [u.speaker for u in corpus] == ["alice", "alice", "bob"]
    assert {u.episode for u in corpus} == {None} and {u.text for u in corpus} == {""}
    assert all(u.duration == 0.25 for u in corpus)


def test_nested_speaker_folders_take_the_parent_folder_name(tmp_path):
    for rel in ("train/alice/a1.wav", "test/alice/a2.wav", "test/bob/b1.WAV"):
        write_audio(tmp_path, rel)
    corpus = load_corpus(tmp_path)
    assert [u.id for u in corpus] == ["test-alice-a2", "test-bob-b1", "train-alice-a1"]
    assert corpus.speakers() == ["alice", "bob"]
    assert [u.speaker for u in corpus] == ["alice", "bob", "alice"]


def test_a_table_given_as_the_path_or_the_table_option(flat_with_csv, tmp_path_factory):
    listed = flat_with_csv / "metadata.csv"
    renamed = flat_with_csv / "list.csv"
    listed.rename(renamed)
    assert detect_layout(renamed) == "audio_folder"
    assert [u.id for u in load_corpus(renamed)] == ["a1", "a2", "b1"]
    elsewhere = tmp_path_factory.mktemp("tables") / "semicolons.csv"
    write_csv(elsewhere, [("file", "speaker"), ("b1.wav", "bob")], delimiter=";")
    with pytest.warns(UserWarning, match="2 audio files are not in semicolons.csv"):
        corpus = load_audio_folder(flat_with_csv, table=elsewhere)
    assert [u.id for u in corpus] == ["b1"]


# --- bad input ----------------------------------------------------------------------------------


def test_a_flat_folder_without_a_table_says_what_to_add(tmp_path):
    write_audio(tmp_path, "a1.wav")
    write_audio(tmp_path, "bob/b1.wav")
    with pytest.raises(DataError, match="1 audio files lie at the top.*a1.wav.*add metadata.csv"):
        load_corpus(tmp_path)
    assert cli(["corpus", "info", str(tmp_path)]) == 2


def test_a_row_naming_a_missing_file(flat_with_csv):
    (flat_with_csv / "a2.flac").unlink()
    with pytest.raises(DataError, match=r"metadata.csv, line 3: a2.flac does not exist \(1 of 3"):
        load_corpus(flat_with_csv)
    with pytest.warns(UserWarning, match="skipped 1 utterances whose audio is missing"):
        corpus = load_corpus(flat_with_csv, skip_missing=True)
    assert [u.id for u in corpus] == ["a1", "b1"]


def test_a_table_whose_files_exist_nowhere_is_text_only(flat_with_csv):
    for name in ("a1.wav", "a2.flac", "b1.wav"):
        (flat_with_csv / name).unlink()
    with pytest.warns(UserWarning, match="none of the 3 listed audio files exist.*text-only"):
        corpus = load_corpus(flat_with_csv)
    assert not corpus.has_audio and len(corpus) == 3


def test_files_the_table_does_not_list_are_counted_once(flat_with_csv):
    write_audio(flat_with_csv, "extra1.wav")
    write_audio(flat_with_csv, "more/extra2.wav")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        corpus = load_corpus(flat_with_csv)
    assert len(corpus) == 3
    assert [str(w.message) for w in caught] == [
        f"{flat_with_csv}: 2 audio files are not in metadata.csv and are left out, e.g. extra1.wav"
    ]


def test_an_unreadable_audio_file_is_named(flat_with_csv):
    (flat_with_csv / "b1.wav").write_bytes(b"not a wav file at all")
    with pytest.raises(DataError, match=r"utterance 'b1': cannot read audio .*b1.wav"):
        load_corpus(flat_with_csv)
    with pytest.warns(UserWarning, match="1 audio file.* cannot be read"):
        corpus = load_corpus(flat_with_csv, keep_unreadable=True)
    assert corpus.get("b1").duration is None


def test_a_table_without_file_or_speaker_names_its_columns(tmp_path):
    write_audio(tmp_path, "a1.wav")
    write_csv(tmp_path / "speakers.csv", [("path", "spk", "text"), ("a1.wav", "alice", "hi")])
    with pytest.raises(
        DataError,
        match=r"speakers.csv: no file or speaker column; the table has "
        r"\['path', 'spk', 'text'\]",
    ):
        load_corpus(tmp_path)


def test_duplicate_ids_name_both_sources(tmp_path_factory, flat_with_csv):
    folders = tmp_path_factory.mktemp("speaker_folders")
    write_audio(folders, "alice/a1.wav")
    write_audio(folders, "alice/a1.flac")
    with pytest.raises(DataError, match="alice/a1.flac and alice/a1.wav both give .*'alice-a1'"):
        load_corpus(folders)
    with open(flat_with_csv / "metadata.csv", "a", newline="") as handle:
        csv.writer(handle).writerow(("./a1.wav", "alice", "again"))
    with pytest.raises(DataError, match=r"line 2 \(a1.wav\) and line 5 \(a1.wav\) both give"):
        load_corpus(flat_with_csv)


def test_two_tables_are_refused(flat_with_csv):
    write_csv(flat_with_csv / "speakers.csv", [("file", "speaker"), ("a1.wav", "alice")])
    with pytest.raises(DataError, match="more than one table .*point at the table file"):
        load_corpus(flat_with_csv)


# --- detection ----------------------------------------------------------------------------------


def test_corpus_info_detects_the_folder(flat_with_csv, capsys):
    found = info(capsys, flat_with_csv)
    assert found["layout"] == "audio_folder"
    assert (found["utterances"], found["speakers"], found["sex"]) == ("3", "2", "F 1, M 1")
    assert info(capsys, flat_with_csv / "metadata.csv")["layout"] == "audio_folder"


def test_the_specific_layouts_holding_audio_are_detected_as_before(tmp_path):
    kaldi = tmp_path / "kaldi"
    write_audio(kaldi, "u1.wav")
    (kaldi / "utt2spk").write_text("u1 alice\n")
    (kaldi / "wav.scp").write_text("u1 u1.wav\n")
    libri = tmp_path / "libri"
    write_audio(libri, "19/198/19-198-0000.flac")
    (libri / "19/198/19-198.trans.txt").write_text("19-198-0000 HELLO\n")
    manifest = tmp_path / "anonymized"
    write_audio(manifest, "alice/u1.wav")
    (manifest / "manifest.jsonl").write_text('{"id": "u1", "speaker": "alice"}\n')
    sparc = tmp_path / "sparc"
    write_audio(sparc, "audio/x.wav")
    (sparc / "export.parquet").write_bytes(b"")
    empty = tmp_path / "no_audio"
    empty.mkdir()
    (empty / "notes.txt").write_text("hello\n")
    found = {p.name: detect_layout(p) for p in (kaldi, libri, manifest, sparc)}
    assert found == {
        "kaldi": "kaldi",
        "libri": "librispeech",
        "anonymized": "manifest",
        "sparc": "sparc",
    }
    with pytest.raises(DataError, match="unknown corpus layout"):
        detect_layout(empty)


# --- real data: the LibriSpeech samples as a bare folder plus a CSV -----------------------------


def read_kaldi_table(path):
    return dict(
        line.rstrip("\n").split(" ", 1) for line in open(path, encoding="utf-8") if line.strip()
    )


def librispeech_as_folder(kaldi_dir, dest):
    """The FLAC files of KALDI_DIR linked flat into DEST, with DEST/metadata.csv
    (file,speaker,text,sex) written from wav.scp, utt2spk, text and spk2gender."""
    dest.mkdir(parents=True, exist_ok=True)
    wav, utt2spk = read_kaldi_table(kaldi_dir / "wav.scp"), read_kaldi_table(kaldi_dir / "utt2spk")
    text, gender = read_kaldi_table(kaldi_dir / "text"), read_kaldi_table(kaldi_dir / "spk2gender")
    rows = [("file", "speaker", "text", "sex")]
    for utt, relative in wav.items():
        source = (kaldi_dir / relative).resolve()
        (dest / source.name).symlink_to(source)
        rows.append((source.name, utt2spk[utt], text[utt], gender[utt2spk[utt]]))
    write_csv(dest / "metadata.csv", rows)
    return dest


def test_the_librispeech_samples_as_a_folder_match_the_kaldi_dir(data_dir, tmp_path):
    kaldi_dir = data_dir / "librispeech_samples"
    folder = librispeech_as_folder(kaldi_dir, tmp_path / "ls100")
    assert detect_layout(folder) == "audio_folder"
    corpus, kaldi = load_corpus(folder), load_corpus(kaldi_dir)
    assert len(corpus) == 100 and len(corpus.speakers()) == 10
    sexes = {s: a["sex"] for s, a in corpus.speaker_attributes().items()}
    assert sexes == {s: g.upper() for s, g in read_kaldi_table(kaldi_dir / "spk2gender").items()}
    assert sorted(sexes.values()) == ["F"] * 5 + ["M"] * 5
    assert [(u.id, u.speaker, u.text, u.sex) for u in sorted(corpus, key=lambda u: u.id)] == [
        (u.id, u.speaker, u.text, u.sex) for u in sorted(kaldi, key=lambda u: u.id)
    ]
    durations = {u.id: u.duration for u in kaldi}
    assert all(abs(u.duration - durations[u.id]) < 0.01 for u in corpus)
