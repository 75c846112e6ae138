"""``sparc-eval leakage``: compare content leakage across corpora from an hparams file.

    sparc-eval leakage hparams/leakage.yaml [--key=value ...]

Same as ``python recipes/compare_leakage.py ...``; the last line printed is the path of
results.json (report.md and the figures are beside it).
"""

from __future__ import annotations

from ...hparams import register_recipe, run_recipe


def main(argv=None, *, prog: str = "compare_leakage") -> int:
    from .run import compare_leakage
    from .settings import LeakageSettings

    return run_recipe(
        argv,
        lambda hparams, hparams_file, overrides: compare_leakage(
            LeakageSettings.from_hparams(hparams), hparams_file=hparams_file, overrides=overrides
        ),
        prog=prog,
    )


def register(subparsers) -> None:
    register_recipe(
        subparsers,
        "leakage",
        run,
        help="compare content leakage across corpora and attackers",
        description="Every attacker (text scorers, ECAPA on phones / phone durations / mel) on every corpus, "
        "with and without shared text: EERs with CIs, per-speaker and segment EERs, distinctiveness "
        "and vocabulary statistics, bootstrap comparisons, report.md and figures.",
        example="hparams/leakage.yaml",
    )


def run(args) -> int:
    return main([args.hparams, *args.overrides], prog="sparc-eval leakage")
