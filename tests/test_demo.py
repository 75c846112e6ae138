"""The built-in demo corpus: counts, balance, determinism, resuming, content, the CLI.

The full-size corpora (48 speakers x 20 utterances in each mode) come from the session fixtures
``demo_reading_corpus`` and ``demo_conversation_corpus`` in conftest.py; the determinism and
resume checks build small corpora of their own.
"""

import json
import os
import re
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from sparc_eval.cli import main as cli
from sparc_eval.data.attributes import age_group
from sparc_eval.data.manifest import Manifest
from sparc_eval.demo import build_demo_corpus, plan_demo_corpus, summarise
from sparc_eval.demo.grammar import SCRIPTED_PASSAGE
from sparc_eval.errors import DataError

SMALL = dict(n_speakers=6, utts_per_speaker=3)


def _records(manifest: Manifest, root: Path) -> list:
    """Manifest records with audio paths made relative to the corpus root (comparable across dirs)."""
    records = []
    for utt in manifest:
        record = utt.to_dict()
        record["audio"]["path"] = str(Path(record["audio"]["path"]).relative_to(root))
        records.append(record)
    return records


def _wav_bytes(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "wav").rglob("*.wav"))}


# --- the full-size corpora ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "mode",
    [
        "reading",
        pytest.param(
            "conversation",
            marks=pytest.mark.slow("builds the conversation demo corpus: about 8 s"),
        ),
    ],
)
def test_counts_audio_and_attribute_balance(mode, request):
    manifest = request.getfixturevalue(f"demo_{mode}_corpus")
    per_speaker = Counter(u.speaker for u in manifest)
    assert len(per_speaker) >= 48
    assert min(per_speaker.values()) >= 20
    assert {u.series for u in manifest} == {mode}
    assert all(u.text.strip() for u in manifest)

    table = manifest.speaker_attributes()
    for attribute in ("sex", "age_group", "accent"):
        values = Counter(
            age_group(row["age"]) if attribute == "age_group" else row[attribute]
            for row in table.values()
        )
        assert None not in values
        assert len(values) >= 2 and min(values.values()) >= 3, (attribute, values)
    assert Counter(row["sex"] for row in table.values()) == {"F": 24, "M": 24}
    assert all(18 <= row["age"] <= 75 for row in table.values())

    # every speaker its own voice: (voice+variant, pitch, rate, range)
    voices = {
        (row["voice"], row["pitch"], row["rate"], row["pitch_range"]) for row in table.values()
    }
    assert len(voices) == len(table)

    # audio: 16 kHz mono files whose length is the manifest's duration (a sample of them)
    hours = manifest.hours()
    assert hours is not None and 0.5 < hours < 4
    for utt in manifest.utterances[::97]:
        info = sf.info(utt.audio.path)
        assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
        assert info.frames / 16000 == pytest.approx(utt.duration)
        assert Path(utt.audio.path).is_absolute()
        assert Path(utt.audio.path).parent.name == utt.speaker


def test_reading_episodes_are_chapters_of_one_speaker(demo_reading_corpus):
    chapters = defaultdict(set)
    topics = defaultdict(set)
    for utt in demo_reading_corpus:
        assert re.fullmatch(rf"{utt.speaker}-ch[1-3]", utt.episode)
        assert utt.id.startswith(utt.episode + "-")
        chapters[utt.speaker].add(utt.episode)
        topics[utt.speaker].add(utt.extra["topic"])
    assert all(2 <= len(c) <= 3 for c in chapters.values())
    assert all(len(t) == 1 for t in topics.values())  # a speaker keeps one book
    # few speakers share a book topic
    sharing = Counter(next(iter(t)) for t in topics.values())
    assert max(sharing.values()) <= 3
    ids = [u.id for u in demo_reading_corpus]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


