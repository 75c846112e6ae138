"""``sparc-eval evaluate``: the anonymizer card from an hparams file.

    sparc-eval evaluate hparams/evaluate.yaml --anonymizer=mcadams [--key=value ...]

Same as ``python recipes/evaluate_anonymizer.py ...``; the last line printed is the path of
results.json (card.md and the figures are beside it).
"""

from __future__ import annotations

from ...hparams import register_recipe, run_recipe


def main(argv=None, *, prog: str = "evaluate_anonymizer") -> int:
    from ...attack import LIBRARY_KEYS
    from ...attack.languages import each_language
    from ...hparams import load_hparams
    from .run import evaluate_anonymizers
    from .settings import CardSettings

    keys = LIBRARY_KEYS | set(CardSettings.plain_keys())

    def body(hparams, hparams_file, overrides):
        def run_one(language, output_folder):
            if language:  # a multilingual preset: each card from the file anew (objects included)
                overrides_now = {**(overrides or {}), "language": language}
                overrides_now["output_folder"] = output_folder
                hp = load_hparams(hparams_file, overrides_now, library_keys=keys)
            else:
                hp, overrides_now = hparams, overrides
            return evaluate_anonymizers(
                CardSettings.from_hparams(hp), hparams_file=hparams_file, overrides=overrides_now
            )

        return each_language(hparams, run_one)

    # the data, evaluation and card keys the file leaves to the library's defaults can still be set
    return run_recipe(argv, body, prog=prog, library_keys=keys)


def register(subparsers) -> None:
    register_recipe(
        subparsers,
        "evaluate",
        run,
        help="evaluate anonymizers: privacy against voice and content, and utility",
        description="Anonymize what the attack scenarios need, run every attacker in every scenario, read the "
        "results against what the words give away (content bound, voice leakage beyond content), "
        "measure utility (WER, rho_F0, G_VD) and compare anonymizers: card.md, results.json, figures.",
        example="hparams/evaluate.yaml --anonymizer=mcadams",
    )


def run(args) -> int:
    return main([args.hparams, *args.overrides], prog="sparc-eval evaluate")
