"""SPARC trial construction on hand-made manifests: probe rules, enrollments, trial types,
conditions, controls, and the shared-text detector."""

import json
import pickle
from collections import Counter

import numpy as np
import pytest

from sparc_eval.data.manifest import Manifest, Utterance
from sparc_eval.jobs.text import (
    SharedTextConfig,
    TrialBuilder,
    TrialConfig,
    TrialSet,
    build_trials,
    cut_probes,
    detect_shared_text,
    read_trials_jsonl,
)
from sparc_eval.jobs.text import trial_set as trial_set_module
from sparc_eval.text_trials.trial_set import Sides
from sparc_eval.text_trials.trials import EN, EP, HN, HP, Appearance, task_labeller


def words(tag, n):
    return " ".join(f"{tag}{i}" for i in range(n))


def manifest(rows, attrs=None, extra=None):
    """rows: (speaker, episode, text); attrs: speaker -> dict(sex, age, accent)."""
    utts, counter = [], {}
    for spk, ep, text in rows:
        k = counter[(spk, ep)] = counter.get((spk, ep), -1) + 1
        a = (attrs or {}).get(spk, {})
        utts.append(
            Utterance(
                id=f"{spk}-{ep}-{k:03d}",
                speaker=spk,
                text=text,
                episode=ep,
                sex=a.get("sex"),
                age=a.get("age"),
                accent=a.get("accent"),
                series=a.get("series"),
                extra=dict((extra or {}).get(ep, {})),
            )
        )
    return Manifest(utts, name="toy")


def app(counts):
    texts = [words(f"u{j}w", n) for j, n in enumerate(counts)]
    return Appearance(
        0, "A", "e1", None, [f"u{j}" for j in range(len(counts))], texts, list(counts)
    )


# ----------------------------------------------------------------------------- probes


def test_probe_takes_whole_utterances_inside_the_window():
    probes, cut, skipped = cut_probes(app([3, 3, 3, 3]), P=9, tolerance=1, max_probes=1)
    assert len(probes) == 1 and (cut, skipped) == (0, 0)
    p = probes[0]
    assert (p.start, p.stop, p.n_words, p.cut_words) == (0, 3, 9, None)
    assert p.texts == tuple(words(f"u{j}w", 3) for j in range(3))


def test_probe_overshoot_is_cut_at_a_word_boundary_to_P_words():
    probes, cut, skipped = cut_probes(app([4, 10, 3]), P=8, tolerance=1, max_probes=1)
    p = probes[0]
    assert cut == 1 and skipped == 0
    assert p.n_words == 8 and p.cut_words == 4 and (p.start, p.stop) == (0, 2)
    assert p.texts[-1] == "u1w0 u1w1 u1w2 u1w3"
    assert sum(len(t.split()) for t in p.texts) == 8


def test_strict_skips_the_attempt_and_restarts_after_the_long_utterance():
    probes, cut, skipped = cut_probes(
        app([4, 10, 4, 4, 2]), P=8, tolerance=1, strict=True, max_probes=5
    )
    assert cut == 0 and skipped == 1
    assert [(p.start, p.stop, p.n_words) for p in probes] == [(2, 4, 8)]


def test_several_non_overlapping_probes_up_to_the_cap():
    probes, _, _ = cut_probes(app([5] * 10), P=10, tolerance=0, max_probes=10)
    assert [(p.start, p.stop) for p in probes] == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]
    assert len({p.id for p in probes}) == 5
    probes, _, _ = cut_probes(app([5] * 10), P=10, tolerance=0, max_probes=3)
    assert len(probes) == 3


def test_text_shorter_than_the_window_gives_no_probe():
    probes, cut, skipped = cut_probes(app([2, 2, 2]), P=10, tolerance=2)
    assert probes == [] and cut == skipped == 0


# ----------------------------------------------------------------------------- enrollments and types


