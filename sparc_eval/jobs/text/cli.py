"""``sparc-eval text``: the SPARC transcript-only evaluation from an hparams file.

    sparc-eval text hparams/text/tfidf.yaml --data_folder=PATH --output_folder=DIR [--key=value ...]

Same as ``python recipes/evaluate_text.py ...``: overrides are ``--key=value`` (or
``--key value``) with YAML values, as in SpeechBrain recipes; the last line printed is the
path of results.json. The scorer is named in the hparams file by dotted path
(``!new:attackers.text.tfidf.TfidfScorer``), so this package never imports ``attackers``.
The hparams are read here once, into :class:`~.settings.TextRunSettings`; the library takes those.
"""

from __future__ import annotations

from ...hparams import load_hparams, parse_arguments, register_recipe, run_recipe

__all__ = ["evaluate", "load_hparams", "parse_arguments", "main", "register", "run"]


def evaluate(hparams: dict):
    """The recipe's body: the hparams as settings (read once), then the evaluation; results.json."""
    from .evaluate import evaluate_from_settings
    from .settings import TextRunSettings

    return evaluate_from_settings(TextRunSettings.from_hparams(hparams))


def main(argv=None, *, prog: str = "evaluate_text") -> int:
    return run_recipe(argv, lambda hparams, _file, _overrides: evaluate(hparams), prog=prog)


def register(subparsers) -> None:
    register_recipe(
        subparsers,
        "text",
        run,
        help="SPARC transcript-only speaker/attribute verification",
        description="Trials, scores and metrics per task, (P, L) setting and condition from an hparams file "
        "(hparams/text/*.yaml) with --key=value overrides.",
        example="hparams/text/tfidf.yaml",
    )


def run(args) -> int:
    return main([args.hparams, *args.overrides], prog="sparc-eval text")
