"""Loaders on the real data in ../shared/data and on small layouts the tests write."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from sparc_eval.cli import main as cli
from sparc_eval.data.corpora import detect_layout, load_corpus, read_trials
from sparc_eval.data.corpora.edacc import load_edacc_release
from sparc_eval.data.corpora.sparc import load_sparc
from sparc_eval.errors import DataError
from sparc_eval.speech.audio import check_audio, read_utterance


def _info(capsys, *args):
    assert cli(["corpus", "info", *map(str, args)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    return dict(line.split(": ", 1) for line in lines)


# --- real data ---------------------------------------------------------------------------------


def test_librispeech_test_clean_tree(data_dir, capsys):
    path = data_dir / "librispeech/derived/LibriSpeech/test-clean"
    with pytest.warns(UserWarning, match="text-only"):
        manifest = load_corpus(path)
    assert (
        len(manifest) == 2620 and len(manifest.speakers()) == 40 and len(manifest.episodes()) == 87
    )
    sexes = [a["sex"] for a in manifest.speaker_attributes().values()]
    assert sexes.count("F") == 20 and sexes.count("M") == 20
    assert manifest.hours() is None and not manifest.has_audio
    first = manifest[0]
    assert first.id.startswith(f"{first.speaker}-{first.episode}-") and first.series == "test-clean"
    info = _info(capsys, path)
    assert info["utterances"] == "2620" and info["speakers"] == "40" and info["hours"] == "unknown"
    assert info["sex"] == "F 20, M 20"


@pytest.mark.parametrize(
    "name,target,nontarget",
    [
        ("libri_test_trials_f", 548, 11196),
        ("libri_test_trials_m", 449, 9457),
        ("libri_dev_trials_f", 704, 14566),
        ("libri_dev_trials_m", 644, 12796),
    ],
)
def test_voiceprivacy_trials(data_dir, capsys, name, target, nontarget):
    path = data_dir / "vpc_librispeech" / name
    manifest = load_corpus(path)
    trials = read_trials(path / "trials", known_utterances=set(manifest.by_id()))
    assert sum(t[2] for t in trials) == target and sum(not t[2] for t in trials) == nontarget
    info = _info(capsys, path)
    assert (info["target"], info["nontarget"]) == (str(target), str(nontarget))


def test_voiceprivacy_enrolls(data_dir, capsys):
    info = _info(capsys, data_dir / "vpc_librispeech/libri_test_enrolls")
    assert info["enrolls"] == "438" and info["speakers"] == "29"


def test_edacc_test_datafile(data_dir, capsys):
    path = data_dir / "edacc/spane_lists/edacc-test.txt"
    manifest = load_corpus(path)
    assert (
        len(manifest) == 9289 and len(manifest.speakers()) == 60 and len(manifest.episodes()) == 30
    )
    utt = manifest.by_id()["EDACC-C02-000000000"]
    assert (utt.speaker, utt.episode, utt.sex, utt.age, utt.accent) == (
        "EDACC-C02-A",
        "EDACC-C02",
        "M",
        25.0,
        "International",
    )
    assert utt.extra["n_languages"] == 4
    # parts _P1/_P2 of one conversation are one episode, holding its two speakers
    episodes = {}
    for u in manifest:
        episodes.setdefault(u.episode, set()).add(u.speaker)
    assert all(len(s) == 2 for s in episodes.values())
    # bare NaN in the file becomes null, never the string "nan"
    nan_accents = [a for a in manifest.speaker_attributes().values() if a["accent"] is None]
    assert len(nan_accents) == 2
    info = _info(capsys, path)
    assert (info["utterances"], info["speakers"], info["episodes"]) == ("9289", "60", "30")


def test_librispeech_samples_kaldi_dir(data_dir, capsys):
    path = data_dir / "librispeech_samples"
    manifest = load_corpus(path)
    assert len(manifest) == 100 and len(manifest.speakers()) == 10 and manifest.has_audio
    utt2dur = dict(line.split() for line in (path / "utt2dur").read_text().splitlines())
    for utt in manifest:
        assert utt.duration == pytest.approx(float(utt2dur[utt.id]), abs=1e-6)
        info = sf.info(utt.audio.path)
        assert info.frames / info.samplerate == pytest.approx(float(utt2dur[utt.id]), abs=1e-3)
    check_audio(manifest, sample_rate=16000)
    wav, sr = read_utterance(manifest[0])
    assert (
        sr == 16000 and wav.dtype == np.float32 and len(wav) == round(manifest[0].duration * 16000)
    )
    info = _info(capsys, path)
    assert info["utterances"] == "100" and info["audio"] == "yes"
    assert float(info["hours"]) == pytest.approx(sum(u.duration for u in manifest) / 3600, abs=1e-3)


def test_corpus_info_json_in_subprocess(data_dir):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "sparc_eval.cli",
            "corpus",
            "info",
            "--json",
            str(data_dir / "librispeech_samples"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    info = json.loads(out.stdout)
    assert info["utterances"] == 100 and info["layout"] == "kaldi"


# --- layouts written by the tests ----------------------------------------------------------------


@pytest.fixture()
def librispeech_tree(data_dir, tmp_path):
    """A real LibriSpeech tree (audio included) built from the 100 sample files."""
    samples = data_dir / "librispeech_samples"
    root = tmp_path / "LibriSpeech"
    text = dict(line.split(" ", 1) for line in (samples / "text").read_text().splitlines())
    for utt, line in text.items():
        spk, chapter, _ = utt.split("-")
        folder = root / "test-other" / spk / chapter
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(samples / "test-other" / spk / f"{utt}.flac", folder / f"{utt}.flac")
        with open(folder / f"{spk}-{chapter}.trans.txt", "a") as handle:
            handle.write(f"{utt} {line.strip()}\n")
    shutil.copy(samples / "test-other/SPEAKERS.TXT", root / "SPEAKERS.TXT")
    return root


def test_librispeech_tree_with_audio(librispeech_tree, data_dir):
    manifest = load_corpus(librispeech_tree / "test-other")
    assert detect_layout(librispeech_tree) == "librispeech"
    assert len(load_corpus(librispeech_tree)) == 100  # the LibriSpeech folder loads every subset
    assert len(manifest) == 100 and manifest.has_audio and manifest.hours() > 0
    kaldi = load_corpus(data_dir / "librispeech_samples").by_id()
    for utt in manifest:
        assert utt.duration == pytest.approx(kaldi[utt.id].duration, abs=1e-3)
        assert utt.sex == kaldi[utt.id].sex and utt.text == kaldi[utt.id].text


def test_partly_missing_audio_is_an_error(librispeech_tree):
    victim = next(librispeech_tree.glob("test-other/*/*/*.flac"))
    victim.unlink()
    with pytest.raises(DataError, match=f"1 of 100 audio files are missing.*{victim.stem}"):
        load_corpus(librispeech_tree / "test-other")
    with pytest.warns(UserWarning, match="skipped 1"):
        assert len(load_corpus(librispeech_tree / "test-other", skip_missing=True)) == 99


def _kaldi_dir(tmp_path, rate=16000, corrupt=False):
    folder = tmp_path / "kaldi"
    (folder / "wav").mkdir(parents=True)
    for i in range(3):
        path = folder / "wav" / f"s1-u{i}.wav"
        if corrupt and i == 1:
            path.write_bytes(b"RIFF not really audio")
        else:
            sf.write(path, np.zeros(rate // 2, dtype=np.float32), rate)
    (folder / "wav.scp").write_text("".join(f"s1-u{i} wav/s1-u{i}.wav\n" for i in range(3)))
    (folder / "utt2spk").write_text("".join(f"s1-u{i} s1\n" for i in range(3)))
    (folder / "text").write_text("".join(f"s1-u{i} word {i}\n" for i in range(3)))
    return folder


def test_kaldi_relative_paths_resolve_against_the_dir(tmp_path):
    manifest = load_corpus(_kaldi_dir(tmp_path))
    assert manifest[0].audio.path == str((tmp_path / "kaldi/wav/s1-u0.wav").resolve())
    assert manifest[0].duration == pytest.approx(0.5)


def test_corrupt_audio_names_the_utterance(tmp_path):
    with pytest.raises(DataError, match="'s1-u1': cannot read audio"):
        load_corpus(_kaldi_dir(tmp_path, corrupt=True))


def test_wrong_sample_rate_names_the_utterance(tmp_path):
    manifest = load_corpus(_kaldi_dir(tmp_path, rate=8000))
    with pytest.raises(DataError, match="'s1-u0'.*8000 Hz, expected 16000 Hz"):
        check_audio(manifest, sample_rate=16000)
    wav, sr = read_utterance(manifest[0], sample_rate=16000)  # reading resamples
    assert sr == 16000 and len(wav) == 8000


def test_kaldi_bad_inputs(tmp_path):
    folder = _kaldi_dir(tmp_path)
    (folder / "utt2spk").write_text("s1-u0 s1\ns1-u1 s1\ns1-u2 s1\ns1-u0 s2\n")
    with pytest.raises(DataError, match=r"utt2spk, line 4: duplicate id 's1-u0'"):
        load_corpus(folder)
    (folder / "utt2spk").write_text("s1-u0 s1\ns1-u1 s1\ns1-u2 s1\n")
    (folder / "trials").write_text("s1 s1-u0 target\ns1 s1-u9 nontarget\n")
    with pytest.raises(
        DataError, match=r"trials, line 2: test utterance 's1-u9' is not in the corpus"
    ):
        read_trials(folder / "trials", known_utterances=set(load_corpus(folder).by_id()))
    (folder / "trials").write_text("s1 s1-u0 maybe\n")
    with pytest.raises(DataError, match="line 1: unknown label 'maybe'"):
        read_trials(folder / "trials")
    (folder / "trials").write_text("s1 s1-u0 target\ns1 s1-u0 target\n")
    with pytest.raises(DataError, match="line 2: duplicate trial"):
        read_trials(folder / "trials")
    (folder / "text").write_text("s1-u0 word\ns1-u1 \ns1-u2 word\n")
    load_corpus(folder)  # empty text is allowed when audio exists
    shutil.rmtree(folder / "wav")
    with (
        pytest.warns(UserWarning),
        pytest.raises(DataError, match="'s1-u1' has an empty transcript"),
    ):
        load_corpus(folder)


def test_empty_trials_enroll_speaker_check(tmp_path):
    folder = _kaldi_dir(tmp_path)
    (folder / "trials").write_text("s9 s1-u0 nontarget\n")
    with pytest.raises(DataError, match="enrollment speaker 's9'"):
        read_trials(folder / "trials", known_speakers={"s1"})


def _edacc_release(tmp_path, with_wav=True):
    """The EdAcc release layout as documented in sparc_eval/data/corpora/edacc.py."""
    root = tmp_path / "edacc_v1.0"
    (root / "data").mkdir(parents=True)
    (root / "test").mkdir()
    rows = []
    for conv, parts in (
        ("EDACC-C01", ["EDACC-C01_P1", "EDACC-C01_P2"]),
        ("EDACC-C02", ["EDACC-C02"]),
    ):
        for part in parts:
            if with_wav:
                sf.write(
                    root / "data" / f"{part}.wav", np.zeros(32000 * 6, dtype=np.float32), 32000
                )
            for k, spk in enumerate(("A", "B")):
                rows.append((f"{part}-{k:09d}", part, 1.0 + 2 * k, 2.5 + 2 * k, f"{conv}-{spk}"))
    (root / "test/segments").write_text("".join(f"{u} {r} {s} {e}\n" for u, r, s, e, _ in rows))
    (root / "test/utt2spk").write_text("".join(f"{u} {spk}\n" for u, *_, spk in rows))
    (root / "test/text").write_text("".join(f"{u} so what do you think\n" for u, *_ in rows))
    (root / "test/conv.list").write_text("EDACC-C01_P1\nEDACC-C01_P2\nEDACC-C02\n")
    header = [
        "PARTICIPANT_ID",
        "What is your gender?",
        "What year were you born?",
        "How would you describe your accent in English? (e.g. Italian, Glaswegian)",
        "What is your ethnicity?",
        "What is your highest level of education?",
        "What languages do you speak?",
    ]
    lines = [
        ",".join(f'"{h}"' for h in header),
        'EDACC-C01-A,Female,1990,Irish,White,Postgraduate degree,"English, Irish"',
        "EDACC-C01-B,Male,1961,American ,Black,Undergraduate degree,English",
        "EDACC-C02-A,Female,1999,NaN,Asian,Postgraduate degree,Vietnamese",
        "EDACC-C02-B,Non-binary,,Nigerian,Black,Secondary,Yoruba",
    ]
    (root / "linguistic_background.csv").write_text("\n".join(lines) + "\n")
    return root


def test_edacc_release_layout(tmp_path, capsys):
    root = _edacc_release(tmp_path)
    assert detect_layout(root) == "edacc"
    manifest = load_edacc_release(root, split="test")
    assert len(manifest) == 6 and manifest.episodes() == ["EDACC-C01", "EDACC-C02"]
    utt = manifest.by_id()["EDACC-C01_P2-000000001"]
    assert utt.speaker == "EDACC-C01-B" and utt.audio.path.endswith("data/EDACC-C01_P2.wav")
    assert (utt.audio.start, utt.audio.stop, utt.duration) == (3.0, 4.5, 1.5)
    assert (utt.sex, utt.age, utt.accent) == ("M", 62.0, "American")
    assert utt.extra == {"ethnicity": "Black", "education": "Undergraduate degree"}
    other = manifest.speaker_attributes()
    assert other["EDACC-C02-A"]["accent"] is None and other["EDACC-C02-B"]["sex"] is None
    wav, sr = read_utterance(utt)
    assert sr == 16000 and len(wav) == 24000
    assert _info(capsys, root)["utterances"] == "6"


def test_edacc_release_missing_speaker_row(tmp_path):
    root = _edacc_release(tmp_path, with_wav=False)
    csv_path = root / "linguistic_background.csv"
    csv_path.write_text("\n".join(csv_path.read_text().splitlines()[:-1]) + "\n")
    with (
        pytest.warns(UserWarning, match="text-only"),
        pytest.raises(DataError, match="1 speakers of test have no row.*EDACC-C02-B"),
    ):
        load_edacc_release(root)


def test_sparc_parquet_with_column_mapping(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "host": ["ann", "ann", "bob", "bob"],
            "episode_id": ["e1", "e1", "e2", "e2"],
            "podcast": ["show", "show", "show", "show"],
            "transcript": [
                "welcome back to the show",
                "today we talk sailing",
                "hi all",
                "trains are great",
            ],
            "gender": ["female", "female", "male", "male"],
            "age": [34, 34, None, None],
            "title": ["Sailing", "Sailing", "Trains", "Trains"],
            "category": ["Sports", "Sports", "Leisure", "Leisure"],
        }
    )
    pq.write_table(table, tmp_path / "part-0.parquet")
    (tmp_path / "columns.yaml").write_text("speaker: host\n")
    manifest = load_sparc(tmp_path, columns=tmp_path / "columns.yaml")
    assert detect_layout(tmp_path) == "sparc"
    assert [u.id for u in manifest] == ["e1-0000000", "e1-0000001", "e2-0000002", "e2-0000003"]
    first = manifest[0]
    assert (first.speaker, first.episode, first.series, first.sex, first.age) == (
        "ann",
        "e1",
        "show",
        "F",
        34.0,
    )
    assert first.extra == {"title": "Sailing", "category": "Sports"} and manifest[2].age is None
    with pytest.raises(DataError, match="no column for \\['speaker'\\]"):
        load_sparc(tmp_path)


def test_sparc_jsonl_truncated(tmp_path):
    rows = [
        {"speaker": "a", "episode": "e", "text": "one two"},
        {"speaker": "b", "episode": "e", "text": "x"},
    ]
    path = tmp_path / "sparc.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows)[:-5] + "\n")
    with pytest.raises(DataError, match="sparc.jsonl, line 2: not valid JSON"):
        load_corpus(path)


def test_unknown_layout_says_what_is_expected(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(DataError, match="unknown corpus layout.*LibriSpeech tree"):
        detect_layout(tmp_path)
    assert cli(["corpus", "info", str(tmp_path)]) == 2
