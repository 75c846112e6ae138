"""Transcript scoring over Ray actors (sparc_eval.text_trials.ray_scoring) on a local Ray instance: the
local runner's scores (TF-IDF, embeddings, the LLM judge over two endpoints against the test
server of test_text_llm), the on-disk caches shared by the actors, and a worker that dies mid-run."""

import json
import os
import sys

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from test_text_llm import FakeOpenAI  # the local OpenAI-compatible server
from test_text_llm import trials as judge_trials

from attackers.text.embedding import EmbeddingScorer
from attackers.text.llm import LLMScorer
from attackers.text.tfidf import TfidfScorer
from sparc_eval.errors import DataError
from sparc_eval.jobs.text import TrialSet
from sparc_eval.jobs.text.evaluate import score_trials
from sparc_eval.jobs.text.settings import TextEvaluationOptions, scoring_from_hparams
from sparc_eval.text_trials.ray_scoring import ScoringRunner, trial_batch, trial_batches

# the scorers defined here travel to the Ray workers by value (the workers cannot import tests/)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

WORDS = (
    "garden tomatoes committee budget like um yeah auditors board kind of you know i mean the report "
    "meeting quarter beans honestly thing statements"
).split()


@pytest.fixture(scope="module")
def local_ray():
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    if started:
        ray.shutdown()


def word_trials(n=60, seed=0) -> TrialSet:
    """n trials over 12 speakers' utterances: enrollment sides shared across trials."""
    rng = np.random.default_rng(seed)
    utts = {s: [" ".join(rng.choice(WORDS, 8)) for _ in range(5)] for s in range(12)}
    recs = []
    for i in range(n):
        a, b = int(rng.integers(12)), int(rng.integers(12))
        recs.append(
            {
                "probe_texts": utts[a][:2],
                "enroll_texts": utts[b][2:],
                "label": a == b,
                "id": f"t{i}",
            }
        )
    return TrialSet.from_records(recs, meta={"task": "speaker"})


class FakeModel:
    """Stands in for a SentenceTransformer: a deterministic vector per text."""

    def encode(self, texts, **kw):
        return np.stack([np.random.default_rng(sum(map(ord, t))).normal(size=8) for t in texts])


class FakeEmbedding(EmbeddingScorer):
    def load_model(self):
        if self._model is None:
            self._model = FakeModel()
        return self._model


def judge(url, cache, **kw):
    return LLMScorer(
        base_url=url,
        model="test-model",
        cache_path=cache,
        backoff=0.01,
        max_backoff=0.05,
        timeout=5,
        concurrency=2,
        **kw,
    )


