"""How well the bootstrap intervals cover: a Monte Carlo study of the project's own bootstrap.

    python benchmarks/bench_coverage.py [--replications 2000] [--n-boot 1000] [--workers 2]
                                        [--sizes demo list small] [--methods two_way speaker]
                                        [--replications-gated N] [--small-replications 500]
                                        [--target-weight both|once] [--interval percentile|expanded]
                                        [--target-mean 3.0] ...

The generating model (each part settable). Speakers are enrolled (one model each) and tested
(``utts`` trial utterances each); every trial utterance is scored against every enrolled model:

- a target trial of speaker i: ``target_mean + a_i + e``, a_i ~ N(0, sd_target);
- a non-target trial, enrolled i and tested j: ``b_i + c_j + e``, b_i ~ N(0, sd_enroll) the
  enrollment-side effect, c_j ~ N(0, sd_test) the test-side effect;
- e ~ N(0, sd_noise), one per trial.

The true EER is the generating model's population EER: target scores N(target_mean, sd_target^2 +
sd_noise^2) against non-target scores N(0, sd_enroll^2 + sd_test^2 + sd_noise^2), where the two
error rates meet: Phi(-target_mean / (s_target + s_nontarget)). The true TPR at 1% FPR likewise.

Sizes: ``small`` (10 speakers, each enrolled and tested with 10 utterances: the small-evaluation
rule withholds verdicts there), ``demo`` (the demo card's 24 x 10) and ``list`` (a VoicePrivacy
2024 test list: 20 test speakers x 37 trial utterances against 16 enrolled, who are 16 of them).
Each size runs with enrollment-side effects (sd_enroll as set) and without (sd_enroll 0).

Per replication, three systems score the same trials: A (the model), B (another attacker of the
same model, its speaker effects correlated ``rho`` with A's: the same population EER) and C (B
with target scores shifted by ``shift``: a lower EER). For each method (``two_way``: speakers
resampled on both sides; ``speaker``: test speakers, the enrolled side held fixed), one set of
draws serves all three, through the project's own code (sparc_eval.metrics.bootstrap: its draws,
its weights, its count tables, its paired differences and p-values). Printed per size, effects
and method: the coverage of A's 95% EER interval (and of TPR at 1% FPR, not gated), the paired
test's rejection rate at 5% under the true null (B - A) and under the set difference (C - A,
power), each with its Monte Carlo standard error sqrt(p (1 - p) / R). min Cllr's coverage is not
computed (its PAV per resample costs more than the rest together). The two methods, and the rows
with and without enrollment-side effects, share their replications' seeds (common random
numbers): each rate is valid on its own, and the rows' differences are sharper than independent
runs would give.

Goals (issue 60, at 2,000 replications, with enrollment-side effects, demo and list sizes):
two_way covers at least 0.93, and its paired test rejects at most 0.065 under the null.

Two variants can be measured beside the project's interval (they are not what it computes; they
show what its choices buy): ``--target-weight once`` weighs a speaker's own target trials by its
multiplicity once (m_i: "one person, not two") instead of on both sides (m_i x m_i, the
pigeonhole bootstrap's diagonal cell, the project's); ``--interval expanded`` widens the
percentile interval as Hesterberg's expanded percentile does for few units (the tail alpha/2
becomes Phi(-sqrt(n / (n - 1)) t_{n-1, alpha/2}), n the speakers resampled), and the paired test
with it.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sparc_eval.metrics import bootstrap as B  # noqa: E402
from sparc_eval.metrics.core import MetricSettings, metrics_from_counts, sort_trials  # noqa: E402

SETTINGS = MetricSettings()
FPR = 0.01
DATA_STREAM = 2**32 - 1  # the data's generator: a stream no bootstrap resample uses


@dataclass(frozen=True)
class Model:
    target_mean: float = 3.0
    sd_target: float = 0.5
    sd_enroll: float = 0.8
    sd_test: float = 0.8
    sd_noise: float = 1.0
    rho: float = 0.5  # correlation of B's speaker effects with A's
    shift: float = 0.5  # C: B's target scores shifted up by this much

    def spreads(self) -> tuple:
        s_t = math.hypot(self.sd_target, self.sd_noise)
        s_n = math.sqrt(self.sd_enroll**2 + self.sd_test**2 + self.sd_noise**2)
        return s_t, s_n

    def true_eer(self, mean=None) -> float:
        s_t, s_n = self.spreads()
        return float(norm.cdf(-(self.target_mean if mean is None else mean) / (s_t + s_n)))

    def true_tpr(self) -> float:
        s_t, s_n = self.spreads()
        return float(norm.sf((s_n * norm.ppf(1 - FPR) - self.target_mean) / s_t))


@dataclass(frozen=True)
class Size:
    name: str
    n_test: int  # test speakers
    utts: int  # trial utterances per test speaker
    n_enrolled: int  # enrolled speakers: the first n_enrolled of the test speakers


SIZES = {
    "small": Size("10 speakers", 10, 10, 10),
    "demo": Size("demo card (24 x 10)", 24, 10, 24),
    "list": Size("VoicePrivacy list (20 x 37, 16 enrolled)", 20, 37, 16),
}


def trials(size: Size):
    """(enrolled speaker, test speaker, utterance, target) of every trial."""
    utt = np.arange(size.n_test * size.utts)
    test = utt // size.utts
    enroll = np.repeat(np.arange(size.n_enrolled), utt.size)
    test, utt = np.tile(test, size.n_enrolled), np.tile(utt, size.n_enrolled)
    return enroll, test, enroll == test


def scores(model: Model, size: Size, rng):
    """Scores of systems A, B and C on the trials of ``size`` (module docstring)."""
    enroll, test, target = trials(size)
    n_spk = size.n_test

    def effects(sd, base=None):
        new = rng.normal(0, sd, n_spk)
        return new if base is None else model.rho * base + math.sqrt(1 - model.rho**2) * new

    out, base = [], [None, None, None]
    for _ in range(2):
        a, b, c = (
            effects(sd, prev)
            for sd, prev in zip((model.sd_target, model.sd_enroll, model.sd_test), base)
        )
        base = [a, b, c]
        noise = rng.normal(0, model.sd_noise, target.size)
        out.append(np.where(target, model.target_mean + a[test], b[enroll] + c[test]) + noise)
    a_scores, b_scores = out
    return (enroll, test, target), (a_scores, b_scores, b_scores + model.shift * target)


@dataclass(frozen=True)
class Variant:
    """How the interval is made (the module docstring): the project's is ("both", "percentile")."""

    target_weight: str = "both"  # both: m_i x m_i (the project's) | once: m_i
    interval: str = "percentile"  # percentile | expanded


