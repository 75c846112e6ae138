#!/usr/bin/env python3
"""Writing a large file of generated lines: ``atomic_stream`` (pieces written by a second thread
while the next are built) against ``atomic_open`` (build, write, build, write), in one run.

    python benchmarks/bench_stream.py [--lines 4000000] [--folder DIR] [--rounds 2]

Each piece is 4,096 lines of about 250 bytes made by Python string formatting, as the trial files
are (4x10^6 lines: about a gigabyte, the NaturalVoices preset's trial files at 1.5x10^6
utterances). Both writers fsync and rename, so the time includes getting the file to disk. The
rounds alternate the two writers (a slow spell of the machine falls on both); the ratio is the
median sequential time over the median streamed time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sparc_eval.atomic import atomic_open, atomic_stream  # noqa: E402

LINES_PER_PIECE = 4096


def piece(lo: int, hi: int) -> str:
    return "".join(
        f'{{"trial_id": "speaker_P200_L20_{i:08d}", "probe_id": "spk{i % 12500:05d}/ep{i % 37000:05d}/p0", '
        f'"enroll_id": "spk{(i * 7) % 12500:05d}/ep{(i * 13) % 37000:05d}/head-L20", "type": '
        f'"easy_negative", "label": false, "conditions": ["combined", "easy", "different_topic"]}}\n'
        for i in range(lo, hi)
    )


def write_all(opener, path: Path, n: int) -> float:
    t0 = time.perf_counter()
    with opener(path) as handle:
        for lo in range(0, n, LINES_PER_PIECE):
            handle.write(piece(lo, min(n, lo + LINES_PER_PIECE)))
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=4_000_000)
    ap.add_argument(
        "--folder", type=Path, default=None, help="where to write (default: a temp dir)"
    )
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    writers = {
        "sequential (atomic_open)": lambda p: atomic_open(p, "w", encoding="utf-8"),
        "streamed (atomic_stream)": atomic_stream,
    }
    times = {name: [] for name in writers}
    with tempfile.TemporaryDirectory(dir=args.folder) as tmp:
        path = Path(tmp) / "lines.jsonl"
        for _ in range(args.rounds):
            for name, opener in writers.items():
                os.sync()
                times[name].append(write_all(opener, path, args.lines))
        size = path.stat().st_size
    print(
        f"{args.lines:,} lines, {size / 1e9:.2f} GB, {args.rounds} round(s), {os.cpu_count()} CPU(s)"
    )
    for name, ts in times.items():
        print(
            f"  {name:<26} median {statistics.median(ts):6.2f} s  ({', '.join(f'{t:.2f}' for t in ts)})"
        )
    seq, streamed = (statistics.median(t) for t in times.values())
    print(f"ratio sequential / streamed: {seq / streamed:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