def podcast_like():
    """A in e1 (12 utts) and e2 (6); B in e1 (6); C in e3 (6); D in e4 (6). 5 words each."""
    rows = [("A", "e1", words(f"a1x{i}w", 5)) for i in range(12)]
    rows += [("B", "e1", words(f"b1x{i}w", 5)) for i in range(6)]
    rows += [("A", "e2", words(f"a2x{i}w", 5)) for i in range(6)]
    rows += [("C", "e3", words(f"c3x{i}w", 5)) for i in range(6)]
    rows += [("D", "e4", words(f"d4x{i}w", 5)) for i in range(6)]
    attrs = {
        "A": {"sex": "F", "age": 25, "accent": "American"},
        "B": {"sex": "M", "age": 40, "accent": "Scottish"},
        "C": {"sex": "F", "age": 70, "accent": "Canadian"},
        "D": {"sex": "M", "age": 35, "accent": "Irish"},
    }
    return manifest(rows, attrs)


def only(ts, speaker, episode, type_=None):
    recs = [
        r
        for r in ts.records
        if r["probe"]["speaker"] == speaker
        and r["probe"]["episode"] == episode
        and (type_ is None or r["type"] == type_)
    ]
    return recs


def test_enrollment_picks_and_trial_types():
    cfg = TrialConfig(P=10, L=3, tolerance=0, max_probes=1, partners={EP: 1, HP: 1, EN: 5, HN: 1})
    sets, stats = build_trials(podcast_like(), cfg, "speaker")
    ts = sets[3]
    recs = only(ts, "A", "e1")
    by_type = {}
    for r in recs:
        by_type.setdefault(r["type"], []).append(r)
    assert by_type[EP][0]["probe"]["utt_ids"] == ["A-e1-000", "A-e1-001"]
    # same episode: the last L utterances of the episode that are not in the probe
    assert by_type[EP][0]["enroll"]["utt_ids"] == ["A-e1-009", "A-e1-010", "A-e1-011"]
    assert by_type[HN][0]["enroll"]["utt_ids"] == ["B-e1-003", "B-e1-004", "B-e1-005"]
    # other episode: the first L utterances of that appearance
    assert by_type[HP][0]["enroll"]["utt_ids"] == ["A-e2-000", "A-e2-001", "A-e2-002"]
    assert sorted(r["enroll"]["speaker"] for r in by_type[EN]) == ["C", "D"]
    assert all(r["enroll"]["utt_ids"][0].endswith("-000") for r in by_type[EN])
    assert [r["label"] for r in recs if r["type"] in (EP, HP)] == [1, 1]
    assert all(r["label"] == 0 for r in recs if r["type"] in (EN, HN))
    assert by_type[EP][0]["conditions"] == ["combined", "easy", "same_topic"]
    assert by_type[HP][0]["conditions"] == ["combined", "hard", "different_topic"]
    assert by_type[EN][0]["conditions"] == ["combined", "easy", "different_topic"]
    assert by_type[HN][0]["conditions"] == ["combined", "hard", "same_topic"]
    # texts of a trial match its ids
    i = ts.records.index(by_type[EP][0])
    assert ts.enroll_texts(i) == [words(f"a1x{k}w", 5) for k in (9, 10, 11)]
    assert stats["probes"] == 5 and stats["appearances"] == 5


def test_same_episode_enrollment_skips_only_this_probe():
    rows = [("A", "e1", words(f"x{i}w", 5)) for i in range(5)] + [
        ("A", "e2", words(f"y{i}w", 5)) for i in range(5)
    ]
    sets, _ = build_trials(
        manifest(rows), TrialConfig(P=10, L=3, tolerance=0, max_probes=2), "speaker"
    )
    eps = [r for r in sets[3].records if r["type"] == EP and r["probe"]["episode"] == "e1"]
    assert [r["probe"]["utt_ids"] for r in eps] == [
        ["A-e1-000", "A-e1-001"],
        ["A-e1-002", "A-e1-003"],
    ]
    assert eps[0]["enroll"]["utt_ids"] == ["A-e1-002", "A-e1-003", "A-e1-004"]
    assert eps[1]["enroll"]["utt_ids"] == ["A-e1-000", "A-e1-001", "A-e1-004"]


