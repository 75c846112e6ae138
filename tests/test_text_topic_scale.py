"""The SPoRC topic control at scale (issue 33): candidates drawn lazily by the same rules, the
per-episode exclusion counts exact up to COUNT_SAMPLE appearances and estimated beyond, and
the columnar trial sets the metrics read without building a record per trial."""

import gc
import pickle
from collections import Counter
from dataclasses import replace

import numpy as np
from test_text_trials import manifest, words

from attackers.text.tfidf import TfidfScorer
from sparc_eval import arrays
from sparc_eval.arrays import first_sight_codes
from sparc_eval.jobs.text import TrialConfig, TrialSet, build_trials, materialise, pairing, topic
from sparc_eval.jobs.text.evaluate import frozen_once_built, heap_frozen, scored_trials
from sparc_eval.text_trials.trial_set import CodedTexts
from sparc_eval.text_trials.trials import EN, EP, HP, TrialBuilder

TOPICS = ("gardening tomatoes", "stock markets", "football tactics", "jazz history", "pasta")
CATEGORIES = ("Home", "Business", "Sports", "Music", "Food")


def topical_corpus(n_speakers=36, episodes_per_speaker=3, seed=0):
    """Single-speaker episodes on five topics (a speaker's on different ones) and categories:
    episodes on one topic share title words (excluded), strata follow topic and category."""
    rng = np.random.default_rng(seed)
    rows, attrs, meta = [], {}, {}
    for s in range(n_speakers):
        spk = f"S{s:02d}"
        attrs[spk] = {"sex": "FM"[s % 2], "age": 25 + 20 * (s % 3), "accent": "American"}
        attrs[spk]["series"] = f"series{s}"
        for e in range(episodes_per_speaker):
            ep, topic_words = f"{spk}-ep{e}", TOPICS[(s + 2 * e) % len(TOPICS)]
            extra_word = rng.choice(["news", "tips", "stories", "talk", "hour", "weekly"])
            meta[ep] = {
                "title": f"{topic_words} {extra_word} {rng.integers(1000)}",
                "description": f"about {topic_words} episode {e}",
                "category": CATEGORIES[(s + e // 2) % len(CATEGORIES)],
            }
            rows += [(spk, ep, words(f"{spk}e{e}x{i}w", 6)) for i in range(5)]
    return manifest(rows, attrs, extra=meta), attrs


def sporc_config(**kw):
    return TrialConfig(
        P=12,
        L=2,
        tolerance=0,
        max_probes=1,
        partners={"easy_positive": 0, "hard_positive": 1, "easy_negative": 1, "hard_negative": 0},
        attribute_partners={"same_episode": 0, "cross_episode": 2},
        **{
            "match_negatives": ("sex",),
            "negatives_cross_series": True,
            "topic_control": "on",
            "name_screen": "off",
            **kw,
        },
    )


def test_lazy_topic_draws_follow_the_rules_and_are_seeded(monkeypatch):
    m, attrs = topical_corpus()
    exact = {t: build_trials(m, sporc_config(), t) for t in ("speaker", "sex")}
    monkeypatch.setattr(pairing, "EXACT_POOL_MAX", 4)  # every pool drawn by rejection,
    monkeypatch.setattr(pairing, "BIN_LIST_MAX", 4)  # bins too, until found rare
    lazy = {t: build_trials(m, sporc_config(), t) for t in ("speaker", "sex")}
    again = build_trials(m, sporc_config(), "speaker")[0][2].records
    assert list(again) == list(lazy["speaker"][0][2].records)  # seeded
    builder = TrialBuilder(m, sporc_config(), L_max=2)
    for task in ("speaker", "sex"):
        recs = list(lazy[task][0][2].records)
        assert len(recs) > 20 and lazy[task][1]["excluded_topic_similarity"] > 0
        # the same exclusion count, and as many pairs as the exact pools give (pools are not short)
        assert (
            lazy[task][1]["excluded_topic_similarity"]
            == exact[task][1]["excluded_topic_similarity"]
        )
        assert abs(len(recs) - len(exact[task][0][2])) <= 0.1 * len(recs)
        by_probe = {}
        for r in recs:
            by_probe.setdefault(r["probe"]["id"], []).append(r)
            p, e = r["probe"], r["enroll"]
            ep_p = builder.topic_view  # the probe episode's view of the partner
            a_p = next(a.index for a in builder.apps if a.episode == p["episode"])
            a_e = next(a.index for a in builder.apps if a.episode == e["episode"])
            kept, _ = ep_p(builder.app_ep[a_p], np.asarray([a_e]))
            assert kept[0], "a partner above the similarity limit or in the probe's episode"
            if task == "speaker" and r["type"] == EN:
                assert attrs[e["speaker"]]["sex"] == attrs[p["speaker"]]["sex"]
                assert attrs[e["speaker"]]["series"] != attrs[p["speaker"]]["series"]
        for probe_recs in by_probe.values():  # each positive with a negative of its stratum
            types = Counter(r["type"] for r in probe_recs)
            assert types[HP] == types[EN]
            strata = []
            for r in probe_recs:
                a_p = next(a.index for a in builder.apps if a.episode == r["probe"]["episode"])
                a_e = next(a.index for a in builder.apps if a.episode == r["enroll"]["episode"])
                strata.append(builder.topic_view(builder.app_ep[a_p], np.asarray([a_e]))[1][0])
            assert strata[0::2] == strata[1::2]


def test_lazy_matched_negatives_are_uniform_within_the_stratum(monkeypatch):
    m, _ = topical_corpus(n_speakers=30)
    builder = TrialBuilder(m, sporc_config(), L_max=2)
    builder._task = "sex"
    probe = builder.probes[0]
    ep = builder.app_ep[probe.app]
    universe = builder.all_apps
    positive = int(universe[builder.topic_view(ep, universe)[0]][0])
    stratum = builder.topic_view(ep, np.asarray([positive]))[1][0]
    kept, strata = builder.topic_view(ep, universe)
    members = set(universe[kept & (strata == stratum) & (universe != positive)].tolist())
    assert len(members) >= 5
    monkeypatch.setattr(pairing, "EXACT_POOL_MAX", 4)
    monkeypatch.setattr(pairing, "BIN_LIST_MAX", 4)  # the bin drawn by rejection, not listed
    drawn = Counter()
    n = 200 * len(members)
    for seed in range(n):
        plans = builder.matched(
            np.random.default_rng(seed),
            probe,
            (np.asarray([positive]), lambda c: np.ones(len(c), dtype=bool)),
            (universe, lambda c: c != positive),
            1,
            Counter(),
        )
        drawn[plans[1].partner] += 1
    assert set(drawn) == members  # every member, nothing else
    expected = n / len(members)
    chi2 = sum((v - expected) ** 2 / expected for v in drawn.values())
    assert chi2 < len(members) * 3  # ~ len(members) - 1 when uniform


def test_exclusion_counts_exact_then_estimated(monkeypatch):
    m, _ = topical_corpus(n_speakers=40)
    builder = TrialBuilder(m, sporc_config(), L_max=2)
    idx = builder.topic
    brute = np.zeros(idx.C.shape[0])
    for a in builder.all_apps:  # a probe's other-episode appearances above the limit
        e = builder.app_ep[a]
        others = np.flatnonzero(builder.app_ep != e)
        brute[e] = (idx.similarity(e, builder.app_ep[others]) > 0.10).sum()
    exact, sample = idx.excluded_appearances(builder.app_ep, 0.10, seed=0)
    assert sample is None and np.array_equal(exact, brute) and brute.sum() > 0
    monkeypatch.setattr(topic, "COUNT_SAMPLE", 60)  # of 120 appearances
    estimate, sample = idx.excluded_appearances(builder.app_ep, 0.10, seed=0)
    assert sample == 60
    assert abs(estimate.sum() - brute.sum()) < 0.25 * brute.sum()  # a sample of half of them
    _, stats = build_trials(m, sporc_config(), "speaker")
    assert stats["excluded_topic_similarity_sample"] == 60


def test_trial_sets_carry_columns_and_build_records_when_read():
    m, _ = topical_corpus(n_speakers=12)
    sets, _ = build_trials(m, sporc_config(topic_control="off"), "speaker")
    ts = sets[2]
    eager = TrialSet(ts.texts, ts.sides, ts.probe_side, ts.enroll_side, ts.labels, list(ts.records))
    for name in ("type", "probe_id", "probe_speaker", "enroll_id", "enroll_speaker"):
        assert ts.column(name).tolist() == eager.column(name).tolist()
    for cond in ("combined", "easy", "hard"):
        assert (ts.condition_mask(cond) == eager.condition_mask(cond)).all()
    part = ts.take([3, 1])
    assert [r["id"] for r in part.records] == [ts.records[3]["id"], ts.records[1]["id"]]
    assert part.column("probe_id").tolist() == [
        ts.records[3]["probe"]["id"],
        ts.records[1]["probe"]["id"],
    ]
    a = scored_trials(ts, np.zeros(len(ts)))
    b = scored_trials(eager, np.zeros(len(ts)))
    assert list(a.enroll) == list(b.enroll) and list(a.test) == list(b.test)


def test_heap_frozen_is_undone():
    assert gc.isenabled()
    with heap_frozen():
        assert not gc.isenabled() and gc.get_freeze_count() > 0
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_loaded_corpus_is_frozen_and_still_freed():
    import weakref

    class Record:  # a weakref-able stand-in for a corpus record
        pass

    gc.unfreeze()
    try:
        with frozen_once_built():
            assert not gc.isenabled()
            kept = Record()
        assert gc.isenabled() and gc.get_freeze_count() > 0 and gc.is_tracked(kept)
        gone = weakref.ref(kept)
        del kept  # frozen objects are still freed by reference counting
        assert gone() is None
    finally:
        gc.unfreeze()


def test_a_finished_builder_is_freed_while_the_collector_is_paused(tmp_path):
    """The evaluation pauses the garbage collector while it makes trials: a builder whose trial
    sets and files are done with must be freed by reference counts (no reference cycle through
    its materialiser or its topic views), or every P's builder stays in memory until the run
    ends."""
    import weakref

    corpus, _ = topical_corpus()
    with heap_frozen():
        builder = TrialBuilder(corpus, sporc_config())
        assert builder.topic_on
        for task in ("speaker", "sex"):
            sets = builder.build(task, [1, 2])
            sets[2].write_jsonl(tmp_path / f"{task}.jsonl")
        gone = weakref.ref(builder)
        builder = sets = None
        assert gone() is None


def test_coded_texts_read_and_score_as_their_list():
    """A materialised set's texts are codes into the builder's texts: they read, compare, pickle
    and take like the list they stand for, and TF-IDF scores them as it scores that list (one
    scorer across the sets, as a run has: rows kept per code are reused from set to set)."""
    m, _ = topical_corpus(n_speakers=12)
    config = replace(sporc_config(), P=8, max_probes=2)
    sets, _ = build_trials(m, config, "speaker", Ls=[1, 4])
    coded_scorer, listed_scorer = TfidfScorer(), TfidfScorer()
    for ts in sets.values():
        coded, plain = ts.texts, list(ts.texts)
        assert isinstance(coded, CodedTexts) and len(coded) == len(plain)
        assert coded == plain and coded[1:4] == plain[1:4] and coded[-1] == plain[-1]
        assert pickle.loads(pickle.dumps(coded)) == plain
        assert coded.take([2, 0]) == [plain[2], plain[0]]
        listed = TrialSet(plain, ts.sides, ts.probe_side, ts.enroll_side, ts.labels, ts.records)
        every_third = np.arange(0, len(ts), 3)
        assert ts.take(every_third).texts == listed.take(every_third).texts
        for a, b in ((ts, listed), (ts.take(every_third), listed.take(every_third))):
            scores = coded_scorer.fit(a.texts).score(a)
            assert np.array_equal(scores, listed_scorer.fit(b.texts).score(b))


def test_materialised_sets_hold_what_each_record_names(monkeypatch):
    """The array-built trial sets against each trial's record (built per trial, by the rules in
    enroll_indices): cut probes, tails without the probe (two ranges), short enrollments."""
    m, _ = topical_corpus(n_speakers=12)
    config = replace(sporc_config(), P=8, max_probes=2, partners={**sporc_config().partners, EP: 1})
    text_of = {u.id: u.text for u in m}
    for task in ("speaker", "sex"):
        sets, _ = build_trials(m, config, task, Ls=[1, 2, 4])
        for L, ts in sets.items():
            assert len(ts) > 20 and len(set(ts.texts)) == len(ts.texts)  # one text, one index
            short, kinds = 0, Counter()
            for i, r in enumerate(ts.records):
                enroll = [text_of[u] for u in r["enroll"]["utt_ids"]]
                assert ts.enroll_texts(i) == enroll
                probe = [text_of[u] for u in r["probe"]["utt_ids"]]
                assert ts.probe_texts(i)[:-1] == probe[:-1]
                assert probe[-1].startswith(ts.probe_texts(i)[-1])  # the cut last utterance
                for name, value in (
                    ("probe_id", r["probe"]["id"]),
                    ("enroll_id", r["enroll"]["id"]),
                ):
                    assert ts.column(name)[i] == value
                assert ts.column("enroll_speaker")[i] == r["enroll"]["speaker"]
                assert bool(ts.labels[i]) == bool(r["label"]) and ts.types[i] == r["type"]
                short += len(enroll) < L
                kinds[r["enroll"]["id"].split("/")[-1].split("-L")[0][:13]] += 1
            assert ts.meta["enrollments_short_of_L"] == short
            assert kinds["head"] > 0 and (task != "speaker" or kinds["tail-without-"] > 0)
    assert any(len(p.texts[-1].split()) < 6 for p in TrialBuilder(m, config, L_max=4).probes)


def test_text_codes_survive_hash_collisions(monkeypatch):
    texts = ["a b", "c", "a b", "d", "c", "e"]
    codes, distinct = materialise.text_codes(texts)
    assert codes.tolist() == [0, 1, 0, 2, 1, 3] and distinct == ["a b", "c", "d", "e"]
    monkeypatch.setattr(materialise, "hash", lambda t: len(t) % 2, raising=False)
    codes, distinct = materialise.text_codes(texts)
    assert codes.tolist() == [0, 1, 0, 2, 1, 3] and distinct == ["a b", "c", "d", "e"]
    codes, first = first_sight_codes(np.asarray([7, 3, 7, 9, 3]))
    assert codes.tolist() == [0, 1, 0, 2, 1] and first.tolist() == [0, 1, 3]


def test_corpus_texts_code_each_text_by_its_first_position(monkeypatch):
    base = ["a b", "c", "a b", "d", "c", "e"]
    more = ["c", "f", "a b", "f", "g"]
    # a code is where the text is first seen in the corpus; the texts the corpus lacks are
    # appended (once each) and coded by where they land; two texts, one hash (among the shared
    # texts, or a new text with a shared one's hash) change nothing
    fake = {"a b": 1, "c": 2, "d": 3, "e": 4, "f": 2, "g": 5}
    for fake_hash in (hash, lambda t: len(t) % 2, fake.__getitem__):
        monkeypatch.setattr(materialise, "hash", fake_hash, raising=False)
        shared = materialise.CorpusTexts(list(base))
        assert shared.codes.tolist() == [0, 1, 0, 3, 1, 5]
        assert shared.with_more(more).tolist() == [1, 6, 0, 6, 8]
        assert shared.space == base + ["f", "f", "g"]
        assert shared.with_more([]).tolist() == []
        assert shared.with_more(["g", "d"]).tolist() == [9, 3]  # another builder's: its own


def test_first_sight_codes_by_table_and_by_sort_agree():
    rng = np.random.default_rng(5)
    for high in (50, 10**6, 2**62):  # the table, the table with a bound given, the sort
        keys = rng.integers(0, high, 5000)
        keys[rng.integers(0, 5000, 2000)] = keys[rng.integers(0, 5000, 2000)]  # repeats
        codes, first = first_sight_codes(keys, size=2 * 10**6)
        seen = {}
        expected = [seen.setdefault(k, len(seen)) for k in keys.tolist()]
        assert codes.tolist() == expected
        assert first.tolist() == [keys.tolist().index(k) for k in seen]
        assert (keys[first] == np.asarray(list(seen))).all()
    codes, first = first_sight_codes(np.asarray([-5, 2**40, -5, 3]))
    assert codes.tolist() == [0, 1, 0, 2] and first.tolist() == [0, 1, 3]
    # large keys go through buckets: keys that share one (multiples of a power of two, hashes
    # of every sign) are told apart, as a sort tells them
    for keys in (np.arange(1, 3001) << 40, rng.integers(-(2**63), 2**63 - 1, 4000)):
        keys = keys[rng.integers(0, len(keys), 2 * len(keys))]  # repeats, in no order
        by_sort = arrays._first_sight_by_sort(keys)
        by_buckets = arrays._first_sight_by_buckets(keys)
        assert all(np.array_equal(a, b) for a, b in zip(by_sort, by_buckets))
    assert first_sight_codes(np.zeros(0, dtype=np.int64))[0].tolist() == []


def test_a_small_part_of_a_large_universe_is_drawn_lazily_and_uniformly():
    """``lazy``: a category bin of a large universe is sampled by rejection at any size, so a
    common stratum reads a few candidates, not the bin; the draws stay uniform without
    replacement (a bin small enough to be filtered whole is, without ``lazy``)."""
    bin_ = np.arange(0, 1_600, 2, dtype=np.int64)  # 800 members: under EXACT_POOL_MAX
    read = []

    def common(c):
        read.append(len(c))
        return c % 4 == 0

    first = next(pairing.draw_order(np.random.default_rng(0), bin_, common, lazy=True))
    assert first % 4 == 0 and sum(read) <= 16  # one batch of tries, not the whole bin
    read.clear()
    next(pairing.draw_order(np.random.default_rng(0), bin_, common))
    assert sum(read) == len(bin_)  # the small pool's exact filter reads it all
    drawn = list(pairing.draw_order(np.random.default_rng(1), bin_, common, lazy=True))
    assert sorted(drawn) == list(range(0, 1_600, 4))  # each member once, read to the end
    rare = lambda c: c % 200 == 0  # noqa: E731
    firsts = Counter(
        next(pairing.draw_order(np.random.default_rng([4, s]), bin_, rare, lazy=True))
        for s in range(2000)
    )
    assert sorted(firsts) == list(range(0, 1_600, 200))
    assert max(firsts.values()) < 310 and min(firsts.values()) > 190  # 250 each (sd 15)
    assert list(pairing.draw_order(np.random.default_rng(2), bin_[:0], rare, lazy=True)) == []


class _Reads:
    """A stand-in for the pairing a ProbeTopicView reads: every candidate kept, in stratum 3
    (no similarity asked, all categories shared); the rows each read asks for are counted."""

    def __init__(self, bin_size: int):
        self.bin_size, self.rows = bin_size, Counter()

    def topic_view(self, ep, cands):
        self.rows["drawn"] += len(cands)
        return np.ones(len(cands), dtype=bool), np.full(len(cands), 3)

    def topic_view_whole(self, ep, universe):
        self.rows["whole"] += len(universe)
        return self.topic_view(ep, universe)

    def category_bin_rows(self, ep, universe, jaccard_bin):
        return np.arange(self.bin_size), np.array([self.bin_size]), np.ones(1)

    def category_bin_positions(self, ep, universe, jaccard_bin, rows):
        return np.arange(self.bin_size)

    def category_bin_view(self, ep, universe, jaccard_bin, rows):
        self.rows["bin"] += self.bin_size
        at = np.arange(self.bin_size)
        return at, np.ones(self.bin_size, dtype=bool), np.full(self.bin_size, 3)


def test_a_probes_view_reads_the_whole_pool_only_after_a_quarter_of_it():
    """The whole-pool view is made once a probe's draws have read a quarter of the pool (at
    least ``WHOLE_VIEW_AFTER``), so it costs at most four times what the lazy reads cost: a
    fixed count of reads grows quadratically with the corpus, as more probes of a rare stratum
    reach it and each view grows with the pool."""
    universe = np.arange(40_000, dtype=np.int64)
    reads = _Reads(bin_size=100)
    view = pairing.ProbeTopicView(reads, 0, universe, lambda c: np.ones(len(c), dtype=bool))
    for start in range(0, 9_984, 128):
        view(universe[start : start + 128])
    assert reads.rows["whole"] == 0 and view.read > 16 * pairing.WHOLE_VIEW_AFTER
    view(universe[10_000:10_016])  # a quarter read: the whole pool, once
    view(universe[:16])
    assert reads.rows["whole"] == len(universe) and view.whole is not None
    small = pairing.ProbeTopicView(_Reads(100), 0, universe[:1_500], lambda c: c >= 0)
    small(universe[: pairing.WHOLE_VIEW_AFTER])  # a small pool: after WHOLE_VIEW_AFTER, as before
    assert small.whole is not None


def test_category_bins_of_a_large_pool_are_listed_once_found_rare():
    """A large pool's bins above ``BIN_LIST_MAX`` are drawn lazily until a quarter of the bin
    has been read; a smaller bin, and every bin of a pool of at most ``EXACT_POOL_MAX`` (the
    draws of earlier versions), is listed at once; a listed bin is read once for all its
    strata."""
    big, small = np.arange(10_000, dtype=np.int64), np.arange(800, dtype=np.int64)
    keep = lambda c: np.ones(len(c), dtype=bool)  # noqa: E731
    lazy = pairing.ProbeTopicView(_Reads(bin_size=2_000), 0, big, keep)
    assert lazy.lazy_bins and lazy.members(3, []) is None
    assert len(lazy.universe_of(3)) == 2_000  # drawn within the bin
    lazy.in_stratum(big[:500], 3)  # a quarter of the bin read: listed from now on
    assert len(lazy.members(3, [])) == 2_000 and lazy.pairing.rows["bin"] == 2_000
    listed = pairing.ProbeTopicView(_Reads(bin_size=pairing.BIN_LIST_MAX), 0, big, keep)
    assert listed.lazy_bins and len(listed.members(3, [])) == pairing.BIN_LIST_MAX
    assert len(listed.members(103, [])) == 0  # another stratum of the bin: no second read
    assert listed.pairing.rows == {"bin": pairing.BIN_LIST_MAX}
    exact = pairing.ProbeTopicView(_Reads(bin_size=400), 0, small, keep)
    assert not exact.lazy_bins and len(exact.members(3, [7])) == 399


def test_a_bins_view_and_its_shortcuts_give_the_values_of_the_draws():
    """A category group's rows read as slices, Jaccard values looked up in the set-by-set table,
    and a bin's whole view give bit for bit what the per-candidate reads give (what keeps the
    trials of a small pool identical whichever way its values are read)."""
    m, _ = topical_corpus()
    b = TrialBuilder(m, sporc_config())
    X, n = b.topic.X, len(b.apps)
    for e in (0, 7, 50):
        for lo, hi in ((0, n), (3, 4), (10, 37), (5, 5)):
            exact = b.topic.similarity_of_rows(e, X, np.arange(lo, hi))
            assert np.array_equal(b.topic.similarity_of_range(e, X, lo, hi), exact)
        codes = np.arange(len(b.topic.category_example))
        direct = b.topic._jaccard(e, b.topic.category_example[codes])
        assert np.array_equal(b.topic.set_jaccard(e, codes), direct)
    universe = b.all_apps
    for ep in (0, 7, 50):
        for jaccard_bin in (1, 2, 3):
            rows = b.category_bin_rows(ep, universe, jaccard_bin)
            at, kept, strata = b.category_bin_view(ep, universe, jaccard_bin, rows)
            assert np.array_equal(at, b.category_bin_positions(ep, universe, jaccard_bin, rows))
            want_kept, want_strata = b.topic_view(ep, universe[at])
            assert np.array_equal(kept, want_kept) and np.array_equal(strata, want_strata)


def test_matched_negatives_of_a_large_pool_are_drawn_lazily_within_bins(monkeypatch):
    """``matched`` asks for rejection within a bin only where the pool is above
    ``EXACT_POOL_MAX`` and the bin above ``BIN_LIST_MAX``: a small corpus keeps its exact draws,
    a large one's large bins are sampled."""
    m, _ = topical_corpus()
    asked = []
    draw = pairing.draw_order

    def recording(rng, universe, accept=None, *, members=None, lazy=False):
        asked.append((lazy, members is None, len(universe)))
        return draw(rng, universe, accept, members=members, lazy=lazy)

    monkeypatch.setattr(pairing, "draw_order", recording)
    build_trials(m, sporc_config(), "speaker")
    assert asked and not any(lazy for lazy, _, _ in asked)  # 108 appearances: exact
    asked.clear()
    monkeypatch.setattr(pairing, "EXACT_POOL_MAX", 4)
    monkeypatch.setattr(pairing, "BIN_LIST_MAX", 4)
    build_trials(m, sporc_config(), "speaker")
    lazy_sizes = [n for lazy, unlisted, n in asked if lazy and unlisted]
    pools = max(n for _, _, n in asked)
    assert lazy_sizes and min(lazy_sizes) < pools  # bins (parts of the pool) sampled by rejection
