"""How often the small-evaluation bound covers the true EER: speakers as units against n_eff.

    python benchmarks/bench_small_bound.py [--replications 2000] [--seed 0] [--target-mean 2.0]
                                           [--sd-target 2.0] [--sd-noise 0.2]

The generating model (issue 61): 10 test speakers, each enrolled once; every trial utterance is
scored against every enrolled model. A target trial of speaker i scores ``target_mean + a_i + e``,
a_i ~ N(0, sd_target) (the per-speaker target offset); a non-target trial scores ``e``; e ~ N(0,
sd_noise), one per trial. The true EER is the model's population EER, target scores N(target_mean,
sd_target^2 + sd_noise^2) against non-target scores N(0, sd_noise^2): Phi(-target_mean / (s_t +
s_n)) (18.3% at the defaults).

Two designs: ``balanced`` (10 trial utterances per speaker) and ``40 + 9 x 1`` (one speaker with
40 trial utterances, nine with one each). Per replication the EER of the trials and the
resampling-free 95% bound of :mod:`sparc_eval.metrics.small` (Clopper-Pearson), with the sample
size counted two ways: the number of test speakers (the bound before issue 61) and the effective
number of test speakers n_eff (:func:`~sparc_eval.metrics.small.effective_speakers`, the bound
now). Printed per design and count: n_eff, the coverage of the true EER with its Monte Carlo
standard error, and the mean upper end. About 5 s at 2,000 replications.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import norm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sparc_eval.metrics.core import eer  # noqa: E402
from sparc_eval.metrics.small import eer_bound, effective_speakers  # noqa: E402

DESIGNS = {"balanced 10 x 10": [10] * 10, "40 + 9 x 1": [40] + [1] * 9}


def trials(utts: list):
    """(test speaker, target) of every trial: each utterance against each of the enrolled."""
    n = len(utts)
    test = np.repeat(np.arange(n), utts)
    enroll = np.repeat(np.arange(n), test.size)
    test = np.tile(test, n)
    return test, enroll == test


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replications", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target-mean", type=float, default=2.0)
    ap.add_argument("--sd-target", type=float, default=2.0)
    ap.add_argument("--sd-noise", type=float, default=0.2)
    a = ap.parse_args(argv)
    s_t, s_n = math.hypot(a.sd_target, a.sd_noise), a.sd_noise
    true = float(norm.cdf(-a.target_mean / (s_t + s_n)))
    print(
        f"true EER {true:.1%}; {a.replications} replications; target mean {a.target_mean}, "
        f"sd target {a.sd_target}, sd noise {a.sd_noise}"
    )
    print("| design | counted | n | coverage | MC s.e. | mean upper end |")
    print("|---|---|---|---|---|---|")
    t0 = time.perf_counter()
    for name, utts in DESIGNS.items():
        test, target = trials(utts)
        n_eff = effective_speakers(test, target)
        rng = np.random.default_rng(a.seed)
        hits = {"speakers": 0, "n_eff": 0}
        upper = {"speakers": 0.0, "n_eff": 0.0}
        for _ in range(a.replications):
            offsets = rng.normal(0, a.sd_target, len(utts))
            s = rng.normal(0, a.sd_noise, test.size) + np.where(
                target, a.target_mean + offsets[test], 0.0
            )
            e = eer(s, target).eer
            for key, n in (("speakers", len(utts)), ("n_eff", n_eff)):
                lo, hi = eer_bound(e, n)
                hits[key] += lo <= true <= hi
                upper[key] += hi
        for key, n in (("speakers", len(utts)), ("n_eff", n_eff)):
            p = hits[key] / a.replications
            se = math.sqrt(p * (1 - p) / a.replications)
            print(
                f"| {name} | {key} | {n:.3g} | {p:.1%} | {se:.1%} | "
                f"{upper[key] / a.replications:.1%} |"
            )
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