def test_trials_are_shared_across_L_and_too_short_appearances_counted():
    m = podcast_like()
    builder = TrialBuilder(m, TrialConfig(P=10, L=5, tolerance=0, max_probes=3), L_max=5)
    sets = builder.build("speaker", [3, 5])
    a, b = sets[3], sets[5]
    key = lambda r: (r["probe"]["id"], r["enroll"]["speaker"], r["enroll"]["episode"], r["type"])
    assert [key(r) for r in a.records] == [key(r) for r in b.records]
    assert all(len(r["enroll"]["utt_ids"]) == 3 for r in a.records)
    # L is a maximum: an appearance with fewer usable utterances enrolls with what it has
    assert all(1 <= len(r["enroll"]["utt_ids"]) <= 5 for r in b.records)
    assert (
        b.meta["enrollments_short_of_L"]
        == sum(len(r["enroll"]["utt_ids"]) < 5 for r in b.records)
        > 0
    )
    # L=7: the 6-utterance appearances enroll with what they have (L is a maximum)
    builder = TrialBuilder(m, TrialConfig(P=10, L=7, tolerance=0), L_max=7)
    builder.build("speaker", [7])
    assert builder.stats("speaker")["appearances_too_short_for_L"] == 4


def test_single_speaker_episodes_give_no_hard_negatives():
    rows = [
        (s, e, words(f"{s}{e}{i}w", 5))
        for s, e in [("A", "c1"), ("A", "c2"), ("B", "c3"), ("C", "c4")]
        for i in range(6)
    ]
    sets, _ = build_trials(manifest(rows), TrialConfig(P=10, L=3, tolerance=0), "speaker")
    counts = sets[3].type_counts()
    assert counts[HN] == 0 and counts[EP] > 0 and counts[HP] > 0 and counts[EN] > 0


def test_attribute_tasks_pair_other_speakers_and_label_by_agreement():
    m = podcast_like()
    for task in ("sex", "age", "accent"):
        sets, _ = build_trials(m, TrialConfig(P=10, L=3, tolerance=0, max_probes=1), task)
        ts = sets[3]
        labels = task_labeller(task, m.speaker_attributes())
        assert len(ts) > 0
        for r in ts.records:
            assert r["probe"]["speaker"] != r["enroll"]["speaker"]
            same = labels[r["probe"]["speaker"]] == labels[r["enroll"]["speaker"]]
            assert r["label"] == int(same)
            if r["same_episode"]:
                assert r["type"] == (EP if same else HN)
            else:
                assert r["type"] == (HP if same else EN)
    lab = task_labeller("age", m.speaker_attributes())
    assert lab == {"A": "<30", "B": "30-60", "C": "60+", "D": "30-60"}
    assert task_labeller("accent", m.speaker_attributes())["C"] == "North American"


def test_seeded_sampling_is_reproducible():
    rows = [(f"S{k}", f"e{k}", words(f"s{k}x{i}w", 5)) for k in range(30) for i in range(6)]
    m = manifest(rows)
    pick = lambda seed: [
        (r["probe"]["id"], r["enroll"]["id"])
        for r in build_trials(m, TrialConfig(P=10, L=3, tolerance=0, seed=seed), "speaker")[0][
            3
        ].records
    ]
    assert pick(0) == pick(0)
    assert pick(0) != pick(1)


def test_match_negatives_on_sex():
    m = podcast_like()
    sets, _ = build_trials(
        m,
        TrialConfig(P=10, L=3, tolerance=0, partners={EN: 5}, match_negatives=("sex",)),
        "speaker",
    )
    sex = {"A": "F", "B": "M", "C": "F", "D": "M"}
    for r in sets[3].records:
        if r["label"] == 0:
            assert sex[r["probe"]["speaker"]] == sex[r["enroll"]["speaker"]]


