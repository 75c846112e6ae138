"""Speed and memory of the metrics core against SpeechBrain's EER and scikit-learn's ROC/AUC.

    python benchmarks/bench_metrics.py [--sizes 1e4 1e5 1e6 1e7] [--speechbrain-max 1e5]
                                       [--cli-sizes 1e6 1e7] [--cli-repeat 3] [--cli-only]

For each size n (10% target trials, continuous scores, so every score is its own threshold):

- ours: check + one sort + cumulative sums -> EER (SpeechBrain's definition), AUC, TPR at
  FPR 1% and 0.1%, minDCF (``sparc_eval.metrics.core``);
- scikit-learn: ``roc_curve`` + ``roc_auc_score`` (all sizes);
- SpeechBrain: ``metric_stats.EER`` (O(n^2); up to ``--speechbrain-max``).

Each prints one ratio line: time (best of a few runs), peak traced memory (tracemalloc; numpy
and scikit-learn allocations are traced, torch's are not), bytes per trial (memory linear in n
shows as a constant), the speed-up, and the EER difference to SpeechBrain. Then: 1,000
bootstrap resamples of 10^5 trials (default binned, and exact), and the start-up time of
``sparc-eval metrics --help`` against ``python -c pass`` (baseline), each in a fresh subprocess.
The speaker units at SPARC's size (565,090 trials, 12,500 speakers, each enrolled and tested;
``--speaker-only``): two-way (the default) and test speakers only, the default method against the
exact one (baseline), with the same speaker draws.

Last, the command as a new user runs it: the default ``sparc-eval metrics --scores FILE --out DIR``
(1,000 resamples, CIs and plots included) on score files of 10^6 and 10^7 trials (n / 1,000 test
utterances against 1,000 enrollment models), each a fresh subprocess, and at 10^6 also with a
utt2spk file that makes the enrollment models its speakers (so the CIs are two-way), against the
numpy + scikit-learn one-liner of the issue (``np.loadtxt(dtype=str)``,
``roc_curve`` + ``roc_auc_score``, EER from the ROC; no CIs, no plots) on the same 10^6 file,
run alternately in the same run (medians of ``--cli-repeat``) so that the machine's load hits
both: the ratio, the CLI's times at each size, the growth exponent log(t2/t1)/log(n2/n1), the
CLI's peak memory, and the load average.

Targets (issue): >= 200x SpeechBrain at 10^5 with the same EER within 1e-3; no slower than
scikit-learn at 10^6; 10^7 in memory linear in n; bootstrap < 30 s; start-up < 1 s; the default
CLI no slower than the one-liner at 10^6 (ratio <= 1.0; with utt2spk, two-way, <= 1.5) and about
linear to 10^7; the SPARC-sized two-way bootstrap within 5 s.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sparc_eval.metrics import core  # noqa: E402
from sparc_eval.metrics.bootstrap import _Plan, bootstrap_metrics  # noqa: E402
from sparc_eval.metrics.settings import BootstrapSettings  # noqa: E402


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
    import torch

    from sparc_eval.speechbrain_compat import import_speechbrain

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
        subprocess.run(
            cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO, env=env
        )
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


ONE_LINER = (  # the issue's: read with numpy, ROC and AUC with scikit-learn, EER from the ROC
    "import sys, numpy as np; from sklearn.metrics import roc_curve, roc_auc_score; "
    "a = np.loadtxt(sys.argv[1], dtype=str); s = a[:, 2].astype(float); y = a[:, 3] == 'target'; "
    "fpr, tpr, _ = roc_curve(y, s); auc = roc_auc_score(y, s); i = np.argmin(np.abs(1 - tpr - fpr)); "
    "print((fpr[i] + 1 - tpr[i]) / 2, auc)"
)
ONE_LINER_COLUMNS = ONE_LINER.replace(  # for reference: the same with a faster numpy read
    "a = np.loadtxt(sys.argv[1], dtype=str); s = a[:, 2].astype(float); y = a[:, 3] == 'target'",
    "s, y = np.loadtxt(sys.argv[1], usecols=(2, 3), converters={3: lambda w: w == 'target'}).T",
)


def write_score_file(path, n: int) -> None:
    """``<enroll> <test> <score> <label>`` lines: every one of n / 1,000 test utterances against
    each of 1,000 enrollment models, as in Kaldi / VoicePrivacy trial lists."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pcsv

    scores, labels = data(n)
    ids = pa.array(np.arange(n))
    table = pa.table(
        {
            "enroll": pc.binary_join_element_wise(
                "spk", pc.cast(pc.remainder(ids, 1000), pa.string()), ""
            ),
            "test": pc.binary_join_element_wise(
                "utt", pc.cast(pc.divide(ids, 1000), pa.string()), ""
            ),
            "score": pa.array(scores),
            "label": pa.array(np.where(labels, "target", "nontarget")),
        }
    )
    pcsv.write_csv(
        table, path, pcsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    )