def tail(n_units: int, interval: str, alpha: float = 0.05) -> float:
    """The lower tail of the percentile interval: alpha / 2, or the expanded percentile's."""
    if interval == "percentile":
        return alpha / 2
    return float(
        norm.cdf(-math.sqrt(n_units / (n_units - 1)) * student_t.ppf(1 - alpha / 2, n_units - 1))
    )


def _once_targets(plan) -> None:
    """Weigh a speaker's own target trials by its multiplicity once, other trials by both sides'."""
    own = plan.enroll_index == plan.group_index

    def weights(mult):
        w = mult[:, plan.group_index].astype(np.float64)
        w[:, ~own] *= mult[:, plan.enroll_index[~own]]
        return w

    plan.trial_weights = weights


def _rejects(d, n_units: int, interval: str) -> bool:
    """The paired test at 5%, as the project's p-value counts it (ties with 0 on both sides), at
    the (expanded) percentile interval's tail."""
    d = d[np.isfinite(d)]
    if d.size == 0:
        return False
    p = 2.0 * min(np.mean(d <= 0), np.mean(d >= 0))
    return bool(p < 2 * tail(n_units, interval))


def replicate(job) -> dict:
    """One replication: {method: (A's EER covered, A's TPR covered, null rejected, power rejected)}."""
    model, size, seed, n_boot, methods, variant = job
    rng = np.random.default_rng([seed, DATA_STREAM])  # resample i draws from [seed, i]
    (enroll, test, target), systems = scores(model, size, rng)
    sorted_ = [sort_trials(s, target) for s in systems]
    points = [B._point(st, None, SETTINGS) for st in sorted_]
    truth = {"eer": model.true_eer(), "tpr": model.true_tpr()}
    out = {}
    for method in methods:
        plan = B._Plan(target, method, True, test.astype(str), seed, enroll.astype(str))
        if variant.target_weight == "once" and plan.enroll_index is not None:
            _once_targets(plan)
        samples = [B._empty_samples(SETTINGS, n_boot) for _ in systems]
        for lo, hi in B._chunks(n_boot, 3 * plan.draws_per_resample, B.DEFAULT_CHUNK_ELEMENTS):
            tables = B._chunk_counts(
                plan,
                [st.code for st in sorted_],
                None,
                [st.n_groups for st in sorted_],
                range(lo, hi),
            )
            for sam, (t, n) in zip(samples, tables):
                B._store(sam, lo, hi, metrics_from_counts(t, n, SETTINGS))
        level = 1 - 2 * tail(plan.n_groups, variant.interval)
        eer_ci = B.percentile_ci(samples[0]["eer"], level)
        tpr_ci = B.percentile_ci(samples[0]["tpr_at_fpr"][FPR], level)
        covered = [
            ci[0] is not None and ci[0] <= truth[k] <= ci[1]
            for k, ci in (("eer", eer_ci), ("tpr", tpr_ci))
        ]
        rejected = []
        for other in (1, 2):
            if variant.interval == "percentile":  # the project's own paired test
                _, _, p = B._differences(
                    points[0], points[other], samples[0], samples[other], SETTINGS, 0.95
                )
                rejected.append(p["eer"] is not None and p["eer"] < 0.05)
            else:
                d = samples[other]["eer"] - samples[0]["eer"]
                rejected.append(_rejects(d, plan.n_groups, variant.interval))
        out[method] = (*covered, *rejected)
    return out