def test_exact_utterance_overlap_is_excluded():
    dup = "this exact sentence appears twice in the corpus"
    rows = [("A", "e1", dup)] + [("A", "e1", words(f"a{i}w", 8)) for i in range(5)]
    rows += [("B", "e2", dup)] + [("B", "e2", words(f"b{i}w", 8)) for i in range(5)]
    rows += [("C", "e3", words(f"c{i}w", 8)) for i in range(6)]
    sets, stats = build_trials(
        manifest(rows),
        TrialConfig(
            P=16, L=3, tolerance=0, max_probes=1, shared_text=SharedTextConfig(enabled=False)
        ),
        "speaker",
    )
    pairs = {(r["probe"]["speaker"], r["enroll"]["speaker"]) for r in sets[3].records}
    assert ("A", "B") not in pairs and ("B", "A") not in pairs
    assert ("A", "C") in pairs
    assert stats["excluded_overlap"] == 2
    # short identical back-channels are not duplication
    sets, stats = build_trials(
        manifest(rows),
        TrialConfig(P=16, L=3, tolerance=0, max_probes=1, overlap_min_words=20),
        "speaker",
    )
    assert stats["excluded_overlap"] == 0


def test_name_screen_drops_trials_that_name_the_other_speaker():
    rows = [("Alice Smith", "e1", words(f"a{i}w", 5)) for i in range(6)]
    rows += [("Bob Jones", "e2", "thanks alice for coming on")] + [
        ("Bob Jones", "e2", words(f"b{i}w", 5)) for i in range(5)
    ]
    rows += [("Carol King", "e3", words(f"c{i}w", 5)) for i in range(6)]
    sets, stats = build_trials(
        manifest(rows), TrialConfig(P=10, L=3, tolerance=0, max_probes=1), "speaker"
    )
    pairs = {(r["probe"]["speaker"], r["enroll"]["speaker"]) for r in sets[3].records}
    assert ("Alice Smith", "Bob Jones") not in pairs  # Bob's enrollment names Alice
    assert ("Alice Smith", "Carol King") in pairs
    assert stats["excluded_name"] >= 1 and stats["speakers_with_names"] == 3
    _, stats = build_trials(
        manifest(rows),
        TrialConfig(P=10, L=3, tolerance=0, max_probes=1, name_screen=False),
        "speaker",
    )
    assert stats["excluded_name"] == 0


def sporc_like():
    """Single-speaker episodes with title/description/category metadata (SPoRC protocol)."""
    meta = {
        "e1": {
            "title": "gardening tomatoes",
            "description": "growing tomatoes at home",
            "category": "Home,Garden",
        },
        "e2": {
            "title": "gardening tomatoes again",
            "description": "more tomatoes at home",
            "category": "Home,Garden",
        },
        "e3": {"title": "stock markets", "description": "investing basics", "category": "Business"},
        "e4": {
            "title": "football tactics",
            "description": "the offside rule",
            "category": "Sports",
        },
        "e5": {"title": "jazz history", "description": "bebop and swing", "category": "Music,Arts"},
        "e6": {
            "title": "cooking pasta",
            "description": "fresh pasta sauces",
            "category": "Home,Food",
        },
    }
    owners = {"e1": "A", "e2": "A", "e3": "A", "e4": "B", "e5": "C", "e6": "D"}
    rows = [(owners[e], e, words(f"{e}x{i}w", 5)) for e in meta for i in range(6)]
    return manifest(rows, extra=meta)


def test_metadata_topic_control_filters_and_matches_by_stratum():
    m = sporc_like()
    builder = TrialBuilder(
        m, TrialConfig(P=10, L=3, tolerance=0, max_probes=1, partners={HP: 2}), L_max=3
    )
    ts = builder.build("speaker", [3])[3]
    st = builder.stats("speaker")
    assert st["topic_control"] is True
    assert st["excluded_topic_similarity"] > 0  # e1 vs e2 share title words
    pairs = {(r["probe"]["episode"], r["enroll"]["episode"]) for r in ts.records}
    assert ("e1", "e2") not in pairs and ("e2", "e1") not in pairs
    cross = [r for r in ts.records if not r["same_episode"]]
    # one negative per positive, from the same probe
    n_pos = sum(r["label"] for r in cross)
    assert n_pos > 0 and n_pos == sum(1 - r["label"] for r in cross)
    # off: no filtering
    builder = TrialBuilder(
        m, TrialConfig(P=10, L=3, tolerance=0, max_probes=1, topic_control="off"), L_max=3
    )
    builder.build("speaker", [3])
    assert builder.stats("speaker")["excluded_topic_similarity"] == 0