def write_utt2spk(path, n: int) -> None:
    """Test utterance k spoken by speaker ``spk{k % 1000}``: the enrollment models are the
    speakers of the utt2spk file, each tested (what a two-way bootstrap needs)."""
    Path(path).write_text("".join(f"utt{k} spk{k % 1000}\n" for k in range(n // 1000)))


def run_time(cmd) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        cmd,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    return time.perf_counter() - t0


def cli_vs_one_liner(sizes, repeat: int) -> None:
    """The default CLI (fresh subprocesses) against the one-liner on the first size, then the CLI
    on each further size; see the module docstring."""
    sizes = [int(x) for x in sizes]
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        cli = lambda n: [
            sys.executable,
            "-m",
            "sparc_eval.cli",
            "metrics",
            "--scores",
            f"{tmp}/s{n}.txt",
            "--out",
            f"{tmp}/out{n}",
        ]
        times, docs = {}, {}
        for n in sizes:
            write_score_file(f"{tmp}/s{n}.txt", n)
            if n == sizes[0]:
                write_utt2spk(f"{tmp}/utt2spk", n)
                with_spk = cli(n)[:-1] + [f"{tmp}/spk{n}", "--utt2spk", f"{tmp}/utt2spk"]
                triples = [
                    (
                        run_time([sys.executable, "-c", ONE_LINER, f"{tmp}/s{n}.txt"]),
                        run_time(cli(n)),
                        run_time(with_spk),
                    )
                    for _ in range(repeat)
                ]
                t_one = statistics.median(p[0] for p in triples)
                t_cols = run_time([sys.executable, "-c", ONE_LINER_COLUMNS, f"{tmp}/s{n}.txt"])
                times[n] = statistics.median(p[1] for p in triples)
                t_spk = statistics.median(p[2] for p in triples)
                spk_doc = json.loads(Path(f"{tmp}/spk{n}/results.json").read_text())["run"]
            else:
                times[n] = run_time(cli(n))
            docs[n] = json.loads(Path(f"{tmp}/out{n}/results.json").read_text())["run"]
            os.remove(f"{tmp}/s{n}.txt")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20  # KiB -> GiB
    n0 = sizes[0]
    doc = docs[n0]
    print(
        f"default CLI vs one-liner at n={n0}: sparc-eval metrics {times[n0]:.2f} s (CIs from "
        f"{doc['bootstrap']['resamples']} resamples, {doc['bootstrap']['method']} with "
        f"{doc['bootstrap'].get('bins')} bins; plots) / numpy+scikit-learn one-liner {t_one:.2f} s "
        f"(no CIs, no plots) = {times[n0] / t_one:.2f} (target <= 1.0; medians of {repeat}, alternated)",
        flush=True,
    )
    print(
        f"  with --utt2spk (CIs {spk_doc['bootstrap']['unit']}, {spk_doc['bootstrap'].get('sides')}; "
        f"per-speaker EERs): {t_spk:.2f} s = {t_spk / t_one:.2f} x the one-liner (target <= 1.5); "
        f"stages (s): {spk_doc['timings_s']}",
        flush=True,
    )
    print(
        f"  CLI stages at n={n0} (s): {doc['timings_s']}; CI error bound vs the exact bootstrap: "
        f"{doc['bootstrap'].get('ci_error_bound')}"
    )
    print(
        f"  for reference, the one-liner reading only columns 3-4 (np.loadtxt usecols + converters): {t_cols:.2f} s"
    )
    for n in sizes[1:]:
        growth = math.log(times[n] / times[n0]) / math.log(n / n0)
        boot = docs[n]["bootstrap"]
        print(
            f"  CLI at n={n}: {times[n]:.2f} s, {times[n] / times[n0]:.1f}x the time of n={n0} "
            f"(growth exponent {growth:.2f}; 1 = linear); stages (s): {docs[n]['timings_s']}; "
            f"bins {boot.get('bins')}, EER CI error bound {boot['ci_error_bound']['eer']:.1e}"
        )
    print(
        f"  peak memory of a CLI run (largest child): {peak:.2f} GiB; load average before "
        f"{load[0]:.2f}, after {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs",
        flush=True,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e5, 1e6, 1e7])
    ap.add_argument("--speechbrain-max", type=float, default=1e5)
    ap.add_argument("--boot-n", type=float, default=1e5)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--cli-sizes", type=float, nargs="+", default=[1e6, 1e7])
    ap.add_argument("--cli-repeat", type=int, default=3)
    ap.add_argument(
        "--cli-only", action="store_true", help="only the default CLI against the one-liner"
    )
    ap.add_argument(
        "--speaker-boot-n",
        type=float,
        default=565_090,
        help="trials of the SPARC-sized speaker bootstrap",
    )
    ap.add_argument("--speakers", type=int, default=12_500)
    ap.add_argument(
        "--speaker-only", action="store_true", help="only the SPARC-sized speaker bootstrap"
    )
    args = ap.parse_args(argv)
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs")
    if args.cli_only:
        cli_vs_one_liner(args.cli_sizes, args.cli_repeat)
        return 0
    if args.speaker_only:
        speaker_bootstrap_at_scale(int(args.speaker_boot_n), args.speakers, args.n_boot)
        return 0
    core_vs_libraries(args.sizes, args.speechbrain_max)
    bootstrap_speed(int(args.boot_n), args.n_boot)
    speaker_bootstrap_at_scale(int(args.speaker_boot_n), args.speakers, args.n_boot)
    startup_time()
    cli_vs_one_liner(args.cli_sizes, args.cli_repeat)
    return 0


def core_vs_libraries(sizes, speechbrain_max: float) -> None:
    """One line per size: our metrics core against scikit-learn, and SpeechBrain up to its max."""
    sb = None
    try:
        sb = speechbrain_eer()
    except Exception as err:  # report, keep going with scikit-learn
        print(f"SpeechBrain unavailable: {type(err).__name__}: {err}")

    warm = data(1000)
    ours(*warm)
    sklearn_roc(*warm)  # imports and first-call caches stay out of the measurements
    for n in (int(x) for x in sizes):
        scores, labels = data(n)
        big = n >= 10**7
        t_ours, m_ours, (eer, auc, tprs) = measure(ours, scores, labels, repeat=1 if big else 3)
        t_sk, m_sk, (auc_sk, fpr, tpr) = measure(
            sklearn_roc, scores, labels, repeat=1 if big else 3
        )
        tpr_sk = float(tpr[fpr <= 0.01].max())
        line = (
            f"n={n:>8}: ours {t_ours:.4f} s, {mib(m_ours)} ({m_ours / n:.0f} B/trial) | "
            f"sklearn roc_curve+roc_auc_score {t_sk:.4f} s, {mib(m_sk)} ({m_sk / n:.0f} B/trial) "
            f"-> {t_sk / t_ours:.1f}x faster; |AUC diff| {abs(auc - auc_sk):.1e}, "
            f"|TPR@1% diff| {abs(tprs[0.01] - tpr_sk):.1e}"
        )
        if sb is not None and n <= speechbrain_max:
            t_sb, _, eer_sb = measure(sb, scores, labels, repeat=1, trace=False)
            line += f" | speechbrain EER {t_sb:.2f} s -> {t_sb / t_ours:.0f}x faster; |EER diff| {abs(eer - eer_sb):.1e}"
        print(line, flush=True)
        del scores, labels, fpr, tpr


def bootstrap_speed(boot_n: int, n_boot: int) -> None:
    """Default (binned) and exact bootstrap against a plain re-sorting loop, and on integer scores."""
    scores, labels = data(boot_n, seed=1)
    t0 = time.perf_counter()
    res = bootstrap_metrics(
        scores,
        labels,
        boot=BootstrapSettings(unit="trial", n_boot=n_boot, seed=0),
    )
    t_boot = time.perf_counter() - t0
    t0 = time.perf_counter()
    exact = bootstrap_metrics(
        scores,
        labels,
        boot=BootstrapSettings(unit="trial", n_boot=n_boot, seed=0, method="exact"),
    )
    t_exact = time.perf_counter() - t0
    # baseline: the plain loop, materialising and re-sorting every resample (same draws), timed on 50
    draws = _Plan(labels, "trial", True, None, 0).trial_draws(range(50))
    t0 = time.perf_counter()
    for d in draws:
        c = core.counts(scores[d], labels[d])
        core.metrics_from_counts(c.t, c.n)
    t_naive = (time.perf_counter() - t0) / len(draws) * n_boot
    coarse = np.clip(np.round(scores * 1.2 + 3), 1, 5)  # LLM-judge-like integer scores 1..5
    t0 = time.perf_counter()
    bootstrap_metrics(
        coarse,
        labels,
        boot=BootstrapSettings(unit="trial", n_boot=n_boot, seed=0),
    )
    t_coarse = time.perf_counter() - t0
    print(
        f"bootstrap: {n_boot} resamples of {boot_n} trials (EER, AUC, TPR@FPR, minDCF; "
        f"stratified): default ({res.method}, {res.bins} bins) {t_boot:.2f} s "
        f"({1000 * t_boot / n_boot:.1f} ms per resample), exact {t_exact:.2f} s, against a plain loop "
        f"that re-indexes and re-sorts each resample {t_naive:.2f} s (extrapolated from 50) -> "
        f"{t_naive / t_boot:.1f}x; integer scores 1..5: {t_coarse:.2f} s; target < 30 s; "
        f"EER 95% CI [{res.ci()['eer'][0]:.4f}, {res.ci()['eer'][1]:.4f}], exact [{exact.ci()['eer'][0]:.4f}, "
        f"{exact.ci()['eer'][1]:.4f}], bound {res.ci_error_bound()['eer']:.1e}",
        flush=True,
    )


def speaker_bootstrap_at_scale(n: int, n_speakers: int, n_boot: int) -> None:
    """The speaker units at SPARC's size (the speaker task at P200 L20 on 1.5M utterances:
    565,090 trials, 12,500 speakers), the enrolled speakers drawn from the same people (a target
    trial's is its test speaker, a non-target's another): two-way (the default) and test speakers
    only, each the default method (binned: a sparse speaker table for test speakers, per-trial
    weights summed per cell for two-way) against the exact method (baseline), timed on 50
    resamples and extrapolated, with the same speaker draws."""
    scores, labels = data(n, seed=2)
    rng = np.random.default_rng(2)
    groups = rng.integers(0, n_speakers, n)
    other = (groups + rng.integers(1, n_speakers, n)) % n_speakers  # never the test speaker
    enrolled = np.where(labels, groups, other)
    for unit in ("two_way", "speaker"):
        kw = dict(groups=groups, enroll_groups=enrolled)
        boot = BootstrapSettings(seed=0, unit=unit, n_boot=n_boot)
        t0 = time.perf_counter()
        res = bootstrap_metrics(scores, labels, boot=boot, **kw)
        t_default = time.perf_counter() - t0
        t0 = time.perf_counter()
        exact = bootstrap_metrics(
            scores, labels, boot=replace(boot, n_boot=50, method="exact"), **kw
        )
        t_exact = (time.perf_counter() - t0) / 50 * n_boot
        head = bootstrap_metrics(scores, labels, boot=replace(boot, n_boot=50), **kw)
        gap = float(np.nanmax(np.abs(head.samples["eer"] - exact.samples["eer"])))
        lo, hi = res.ci()["eer"]
        print(
            f"{unit} bootstrap: {n_boot} resamples of {n} trials from {n_speakers} speakers: default "
            f"({res.method}, {res.bins} bins) {t_default:.2f} s"
            f"{' (target <= 5 s)' if unit == 'two_way' else ''} against the exact method "
            f"{t_exact:.1f} s (extrapolated from 50) -> {t_exact / t_default:.1f}x; same draws: "
            f"largest EER replicate difference {gap:.1e} (bound {res.ci_error_bound()['eer']:.1e}); "
            f"EER CI width {hi - lo:.4f}",
            flush=True,
        )


def startup_time() -> None:
    """``sparc-eval metrics --help`` in a fresh process against ``python -c pass``, and which
    heavy modules building its parser imports (none should be)."""
    t_base = subprocess_time([sys.executable, "-c", "pass"])
    t_numpy = subprocess_time([sys.executable, "-c", "import numpy"])
    t_cli = subprocess_time([sys.executable, "-m", "sparc_eval.cli", "metrics", "--help"])
    heavy = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from sparc_eval.cli import build_parser; build_parser('metrics'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'speechbrain', 'matplotlib')))",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    ).stdout.strip()
    print(
        f"start-up: sparc-eval metrics --help {t_cli:.3f} s against baseline python -c pass {t_base:.3f} s "
        f"(+{t_cli - t_base:.3f} s; python -c 'import numpy' {t_numpy:.3f} s); target < 1 s; "
        f"heavy modules imported: {heavy}",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
