"""``sparc-eval leakage``: compare content leakage across corpora from an hparams file.

    sparc-eval leakage hparams/leakage.yaml [--key=value ...]

Same as ``python recipes/compare_leakage.py ...``; the last line printed is the path of
results.json (report.md and the figures are beside it).
"""

from __future__ import annotations

import argparse
import sys

from ..errors import DataError


def main(argv=None, *, prog: str = "compare_leakage") -> int:
    from ..text.cli import load_hparams, parse_arguments
    from .run import compare_leakage

    try:
        hparams_file, overrides = parse_arguments(sys.argv[1:] if argv is None else argv)
        hparams = load_hparams(hparams_file, overrides)
        path = compare_leakage(hparams, hparams_file=hparams_file, overrides=overrides,
                               log=lambda msg: print(msg, file=sys.stderr, flush=True))
    except DataError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    print(path)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "leakage", help="compare content leakage across corpora and attackers",
        description="Every attacker (text scorers, ECAPA on phones / phone durations / mel) on every corpus, "
                    "with and without shared text: EERs with CIs, per-speaker and segment EERs, distinctiveness "
                    "and vocabulary statistics, bootstrap comparisons, report.md and figures.")
    p.add_argument("hparams", help="hparams file, e.g. hparams/leakage.yaml")
    p.add_argument("overrides", nargs=argparse.REMAINDER, help="--key=value overrides")
    p.set_defaults(func=run)


def run(args) -> int:
    return main([args.hparams, *args.overrides], prog="sparc-eval leakage")
