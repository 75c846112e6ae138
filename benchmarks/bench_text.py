#!/usr/bin/env python3
"""Transcript-scorer benchmarks (SPARC evaluation).

1. TF-IDF scoring of 100,000 real trials (EdAcc test, P=50, L=20, several partners per
   probe): fit + score, vectorised over trials (one sparse product for all sides, one
   row-wise product for all trials). Baseline, measured in the same run: a per-trial Python
   loop (vectorise both sides of each trial, cosine) over 2,000 trials, extrapolated to
   100,000. Target: under 60 s on 2 cores.
2. Embedding cost: texts the model encodes for those trials, against the number of unique
   utterances and against a per-trial approach (every side of every trial embedded). A
   stand-in model counts the calls; ``--real-model`` also times all-MiniLM-L6-v2 on the
   unique utterances of a small setting.

    python benchmarks/bench_text.py [--data PATH] [--trials 100000] [--real-model]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
os.environ.setdefault("MKL_NUM_THREADS", "2")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

DEFAULT_DATA = Path(os.environ.get("SPARC_EVAL_DATA", REPO.parent / "shared" / "data"))


def build(data: Path, n_trials: int):
    from sparc_eval.data.corpora import load_corpus
    from sparc_eval.jobs.text import TrialBuilder, TrialConfig
    from sparc_eval.jobs.text.evaluate import remove_shared_text

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        manifest = load_corpus(data / "edacc" / "spane_lists" / "edacc-test.txt")
    manifest, _ = remove_shared_text(manifest, TrialConfig().shared_text)
    cfg = TrialConfig(
        P=50,
        L=20,
        max_probes=1000,
        partners={"easy_positive": 1, "hard_negative": 1, "easy_negative": 50},
    )
    ts = TrialBuilder(manifest, cfg, L_max=20).build("speaker", [20])[20]
    if len(ts) > n_trials:
        ts = ts.subset(np.arange(len(ts)) < n_trials)
    return ts


def per_trial_loop(ts, n: int) -> float:
    """Baseline: vectorise both sides of each trial separately, then cosine (seconds for n trials)."""
    from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer

    t0 = time.perf_counter()
    unique = sorted(set(ts.texts))
    vec = CountVectorizer(ngram_range=(1, 2), token_pattern=r"(?u)\b\w[\w']*\b").fit(unique)
    idf = TfidfTransformer().fit(vec.transform(unique)).idf_
    out = np.empty(n)
    for i in range(n):
        p = np.asarray(vec.transform(ts.probe_texts(i)).sum(axis=0)).ravel() * idf
        e = np.asarray(vec.transform(ts.enroll_texts(i)).sum(axis=0)).ravel() * idf
        out[i] = p @ e / (np.linalg.norm(p) * np.linalg.norm(e) + 1e-12)
    return time.perf_counter() - t0, out


class CountingModel:
    def __init__(self):
        self.n = 0
        self.calls = 0

    def encode(self, texts, **kw):
        self.calls += 1
        self.n += len(texts)
        return np.ones((len(texts), 8), dtype=np.float32)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--trials", type=int, default=100_000)
    ap.add_argument("--baseline-trials", type=int, default=2_000)
    ap.add_argument("--real-model", action="store_true")
    args = ap.parse_args(argv)
    if not (args.data / "edacc").is_dir():
        print(f"bench_text: EdAcc not found under {args.data} (set SPARC_EVAL_DATA); skipped")
        return 0
    from attackers.text.embedding import EmbeddingScorer
    from attackers.text.tfidf import TfidfScorer

    t0 = time.perf_counter()
    ts = build(args.data, args.trials)
    t_build = time.perf_counter() - t0
    print(
        f"trials: {len(ts):,} (EdAcc test, speaker task, P=50, L=20), {len(ts.sides):,} unique sides, "
        f"{len(ts.texts):,} unique texts; built in {t_build:.1f} s"
    )

    t0 = time.perf_counter()
    sc = TfidfScorer().fit(ts.texts)
    scores = sc.score(ts)
    t_fast = time.perf_counter() - t0
    n_base = min(args.baseline_trials, len(ts))
    t_base, base_scores = per_trial_loop(ts, n_base)
    assert np.allclose(base_scores, scores[:n_base], atol=1e-9), (
        "baseline and vectorised scores differ"
    )
    t_base_full = t_base / n_base * len(ts)
    print(
        f"TF-IDF fit+score, vectorised: {t_fast:.2f} s for {len(ts):,} trials "
        f"({len(ts) / t_fast:,.0f} trials/s); target < 60 s: {'PASS' if t_fast < 60 else 'FAIL'}"
    )
    print(
        f"baseline, per-trial Python loop: {t_base:.2f} s for {n_base:,} trials -> "
        f"{t_base_full:.0f} s extrapolated to {len(ts):,}; speed-up x{t_base_full / t_fast:.0f}"
    )

    emb = EmbeddingScorer(model=str(REPO), cache_dir=None)
    emb._model = model = CountingModel()
    emb.score(ts)
    per_trial = int(
        sum(len(ts.sides[p]) + len(ts.sides[e]) for p, e in zip(ts.probe_side, ts.enroll_side))
    )
    print(
        f"embedding: {model.n:,} texts encoded in {model.calls} call(s) for {len(ts):,} trials = unique texts "
        f"{len(ts.texts):,} ({'PASS' if model.n == len(ts.texts) else 'FAIL'}); per-trial embedding would encode "
        f"{per_trial:,} (x{per_trial / max(model.n, 1):.0f})"
    )

    if args.real_model:
        small = ts.subset(np.arange(len(ts)) < 2000)
        small_texts = sorted(
            {
                small.texts[i]
                for s in np.unique(np.r_[small.probe_side, small.enroll_side])
                for i in small.sides[s]
            }
        )
        real = EmbeddingScorer(cache_dir=None)
        t0 = time.perf_counter()
        real.embed(small_texts)
        dt = time.perf_counter() - t0
        print(
            f"all-MiniLM-L6-v2: {real.n_encoded:,} unique utterances in {dt:.1f} s "
            f"({real.n_encoded / dt:.0f}/s, model load included)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
