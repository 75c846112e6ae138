"""``sparc-eval demo``: build the built-in demo corpus and print its summary.

The corpus goes to ``<out>/corpus_<mode>/``; a rerun with the same settings reuses it. The
last line printed is the path of the corpus manifest (the file later stages read).
"""

from __future__ import annotations

import time
from pathlib import Path

from .corpus import MODES


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="build the built-in demo corpus (and run the demo job)",
        description="Build the built-in demo corpus (synthetic espeak-ng speakers, deterministic "
        "from the seed) under OUT/corpus_<mode>/ and print its summary; the last line "
        "is the manifest path.",
    )
    parser.add_argument(
        "--out", default="results/demo", help="output folder (default: results/demo)"
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="reading",
        help="reading: each speaker reads their own book; conversation: pairs of "
        "speakers talk about a shared topic (default: reading)",
    )
    parser.add_argument("--speakers", type=int, default=48, help="number of speakers (default: 48)")
    parser.add_argument("--utts", type=int, default=20, help="utterances per speaker (default: 20)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def _counts(counts: dict) -> str:
    return ", ".join(f"{key}={value}" for key, value in counts.items()) or "none"


def run(args) -> int:
    from .corpus import build_demo_corpus, summarise

    corpus_dir = Path(args.out).resolve() / f"corpus_{args.mode}"
    started = time.perf_counter()
    manifest = build_demo_corpus(
        corpus_dir,
        mode=args.mode,
        n_speakers=args.speakers,
        utts_per_speaker=args.utts,
        seed=args.seed,
        progress=not args.quiet,
    )
    elapsed = time.perf_counter() - started
    summary = summarise(manifest)
    hours = summary["hours"]
    lines = [
        f"corpus: {corpus_dir}",
        f"mode: {args.mode}",
        f"seed: {args.seed}",
        f"utterances: {summary['utterances']}",
        f"speakers: {summary['speakers']}",
        f"episodes: {summary['episodes']}",
        f"hours: {'unknown' if hours is None else f'{hours:.3f}'}",
        f"sex: {_counts(summary['sex'])}",
        f"age: {_counts(summary['age'])}",
        f"accent: {_counts(summary['accent'])}",
        f"seconds: {elapsed:.1f}",
        str(corpus_dir / "manifest.jsonl"),
    ]
    print("\n".join(lines), flush=True)
    return 0