# ----------------------------------------------------------------------------- trial files


def test_trialset_jsonl_round_trip(tmp_path):
    sets, _ = build_trials(podcast_like(), TrialConfig(P=10, L=3, tolerance=0), "speaker")
    ts = sets[3]
    ts.write_jsonl(tmp_path / "t.jsonl", with_text=True)
    back = read_trials_jsonl(tmp_path / "t.jsonl")
    assert len(back) == len(ts)
    assert back.probe_texts(0) == ts.probe_texts(0) and back.enroll_texts(3) == ts.enroll_texts(3)
    assert (back.labels == ts.labels).all()
    ts.write_jsonl(tmp_path / "ids.jsonl")
    row = json.loads((tmp_path / "ids.jsonl").read_text().splitlines()[0])
    assert "probe_texts" not in row and row["conditions"][0] == "combined"
    with pytest.raises(Exception, match="manifest"):
        read_trials_jsonl(tmp_path / "ids.jsonl")


def test_trial_lines_from_side_parts_are_the_records_dumped(tmp_path):
    """write_jsonl dumps a side's probe or enrollment part once and reuses it: every line must
    still be json.dumps of the trial's record, whole sets and taken subsets alike."""
    sets, _ = build_trials(podcast_like(), TrialConfig(P=10, L=3, tolerance=0), "speaker")
    ts = sets[3]
    assert len(set(ts.enroll_side.tolist())) < len(ts)  # sides shared: parts are reused
    for name, part in (("all", ts), ("some", ts.take(np.arange(len(ts))[::-3]))):
        part.write_jsonl(tmp_path / f"{name}.jsonl")
        lines = (tmp_path / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        assert lines == [json.dumps(rec, ensure_ascii=False) for rec in part.records]


def test_trial_lines_are_the_same_across_write_chunks(tmp_path, monkeypatch):
    """Lines are joined LINES_PER_WRITE at a time: a set cut into many chunks writes the lines
    one write per line wrote."""
    sets, _ = build_trials(podcast_like(), TrialConfig(P=10, L=3, tolerance=0), "sex")
    ts = sets[3]
    ts.write_jsonl(tmp_path / "whole.jsonl")
    monkeypatch.setattr(trial_set_module, "LINES_PER_WRITE", 4)
    assert len(ts) > 4 and len(ts) % 4  # several chunks and a short last one
    ts.write_jsonl(tmp_path / "chunked.jsonl")
    whole = (tmp_path / "whole.jsonl").read_text(encoding="utf-8")
    assert (tmp_path / "chunked.jsonl").read_text(encoding="utf-8") == whole
    assert whole.splitlines() == [json.dumps(r, ensure_ascii=False) for r in ts.records]


def test_sides_read_as_the_list_of_arrays_they_stand_for():
    listed = [np.array([4, 1]), np.array([], dtype=np.int64), np.array([2, 2, 0]), np.array([3])]
    sides = Sides.of(listed)
    assert len(sides) == 4 and sides.lengths().tolist() == [2, 0, 3, 1]
    assert [s.tolist() for s in sides] == [s.tolist() for s in listed]
    assert sides[-1].tolist() == [3] and [s.tolist() for s in sides[1:3]] == [[], [2, 2, 0]]
    with pytest.raises(IndexError):
        sides[4]
    picked = sides.select([2, 0, 1, 2])
    assert [s.tolist() for s in picked] == [[2, 2, 0], [4, 1], [], [2, 2, 0]]
    assert [s.tolist() for s in picked.renumbered(np.arange(5) * 10)][0] == [20, 20, 0]
    assert Sides.of(sides) is sides and len(Sides.of([])) == 0
    text_ids, local = picked.compact()
    assert text_ids.tolist() == [0, 1, 2, 4] and local.ends.tolist() == picked.ends.tolist()
    assert [s.tolist() for s in local] == [[2, 2, 0], [3, 1], [], [2, 2, 0]]


def test_a_taken_batch_pickles_with_its_records_not_its_builder():
    """A batch sent to a scoring worker carries its records as dicts; a set made from listed
    sides takes the same batch as one made by the builder (flat sides)."""
    sets, _ = build_trials(podcast_like(), TrialConfig(P=10, L=3, tolerance=0), "speaker")
    ts = sets[3]
    batch = ts.take(np.arange(len(ts))[::2])
    back = pickle.loads(pickle.dumps(batch))
    assert back.records == list(batch.records) and isinstance(back.records, list)
    assert [list(back.side_texts(i)) for i in range(len(back.sides))] == [
        list(batch.side_texts(i)) for i in range(len(batch.sides))
    ]
    listed = TrialSet(
        ts.texts, list(ts.sides), ts.probe_side, ts.enroll_side, ts.labels, ts.records
    )
    again = listed.take(np.arange(len(ts))[::2])
    assert again.sides.flat.tolist() == batch.sides.flat.tolist()
    assert again.sides.ends.tolist() == batch.sides.ends.tolist()


def test_trialset_from_records_shares_sides():
    recs = [
        {"probe_texts": ["a b", "c"], "enroll_texts": ["d"], "label": 1},
        {"probe_texts": ["a b", "c"], "enroll_texts": ["e"], "label": 0},
    ]
    ts = TrialSet.from_records(recs)
    assert len(ts.texts) == 4 and len(ts.sides) == 3
    assert ts.probe_side.tolist() == [0, 0]
    assert ts.condition_mask("easy").tolist() == [False, True]


# ----------------------------------------------------------------------------- shared text


def test_shared_text_detector_removes_read_passages():
    passage = "please call stella ask her to bring these things with her from the store"
    rows = []
    for k in range(6):
        rows.append((f"S{k}", f"c{k}", f"okay so {passage}"))
        rows.append((f"S{k}", f"c{k}", f"my own words number {k} about my {k} cats and dogs"))
        rows.append((f"S{k}", f"c{k}", "yes"))
    m = manifest(rows)
    res = detect_shared_text(m)
    assert res.n_removed == 6 and all(i.endswith("-000") for i in res.removed_ids)
    assert res.stats()["settings"] == {
        "enabled": True,
        "n": 4,
        "min_speakers": 5,
        "min_fraction": 0.3,
    }
    assert res.removed_per_speaker == {f"S{k}": 1 for k in range(6)}
    assert detect_shared_text(m, SharedTextConfig(min_speakers=7)).n_removed == 0
    assert detect_shared_text(m, SharedTextConfig(enabled=False)).n_removed == 0
    with pytest.raises(ValueError):
        SharedTextConfig(min_fraction=1.5)


def test_shared_text_rule_on_random_speech_matches_its_definition():
    """The vectorised detector against the module docstring's rule written out with sets."""
    rng = np.random.default_rng(5)
    vocab = ["a", "b", "c", "Stella", "stella", "please"] + [f"w{k}" for k in range(300)]
    zipf = 1.0 / np.arange(1, len(vocab) + 1)  # a few common words, many rare ones
    rows = [
        (
            f"S{rng.integers(12)}",
            f"e{i % 7}",
            " ".join(rng.choice(vocab, size=rng.integers(0, 12), p=zipf / zipf.sum())) or "x",
        )
        for i in range(400)
    ]
    m = manifest(rows)
    for cfg in (
        SharedTextConfig(n=2, min_speakers=3),
        SharedTextConfig(n=3, min_speakers=2, min_fraction=0.1),
        SharedTextConfig(n=1, min_speakers=10, min_fraction=0.5),
    ):
        grams = [
            {
                tuple(u.text.lower().split()[i : i + cfg.n])
                for i in range(len(u.text.split()) - cfg.n + 1)
            }
            for u in m
        ]
        said = {}
        for u, g in zip(m, grams):
            for x in g:
                said.setdefault(x, set()).add(u.speaker)
        shared = {x for x, who in said.items() if len(who) >= cfg.min_speakers}
        expected = [
            u.id
            for u, g in zip(m, grams)
            if g and sum(x in shared for x in g) / len(g) > cfg.min_fraction
        ]
        res = detect_shared_text(m, cfg)
        assert res.removed_ids == expected and res.n_shared_ngrams == len(shared)
        assert 0 < len(expected) < len(rows)  # the fixture exercises both outcomes


def test_trial_config_validation():
    with pytest.raises(ValueError, match="unknown trial types"):
        TrialConfig(partners={"easy": 1})
    with pytest.raises(ValueError, match="tolerance"):
        TrialConfig(P=5, tolerance=5)
    with pytest.raises(ValueError, match="unknown trial settings"):
        TrialConfig.from_dict({"probe_len": 3})
    assert np.isclose(TrialConfig().topic_max_similarity, 0.10)


def test_trial_sample_keeps_whole_probes_and_is_named():
    from sparc_eval.text_trials.trials import sample_by_probe

    records = [
        {
            "probe_texts": [f"probe {p}"],
            "enroll_texts": [f"enroll {p} {k}"],
            "label": k == 0,
            "probe": {"id": f"p{p}"},
        }
        for p in range(5)
        for k in range(3)
    ]
    ts = TrialSet.from_records(records)
    kept = sample_by_probe(ts, 7, seed=0)
    per_probe = Counter(r["probe"]["id"] for r in kept.records)
    assert len(kept) == 9 and set(per_probe.values()) == {3}  # three whole probes: 6 < 7 <= 9
    assert kept.meta["sampled_from"] == 15
    assert [r["id"] for r in sample_by_probe(ts, 7, seed=0).records] == [
        r["id"] for r in kept.records
    ]
    assert sample_by_probe(ts, 15, seed=0) is ts
    with pytest.raises(ValueError, match="trial_sample"):
        TrialConfig(trial_sample=0)
    from sparc_eval.jobs.text.evaluate import trial_build_deviations

    named = trial_build_deviations(
        TrialConfig(trial_sample=5), "naturalvoices", topic_on=False, topic_metadata=False, n_cut=0
    )
    assert "seeded sample of probes" in named["trial_sample"]


# ----------------------------------------------------------------------------- large pools


def test_draw_order_is_uniform_without_replacement_on_both_paths(monkeypatch):
    from sparc_eval.jobs.text import pairing

    universe = np.arange(0, 20_000, 2, dtype=np.int64)  # 10,000 members: above EXACT_POOL_MAX
    assert len(universe) > pairing.EXACT_POOL_MAX
    for accept, n_kept in (
        (lambda c: c % 3 == 0, 3334),
        (lambda c: c % 2_000 == 0, 10),
    ):  # common; rare
        drawn = list(pairing.draw_order(np.random.default_rng(1), universe, accept))
        assert (
            len(drawn) == len(set(drawn)) == n_kept
        )  # each once, all of them when read to the end
        assert set(drawn) == set(universe[accept(universe)].tolist())
    rare = lambda c: c % 2_000 == 0  # the rare pool: the fallback after a quarter is tried
    firsts = Counter(
        next(pairing.draw_order(np.random.default_rng([7, s]), universe, rare)) for s in range(3000)
    )
    assert sorted(firsts) == list(range(0, 20_000, 2_000))
    assert (
        max(firsts.values()) < 400 and min(firsts.values()) > 200
    )  # 300 each when uniform (sd 16)
    big = np.arange(200_000, dtype=np.int64)  # tries stop at MAX_TRIES, well before a quarter of it
    assert list(pairing.draw_order(np.random.default_rng(2), big, lambda c: c == 123_456)) == [
        123_456
    ]
    monkeypatch.setattr(pairing, "EXACT_POOL_MAX", 10**6)  # the exact path: the same members
    assert sorted(pairing.draw_order(np.random.default_rng(1), universe, rare)) == list(
        range(0, 20_000, 2_000)
    )


def test_draws_from_known_members_shuffle_them_as_a_small_pool_does():
    """``members`` stands for ``accept``: at most ``EXACT_POOL_MAX`` candidates, the same draws;
    at any size, one uniform shuffle of the members, and nothing taken from the generator when
    there are none (an empty stratum costs no rejection rounds)."""
    from sparc_eval.jobs.text import pairing

    small = np.arange(0, 1_800, 3, dtype=np.int64)
    for accept in (lambda c: c % 7 == 0, lambda c: c == 900, lambda c: c < 0):
        members = np.flatnonzero(accept(small))
        a, b = np.random.default_rng(5), np.random.default_rng(5)
        assert list(pairing.draw_order(a, small, accept)) == list(
            pairing.draw_order(b, small, members=members)
        )
        assert a.integers(0, 10**9, 4).tolist() == b.integers(0, 10**9, 4).tolist()
    big = np.arange(0, 600_000, 3, dtype=np.int64)
    members = np.flatnonzero(big % 4_000 == 0)
    firsts = Counter(
        next(pairing.draw_order(np.random.default_rng([3, s]), big, members=members))
        for s in range(3000)
    )
    assert sorted(firsts) == big[members].tolist()
    assert max(firsts.values()) < 80 and min(firsts.values()) > 20  # 60 each when uniform (sd 8)
    untouched = np.random.default_rng(9)
    assert list(pairing.draw_order(untouched, big, members=members[:0])) == []
    assert untouched.integers(0, 10**9) == np.random.default_rng(9).integers(0, 10**9)


def test_large_corpora_draw_partners_lazily_by_the_same_rules(monkeypatch):
    from sparc_eval.jobs.text import pairing

    rng = np.random.default_rng(3)
    rows, attrs = [], {}
    for s in range(40):
        attrs[f"S{s}"] = {
            "sex": "FM"[s % 2],
            "age": 20 + s,
            "accent": "American",
            "series": f"series{s % 5}",
        }
    for e in range(60):  # two speakers per episode, speakers returning in several episodes
        for spk in rng.choice(40, size=2, replace=False):
            rows += [(f"S{spk}", f"ep{e}", words(f"s{spk}e{e}x{i}w", 5)) for i in range(4)]
    m = manifest(rows, attrs)
    cfg = TrialConfig(
        P=10,
        L=2,
        tolerance=0,
        max_probes=1,
        partners={EP: 1, HP: 2, EN: 3, HN: 1},
        match_negatives=("sex",),
        negatives_cross_series=True,
        overlap_screen=False,
        name_screen="off",
    )

    def trials(seed=0):
        return {
            task: build_trials(m, TrialConfig(**{**cfg.__dict__, "seed": seed}), task)[0][2].records
            for task in ("speaker", "sex")
        }

    exact = trials()
    # every other-episode pool, and every category bin, sampled by rejection
    monkeypatch.setattr(pairing, "EXACT_POOL_MAX", 3)
    monkeypatch.setattr(pairing, "BIN_LIST_MAX", 3)
    lazy = trials()
    assert lazy == trials() and lazy != trials(seed=1)  # seeded
    assert lazy["speaker"] != exact["speaker"]  # other draws ...
    for task, kind in (
        ("speaker", "type"),
        ("sex", "same_episode"),
    ):  # ... of as many partners per probe
        per_kind = lambda recs, kind=kind: Counter((r["probe"]["id"], r[kind]) for r in recs)
        assert per_kind(lazy[task]) == per_kind(
            exact[task]
        )  # (and type; attribute types follow the labels)
    series = {s: a["series"] for s, a in attrs.items()}
    for r in lazy["speaker"]:
        p, e = r["probe"], r["enroll"]
        assert (p["episode"] == e["episode"]) == (r["type"] in (EP, HN))
        if r["type"] == EN:
            assert (
                e["speaker"] != p["speaker"]
                and attrs[e["speaker"]]["sex"] == attrs[p["speaker"]]["sex"]
            )
            assert series[e["speaker"]] != series[p["speaker"]]
        if r["type"] == HP:
            assert e["speaker"] == p["speaker"]
    for r in lazy["sex"]:
        assert r["enroll"]["speaker"] != r["probe"]["speaker"]
        assert r["label"] == (
            attrs[r["enroll"]["speaker"]]["sex"] == attrs[r["probe"]["speaker"]]["sex"]
        )