def study(model, size, reps, n_boot, workers, seed, methods, variant=Variant()):
    """Rates over ``reps`` replications: {method: [coverage EER, coverage TPR, null, power]}."""
    jobs = [(model, size, seed * 1_000_003 + r, n_boot, methods, variant) for r in range(reps)]
    with ProcessPoolExecutor(workers) as pool:
        results = list(pool.map(replicate, jobs, chunksize=max(1, reps // (8 * workers))))
    return {m: np.mean([r[m] for r in results], axis=0) for m in methods}


def row(label: str, rates, reps: int) -> str:
    se = lambda p: math.sqrt(p * (1 - p) / reps)
    cells = [f"{p:.3f} ({se(p):.3f})" for p in rates]
    return f"| {label} | " + " | ".join(cells) + " |"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replications", type=int, default=2000)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--sizes", nargs="+", default=["small", "demo", "list"], choices=list(SIZES))
    ap.add_argument(
        "--small-replications",
        type=int,
        default=500,
        help="replications of the ungated cases (10 speakers; no enrollment effects)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--methods", nargs="+", default=["two_way", "speaker"], choices=["two_way", "speaker"]
    )
    ap.add_argument(
        "--replications-gated",
        type=int,
        default=None,
        help="replications of the gated cases (default: --replications; 0 runs only the others)",
    )
    ap.add_argument("--target-weight", choices=["both", "once"], default="both")
    ap.add_argument("--interval", choices=["percentile", "expanded"], default="percentile")
    for f in fields(Model):
        ap.add_argument(f"--{f.name.replace('_', '-')}", type=float, default=f.default)
    args = ap.parse_args(argv)
    model = Model(**{f.name: getattr(args, f.name) for f in fields(Model)})
    methods = tuple(args.methods)
    variant = Variant(args.target_weight, args.interval)
    print(f"interval: {variant}", flush=True)
    print(
        f"generating model: {model}; true EER {model.true_eer():.4f} (C: "
        f"{model.true_eer(model.target_mean + model.shift):.4f}), true TPR at 1% FPR "
        f"{model.true_tpr():.4f}; {args.n_boot} resamples per interval; {args.workers} workers",
        flush=True,
    )
    print(
        "\n| size, effects, method | EER coverage | TPR@1% coverage | null rejected | power |\n"
        "|---|---|---|---|---|"
    )
    start = time.perf_counter()
    for key in args.sizes:
        size = SIZES[key]
        for with_enroll in (True, False):
            m = model if with_enroll else replace(model, sd_enroll=0.0)
            gated = with_enroll and key != "small"
            full = args.replications if args.replications_gated is None else args.replications_gated
            reps = full if gated else min(args.replications, args.small_replications)
            if reps == 0:
                continue
            t0 = time.perf_counter()
            rates = study(m, size, reps, args.n_boot, args.workers, args.seed, methods, variant)
            effects = "enroll+test effects" if with_enroll else "test effects only"
            for method in methods:
                print(row(f"{size.name}, {effects}, {method}", rates[method], reps), flush=True)
            if gated and "two_way" in rates:
                ok = rates["two_way"][0] >= 0.93 and rates["two_way"][2] <= 0.065
                print(
                    f"|   two_way {'PASS' if ok else 'FAIL'}: coverage >= 0.93 and null rejection "
                    f"<= 0.065 ({reps} replications, {time.perf_counter() - t0:.0f} s) | | | | |",
                    flush=True,
                )
    print(f"\n{time.perf_counter() - start:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
