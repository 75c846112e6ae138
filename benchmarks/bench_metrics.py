"""Speed and memory of the metrics core against SpeechBrain's EER and scikit-learn's ROC/AUC.

    python benchmarks/bench_metrics.py [--sizes 1e4 1e5 1e6 1e7] [--speechbrain-max 1e5]

For each size n (10% target trials, continuous scores, so every score is its own threshold):

- ours: check + one sort + cumulative sums -> EER (SpeechBrain's definition), AUC, TPR at
  FPR 1% and 0.1%, minDCF (``sparc_eval.metrics.core``);
- scikit-learn: ``roc_curve`` + ``roc_auc_score`` (all sizes);
- SpeechBrain: ``metric_stats.EER`` (O(n^2); up to ``--speechbrain-max``).

Each prints one ratio line: time (best of a few runs), peak traced memory (tracemalloc; numpy
and scikit-learn allocations are traced, torch's are not), bytes per trial (memory linear in n
shows as a constant), the speed-up, and the EER difference to SpeechBrain. Then: 1,000
bootstrap resamples of 10^5 trials, and the start-up time of ``sparc-eval metrics --help``
against ``python -c pass`` (baseline), each in a fresh subprocess.

Targets (issue): >= 200x SpeechBrain at 10^5 with the same EER within 1e-3; no slower than
scikit-learn at 10^6; 10^7 in memory linear in n; bootstrap < 30 s; start-up < 1 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sparc_eval.metrics import core  # noqa: E402
from sparc_eval.metrics.bootstrap import _Plan, bootstrap_metrics  # noqa: E402


def data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < 0.1
    scores = rng.normal(size=n) + 1.0 * labels
    return scores, labels


def ours(scores, labels):
    c = core.counts(scores, labels)
    m = core.metrics_from_counts(c.t, c.n)
    return float(m["eer"]), float(m["auc"]), {k: float(v) for k, v in m["tpr_at_fpr"].items()}


def sklearn_roc(scores, labels):
    from sklearn.metrics import roc_auc_score, roc_curve  # imported (warm) before timing

    fpr, tpr, _ = roc_curve(labels, scores)
    return roc_auc_score(labels, scores), fpr, tpr


def measure(fn, *args, repeat: int = 3, trace: bool = True):
    """(best time over ``repeat`` runs, peak traced bytes of one run, result)."""
    peak = None
    if trace:
        tracemalloc.start()
        result = fn(*args)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn(*args)
        times.append(time.perf_counter() - t0)
    return min(times), peak, result


def speechbrain_eer():
    from sparc_eval.speechbrain_compat import import_speechbrain

    import torch

    # One thread, as numpy runs here: on a loaded 2-core machine torch's OpenMP threads
    # spin-wait and SpeechBrain's loop slows down about 25x with 2 threads.
    torch.set_num_threads(1)
    ms = import_speechbrain("speechbrain.utils.metric_stats")

    def run(scores, labels):
        return ms.EER(torch.from_numpy(scores[labels]), torch.from_numpy(scores[~labels]))[0]

    return run


def mib(x):
    return "n/a" if x is None else f"{x / 2**20:.1f} MiB"


def subprocess_time(cmd, repeat: int = 5) -> float:
    times = []
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO, env=env)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e5, 1e6, 1e7])
    ap.add_argument("--speechbrain-max", type=float, default=1e5)
    ap.add_argument("--boot-n", type=float, default=1e5)
    ap.add_argument("--n-boot", type=int, default=1000)
    args = ap.parse_args(argv)
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs")

    sb = None
    try:
        sb = speechbrain_eer()
    except Exception as err:  # report, keep going with scikit-learn
        print(f"SpeechBrain unavailable: {type(err).__name__}: {err}")

    warm = data(1000)
    ours(*warm)
    sklearn_roc(*warm)  # imports and first-call caches stay out of the measurements
    for n in (int(x) for x in args.sizes):
        scores, labels = data(n)
        big = n >= 10**7
        t_ours, m_ours, (eer, auc, tprs) = measure(ours, scores, labels, repeat=1 if big else 3)
        t_sk, m_sk, (auc_sk, fpr, tpr) = measure(sklearn_roc, scores, labels, repeat=1 if big else 3)
        tpr_sk = float(tpr[fpr <= 0.01].max())
        line = (f"n={n:>8}: ours {t_ours:.4f} s, {mib(m_ours)} ({m_ours / n:.0f} B/trial) | "
                f"sklearn roc_curve+roc_auc_score {t_sk:.4f} s, {mib(m_sk)} ({m_sk / n:.0f} B/trial) "
                f"-> {t_sk / t_ours:.1f}x faster; |AUC diff| {abs(auc - auc_sk):.1e}, "
                f"|TPR@1% diff| {abs(tprs[0.01] - tpr_sk):.1e}")
        if sb is not None and n <= args.speechbrain_max:
            t_sb, _, eer_sb = measure(sb, scores, labels, repeat=1, trace=False)
            line += f" | speechbrain EER {t_sb:.2f} s -> {t_sb / t_ours:.0f}x faster; |EER diff| {abs(eer - eer_sb):.1e}"
        print(line, flush=True)
        del scores, labels, fpr, tpr

    scores, labels = data(int(args.boot_n), seed=1)
    t0 = time.perf_counter()
    res = bootstrap_metrics(scores, labels, n_boot=args.n_boot, seed=0)
    t_boot = time.perf_counter() - t0
    # baseline: the plain loop, materialising and re-sorting every resample (same draws), timed on 50
    draws = _Plan(labels, "trial", True, None, 0).trial_draws(range(50))
    t0 = time.perf_counter()
    for d in draws:
        c = core.counts(scores[d], labels[d])
        core.metrics_from_counts(c.t, c.n)
    t_naive = (time.perf_counter() - t0) / len(draws) * args.n_boot
    coarse = np.clip(np.round(scores * 1.2 + 3), 1, 5)  # LLM-judge-like integer scores 1..5
    t0 = time.perf_counter()
    bootstrap_metrics(coarse, labels, n_boot=args.n_boot, seed=0)
    t_coarse = time.perf_counter() - t0
    print(f"bootstrap: {args.n_boot} resamples of {int(args.boot_n)} trials (EER, AUC, TPR@FPR, minDCF; "
          f"stratified): {t_boot:.2f} s ({1000 * t_boot / args.n_boot:.1f} ms per resample) against a plain loop "
          f"that re-indexes and re-sorts each resample {t_naive:.2f} s (extrapolated from 50) -> "
          f"{t_naive / t_boot:.1f}x; integer scores 1..5: {t_coarse:.2f} s; target < 30 s; "
          f"EER 95% CI [{res.ci()['eer'][0]:.4f}, {res.ci()['eer'][1]:.4f}]", flush=True)

    t_base = subprocess_time([sys.executable, "-c", "pass"])
    t_numpy = subprocess_time([sys.executable, "-c", "import numpy"])
    t_cli = subprocess_time([sys.executable, "-m", "sparc_eval.cli", "metrics", "--help"])
    heavy = subprocess.run(
        [sys.executable, "-c", "import sys; from sparc_eval.cli import build_parser; build_parser('metrics'); "
         "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'speechbrain', 'matplotlib')))"],
        capture_output=True, text=True, cwd=REPO).stdout.strip()
    print(f"start-up: sparc-eval metrics --help {t_cli:.3f} s against baseline python -c pass {t_base:.3f} s "
          f"(+{t_cli - t_base:.3f} s; python -c 'import numpy' {t_numpy:.3f} s); target < 1 s; "
          f"heavy modules imported: {heavy}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