@pytest.mark.slow("builds the conversation demo corpus (about 8 s)")
def test_conversation_episodes_pair_speakers_on_one_topic(demo_conversation_corpus):
    speakers = defaultdict(set)
    topics = defaultdict(set)
    scripted = Counter()
    for utt in demo_conversation_corpus:
        assert re.fullmatch(r"conv\d\d", utt.episode)
        speakers[utt.episode].add(utt.speaker)
        topics[utt.episode].add(utt.extra["topic"])
        if utt.extra.get("scripted"):
            scripted[utt.speaker] += 1
            assert utt.text == SCRIPTED_PASSAGE
        else:
            assert utt.text != SCRIPTED_PASSAGE
    assert len(speakers) == 24
    assert all(len(s) == 2 for s in speakers.values())
    assert all(len(t) == 1 for t in topics.values())
    assert len(scripted) == 48 and set(scripted.values()) == {1}
    # each speaker talks in one conversation only
    owner = Counter(s for members in speakers.values() for s in members)
    assert set(owner.values()) == {1}
    # turns alternate between the two speakers
    first = [u for u in demo_conversation_corpus if u.episode == "conv00"]
    assert all(a.speaker != b.speaker for a, b in zip(first, first[1:]))


@pytest.mark.slow("builds the conversation demo corpus (about 8 s)")
def test_manifest_file_loads_back_and_validates(demo_reading_corpus, demo_conversation_corpus):
    for manifest in (demo_reading_corpus, demo_conversation_corpus):
        loaded = Manifest.read_jsonl(manifest.name)  # validates
        assert [u.to_dict() for u in loaded] == [u.to_dict() for u in manifest]
        settings = json.loads((Path(manifest.name).parent / "settings.json").read_text())
        assert settings["n_speakers"] == 48 and settings["utts_per_speaker"] == 20


@pytest.mark.slow("builds the conversation demo corpus (about 8 s)")
def test_full_size_text_is_deterministic(demo_reading_corpus, demo_conversation_corpus):
    for manifest, mode in (
        (demo_reading_corpus, "reading"),
        (demo_conversation_corpus, "conversation"),
    ):
        plan = plan_demo_corpus(mode=mode, seed=0)
        assert [(u.id, u.speaker, u.text) for u, _ in plan] == [
            (u.id, u.speaker, u.text) for u in manifest
        ]
        other = plan_demo_corpus(mode=mode, seed=1)
        assert [u.text for u, _ in other] != [u.text for u in manifest]


@pytest.mark.slow("builds the conversation demo corpus (about 8 s)")
def test_sentences_read_as_english(demo_reading_corpus, demo_conversation_corpus):
    for manifest in (demo_reading_corpus, demo_conversation_corpus):
        for utt in manifest:
            text = utt.text
            assert re.fullmatch(r"[A-Z][A-Za-z ,.?!'\-]*[.?!]", text), text
            assert "  " not in text and " ," not in text and " ." not in text
            assert not re.search(r"\b(we|they) was\b|\bI were\b", text), text
            assert not re.search(r"\ba [aeiou]", text) and not re.search(
                r"\ban [b-df-hj-np-tv-z]", text
            ), text
            for sentence in re.split(r"(?<=[.?!]) ", text):
                assert sentence[:1].isupper() and 1 <= len(sentence.split()) <= 45, sentence


