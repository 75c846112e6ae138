#!/usr/bin/env python3
"""The machine's own growth exponents: work that is exactly linear, timed at two sizes.

    python benchmarks/bench_memory_floor.py [--sizes 100000,1500000]

Each operation below does the same work per element at every size (one pass, one gather, one
table write, one object read), so an exponent log(t2/t1)/log(n2/n1) above 1 is not the code's:
it is the memory hierarchy's, as the working set outgrows the caches (at 10^5 elements of 8 bytes
an array fits in a core's L2 cache; at 1.5x10^6 it does not, and its pages outrun the TLB).
``bench_scale.py`` prints these beside its stage exponents, measured in the same run, so that a
stage's exponent can be read against what linear work shows on that machine at those sizes.

The arrays hold one 8-byte element per utterance, less than any stage keeps per utterance, so
these are a floor for the machine's share, not a bound on it. Each time is the median of five
timings of enough repetitions to last about 30 ms.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

_TARGET_S = 0.03  # each timing repeats the operation for about this long


def _median_seconds(op) -> float:
    """Median over five timings of one call of ``op``, repeated for about ``_TARGET_S``."""
    t0 = time.perf_counter()
    op()
    reps = max(1, int(_TARGET_S / max(time.perf_counter() - t0, 1e-6)))
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            op()
        times.append((time.perf_counter() - t0) / reps)
    return float(np.median(times))


def operations(n: int, seed: int = 0) -> dict:
    """name -> a call doing linear work on ``n`` elements (the same work per element at any n)."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 1 << 62, n), rng.integers(0, 1 << 62, n)
    at = rng.integers(0, n, n)
    table = np.zeros(2 * n, dtype=np.int32)
    texts = [f"utterance {i} of the corpus" for i in range(n)]
    shuffled = rng.permutation(n).tolist()
    index = {t: i for i, t in enumerate(texts)}
    return {
        "numpy pass (a + b)": lambda: a + b,
        "numpy gather (a[random])": lambda: a[at],
        "numpy table write (minimum.at)": lambda: np.minimum.at(table, at, 0),
        "python objects in order": lambda: sum(map(len, texts)),
        "python objects, random order": lambda: sum(len(texts[i]) for i in shuffled),
        "python dict lookups": lambda: sum(map(index.__getitem__, texts)),
    }


def floor_exponents(n1: int, n2: int) -> dict:
    """name -> (seconds at n1, seconds at n2, exponent) of each of :func:`operations`."""
    small, large = operations(n1), operations(n2)
    out = {}
    for name in small:
        t1, t2 = _median_seconds(small[name]), _median_seconds(large[name])
        out[name] = (t1, t2, math.log(t2 / t1) / math.log(n2 / n1))
    return out


def print_floor(n1: int, n2: int) -> dict:
    """Measure and print :func:`floor_exponents`; returns them."""
    found = floor_exponents(n1, n2)
    print(f"\nlinear work on this machine, n={n1:,} -> {n2:,} (benchmarks/bench_memory_floor.py):")
    for name, (t1, t2, e) in found.items():
        print(f"  {name:<34}{t1 * 1e3:10.3f} ms {t2 * 1e3:10.3f} ms   exponent {e:.2f}")
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="100000,1500000", help="two element counts, comma-separated")
    args = ap.parse_args(argv)
    n1, n2 = sorted(int(float(x)) for x in args.sizes.split(","))
    print_floor(n1, n2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