class DyingJudge(LLMScorer):
    """The LLM judge, whose worker dies (os._exit) halfway through the first batch that any worker
    gets (once: a marker file); each batch it finishes is logged with its trial ids."""

    def __init__(self, *args, marker, calls, **kw):
        super().__init__(*args, **kw)
        self.marker, self.calls = str(marker), str(calls)

    def score(self, trials):
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            pass
        else:  # the first half is scored (its replies cached), then the worker dies
            super().score(trial_batch(trials, np.arange(len(trials) // 2)))
            os._exit(1)
        scores = super().score(trials)
        with open(self.calls, "a", encoding="utf-8") as handle:
            handle.write(json.dumps([r["id"] for r in trials.records]) + "\n")
        return scores


def test_batches_hold_their_own_sides_and_the_same_trials():
    ts = word_trials(25)
    batches = trial_batches(ts, 10)
    assert [len(b) for b in batches] == [10, 10, 5]
    b = batches[1]
    assert len(b.texts) < len(ts.texts) and [r["id"] for r in b.records] == [
        f"t{i}" for i in range(10, 20)
    ]
    for k, i in enumerate(range(10, 20)):
        assert b.probe_texts(k) == ts.probe_texts(i) and b.enroll_texts(k) == ts.enroll_texts(i)
    assert len(trial_batches(ts, None)) == 1 and b.meta == ts.meta


def test_scoring_keys_of_the_hparams():
    assert scoring_from_hparams({}) == ScoringRunner()  # today's: all trials at once, here
    s = scoring_from_hparams(
        {"runner": "ray", "ray_address": "auto", "num_workers": 3, "score_batch_size": 50}
    )
    assert (s.runner, s.address, s.num_workers, s.batch_size) == ("ray", "auto", 3, 50)
    assert scoring_from_hparams({"num_workers": None}).num_workers is None
    with pytest.raises(DataError, match="runner"):
        scoring_from_hparams({"runner": "spark"})
    with pytest.raises(DataError, match="score_batch_size"):
        scoring_from_hparams({"score_batch_size": 0})


@pytest.mark.slow("starts a local Ray cluster and its workers (about 25 s for the module)")
def test_tfidf_and_embeddings_over_ray_give_the_local_scores(local_ray, tmp_path):
    ts = word_trials(60)
    over_ray = ScoringRunner(runner="ray", num_workers=2, batch_size=16)
    local = score_trials(TfidfScorer(), ts)
    assert np.allclose(score_trials(TfidfScorer(), ts, ScoringRunner(batch_size=16)), local)
    assert np.allclose(score_trials(TfidfScorer(), ts, over_ray), local)
    model = tmp_path / "model"  # its bytes key the cache: the cache lives elsewhere
    model.mkdir()
    (model / "weights.bin").write_bytes(b"fake weights")
    emb_local = score_trials(FakeEmbedding(model=model, cache_dir=None), ts)
    emb = FakeEmbedding(model=model, cache_dir=tmp_path / "cache")
    assert np.allclose(score_trials(emb, ts, over_ray), emb_local)
    assert emb.report()["n_encoded"] >= len(ts.texts)  # the workers' counts come back
    again = FakeEmbedding(model=model, cache_dir=tmp_path / "cache")
    assert np.allclose(score_trials(again, ts, over_ray), emb_local)
    assert (
        again.report()["n_encoded"] == 0 and again.report()["n_cache_hits"] > 0
    )  # the shared cache


@pytest.mark.slow("starts a local Ray cluster and its workers (about 25 s for the module)")
def test_llm_judge_over_two_endpoints_and_its_cache(local_ray, tmp_path):
    a, b = FakeOpenAI(), FakeOpenAI()
    try:
        ts = judge_trials([f"NUM{k}" for k in range(30)] + ["NONUM"])
        local = score_trials(judge(a.url, tmp_path / "local.jsonl"), ts)
        n_local = len(a.calls)
        over_ray = ScoringRunner(runner="ray", num_workers=2, batch_size=8)
        sc = judge([a.url, b.url], tmp_path / "ray.jsonl")
        remote = score_trials(sc, ts, over_ray)
        assert np.array_equal(remote, local, equal_nan=True)
        assert (
            len(a.calls) - n_local > 0 and len(b.calls) > 0
        )  # the actors spread over both endpoints
        assert len(a.calls) - n_local + len(b.calls) == len(ts)  # each prompt sent once
        rep = sc.report()
        assert rep["requests"] == rep["trials"] == len(ts) and rep["no_number"] == 1
        assert len((tmp_path / "ray.jsonl").read_text().splitlines()) == len(ts)
        n_sent = len(a.calls) + len(b.calls)
        again = judge([a.url, b.url], tmp_path / "ray.jsonl")
        assert np.array_equal(score_trials(again, ts, over_ray), local, equal_nan=True)
        assert len(a.calls) + len(b.calls) == n_sent and again.report()["cache_hits"] == len(ts)
        with pytest.raises(
            DataError, match="401"
        ):  # the scorer's own error stops the run, as locally
            score_trials(
                judge([a.url, b.url], tmp_path / "auth.jsonl"), judge_trials(["AUTH"] * 3), over_ray
            )
    finally:
        a.close()
        b.close()


@pytest.mark.slow("starts a local Ray cluster and its workers (about 25 s for the module)")
def test_a_worker_that_dies_mid_run_is_replaced(local_ray, tmp_path):
    server = FakeOpenAI()
    try:
        ts = judge_trials([f"NUM{k}" for k in range(24)])
        local = score_trials(judge(server.url, tmp_path / "local.jsonl"), ts)
        n_local = len(server.calls)
        sc = DyingJudge(
            base_url=server.url,
            model="test-model",
            cache_path=tmp_path / "ray.jsonl",
            timeout=5,
            marker=tmp_path / "died",
            calls=tmp_path / "calls.jsonl",
        )
        scores = score_trials(sc, ts, ScoringRunner(runner="ray", num_workers=2, batch_size=6))
        assert (tmp_path / "died").exists()  # a worker died ...
        assert np.array_equal(scores, local)  # ... and nothing was lost
        assert len(server.calls) - n_local == len(
            ts
        )  # no prompt sent twice: the dead one's replies were cached
        done = [
            i
            for line in (tmp_path / "calls.jsonl").read_text().splitlines()
            for i in json.loads(line)
        ]
        assert sorted(done) == sorted(
            r["id"] for r in ts.records
        )  # each trial scored once by a finished batch
        assert len((tmp_path / "ray.jsonl").read_text().splitlines()) == len(ts)
    finally:
        server.close()


@pytest.mark.slow("starts a local Ray cluster and its workers (about 25 s for the module)")
def test_evaluate_text_over_ray_gives_the_local_results(local_ray, tmp_path):
    from sparc_eval.data.manifest import Manifest, Utterance
    from sparc_eval.jobs.text import TrialConfig
    from sparc_eval.jobs.text.evaluate import evaluate_text

    rng = np.random.default_rng(1)
    utts = [
        Utterance(
            id=f"{s}{e}{i}",
            speaker=f"s{s}",
            episode=f"e{s}{e}",
            text=" ".join(rng.choice(WORDS, 6)),
        )
        for s in range(6)
        for e in range(2)
        for i in range(6)
    ]
    kw = dict(
        tasks=["speaker"],
        settings=[(12, 2)],
        config=TrialConfig(P=12, L=2, tolerance=2),
        options=TextEvaluationOptions(n_boot=0, plots=False, save_trials=False),
    )
    local = evaluate_text(Manifest(utts), TfidfScorer(), **kw)
    remote = evaluate_text(
        Manifest(utts), TfidfScorer(), scoring=ScoringRunner(runner="ray", batch_size=10), **kw
    )
    a, b = local["tasks"]["speaker"]["P12_L2"], remote["tasks"]["speaker"]["P12_L2"]
    assert a["trials"] == b["trials"] and a["trials"]["n"] > 10
    assert np.isclose(a["conditions"]["combined"]["eer"], b["conditions"]["combined"]["eer"])