def _distinctiveness(manifest: Manifest) -> tuple:
    """(TF-IDF nearest-centroid speaker-ID accuracy, mean cosine distance between speakers' content
    word frequencies). Enrolment: each speaker's even utterances; test: the odd ones."""
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_distances

    texts = defaultdict(list)
    for utt in manifest:
        texts[utt.speaker].append(utt.text)
    speakers = sorted(texts)
    enrol = [(s, t) for s in speakers for i, t in enumerate(texts[s]) if i % 2 == 0]
    test = [(s, t) for s in speakers for i, t in enumerate(texts[s]) if i % 2 == 1]
    vectorizer = TfidfVectorizer(token_pattern=r"[a-z']+").fit([t for _, t in enrol])
    enrol_x = vectorizer.transform([t for _, t in enrol]).toarray()
    test_x = vectorizer.transform([t for _, t in test]).toarray()
    owners = np.array([s for s, _ in enrol])
    centroids = np.stack([enrol_x[owners == s].mean(axis=0) for s in speakers])
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    predicted = np.array(speakers)[np.argmax(test_x @ centroids.T, axis=1)]
    accuracy = float(np.mean(predicted == np.array([s for s, _ in test])))

    counts = CountVectorizer(token_pattern=r"[a-z']+", stop_words="english")
    freq = counts.fit_transform([" ".join(texts[s]) for s in speakers]).toarray().astype(float)
    freq /= freq.sum(axis=1, keepdims=True)
    distances = cosine_distances(freq)
    mean_distance = float(distances[~np.eye(len(speakers), dtype=bool)].mean())
    return accuracy, mean_distance


@pytest.mark.slow("builds the conversation demo corpus (about 8 s)")
def test_reading_content_is_more_speaker_distinctive_than_conversation(
    demo_reading_corpus, demo_conversation_corpus
):
    reading_acc, reading_dist = _distinctiveness(demo_reading_corpus)
    conversation_acc, conversation_dist = _distinctiveness(demo_conversation_corpus)
    print(
        f"text speaker-ID accuracy: reading {reading_acc:.3f}, conversation {conversation_acc:.3f}; "
        f"mean cosine distance: reading {reading_dist:.3f}, conversation {conversation_dist:.3f}"
    )
    chance = 1 / 48
    assert reading_acc >= 0.5  # a book's words point at its reader
    assert conversation_acc <= 0.25  # shared topics and everyday talk do not
    assert reading_acc - conversation_acc >= 0.3
    assert conversation_acc >= chance  # ...but not below chance: some habits remain
    assert reading_dist - conversation_dist >= 0.2


# --- small corpora: determinism, resuming, settings ---------------------------------------------


def test_same_seed_same_bytes_other_seed_other_corpus(tmp_path):
    a = build_demo_corpus(tmp_path / "a", mode="conversation", seed=3, progress=False, **SMALL)
    b = build_demo_corpus(
        tmp_path / "b", mode="conversation", seed=3, progress=False, workers=1, **SMALL
    )
    c = build_demo_corpus(tmp_path / "c", mode="conversation", seed=4, progress=False, **SMALL)
    assert _records(a, tmp_path / "a") == _records(b, tmp_path / "b")
    assert (tmp_path / "a/manifest.jsonl").read_text().replace(str(tmp_path / "a"), "") == (
        tmp_path / "b/manifest.jsonl"
    ).read_text().replace(str(tmp_path / "b"), "")
    assert _wav_bytes(tmp_path / "a") == _wav_bytes(tmp_path / "b")
    assert [u.text for u in a] != [u.text for u in c]
    assert _wav_bytes(tmp_path / "a") != _wav_bytes(tmp_path / "c")
    assert len(a) == 18 and len({u.speaker for u in a}) == 6


def test_interrupted_build_resumes(tmp_path):
    root = tmp_path / "corpus"
    first = build_demo_corpus(root, mode="reading", seed=0, progress=False, **SMALL)
    before = _wav_bytes(root)
    wavs = sorted((root / "wav").rglob("*.wav"))
    deleted = wavs[1:4]
    for path in deleted:
        path.unlink()
    truncated = wavs[7]
    truncated.write_bytes(truncated.read_bytes()[:1000])  # as if cut off (not via our writes)
    (root / "manifest.jsonl").unlink()
    orphan = (
        truncated.parent / f".{truncated.name}.4194305.1.tmp"
    )  # a killed run's temp file (no such pid)
    orphan.write_bytes(b"junk")
    stamps = {
        p: (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in wavs
        if p not in deleted and p != truncated
    }

    second = build_demo_corpus(root, mode="reading", seed=0, progress=False, **SMALL)
    assert _wav_bytes(root) == before
    assert _records(second, root) == _records(first, root)
    assert not orphan.exists()
    for path, stamp in stamps.items():  # untouched: neither rewritten nor replaced
        assert (path.stat().st_ino, path.stat().st_mtime_ns) == stamp


def test_rerun_with_same_settings_reuses_and_other_settings_rebuild(tmp_path, capsys):
    root = tmp_path / "corpus"
    build_demo_corpus(root, mode="reading", n_speakers=4, utts_per_speaker=2, progress=False)
    stamps = {p: p.stat().st_mtime_ns for p in (root / "wav").rglob("*.wav")}
    again = build_demo_corpus(root, mode="reading", n_speakers=4, utts_per_speaker=2, progress=True)
    assert "0 utterances synthesized, 8 reused" in capsys.readouterr().err
    assert {p: p.stat().st_mtime_ns for p in (root / "wav").rglob("*.wav")} == stamps
    assert len(again) == 8

    bigger = build_demo_corpus(
        root, mode="reading", n_speakers=4, utts_per_speaker=3, progress=False
    )
    assert len(bigger) == 12
    assert len(list((root / "wav").rglob("*.wav"))) == 12
    assert json.loads((root / "settings.json").read_text())["utts_per_speaker"] == 3


def test_bad_arguments_and_foreign_directories(tmp_path):
    with pytest.raises(DataError, match="unknown mode"):
        build_demo_corpus(tmp_path / "x", mode="podcast")
    with pytest.raises(DataError, match="n_speakers"):
        build_demo_corpus(tmp_path / "x", n_speakers=0)
    with pytest.raises(DataError, match="at least 2 speakers"):
        build_demo_corpus(tmp_path / "x", mode="conversation", n_speakers=1)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "manifest.jsonl").write_text("{}\n")
    with pytest.raises(DataError, match="no demo corpus settings.json"):
        build_demo_corpus(foreign, n_speakers=2, utts_per_speaker=1, progress=False)
    assert (foreign / "manifest.jsonl").read_text() == "{}\n"


def test_odd_speaker_count_joins_the_last_conversation():
    plan = plan_demo_corpus(mode="conversation", n_speakers=5, utts_per_speaker=2, seed=0)
    members = defaultdict(set)
    for utt, _ in plan:
        members[utt.episode].add(utt.speaker)
    assert sorted(len(m) for m in members.values()) == [2, 3]


def test_balanced_design_at_other_sizes():
    for n in (8, 16, 50):
        speakers = {
            s.id: s for _, s in plan_demo_corpus(mode="reading", n_speakers=n, utts_per_speaker=1)
        }
        assert len(speakers) == n
        sexes = Counter(s.sex for s in speakers.values())
        assert abs(sexes["F"] - sexes["M"]) <= 1
        assert len({(s.voice_name, s.pitch, s.rate, s.pitch_range) for s in speakers.values()}) == n


def test_summary_and_cli(tmp_path, capsys):
    assert (
        cli(
            [
                "demo",
                "--out",
                str(tmp_path),
                "--speakers",
                "4",
                "--utts",
                "2",
                "--seed",
                "1",
                "--mode",
                "conversation",
                "--quiet",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    manifest_path = Path(lines[-1])
    assert manifest_path == tmp_path / "corpus_conversation" / "manifest.jsonl"
    assert manifest_path.is_file()
    info = dict(line.split(": ", 1) for line in lines[:-1])
    assert info["utterances"] == "8" and info["speakers"] == "4" and info["episodes"] == "2"
    assert float(info["hours"]) > 0
    assert info["sex"] == "F=2, M=2"
    summary = summarise(Manifest.read_jsonl(manifest_path))
    assert summary["utterances"] == 8 and sum(summary["accent"].values()) == 4
    assert os.path.isfile(tmp_path / "corpus_conversation" / "settings.json")
