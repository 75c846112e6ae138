"""``sparc-eval text``: the SPARC transcript-only evaluation from an hparams file.

    sparc-eval text hparams/text/tfidf.yaml --data_folder=PATH --output_folder=DIR [--key=value ...]

Same as ``python recipes/evaluate_text.py ...``: overrides are ``--key=value`` (or
``--key value``) with YAML values, as in SpeechBrain recipes; the last line printed is the
path of results.json. The scorer is named in the hparams file by dotted path
(``!new:attackers.text.tfidf.TfidfScorer``), so this package never imports ``attackers``.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import DataError


def parse_arguments(argv):
    """(hparams file, overrides dict) from ``file --key=value --key value ...``."""
    import yaml

    argv = list(argv)
    if not argv or argv[0].startswith("--"):
        raise DataError("usage: HPARAMS.yaml [--key=value ...]")
    hparams_file, overrides, rest = argv[0], {}, argv[1:]
    while rest:
        arg = rest.pop(0)
        if not arg.startswith("--"):
            raise DataError(f"unexpected argument {arg!r}", hint="overrides are --key=value")
        key, eq, value = arg[2:].partition("=")
        if not eq:
            if not rest:
                raise DataError(f"--{key} needs a value")
            value = rest.pop(0)
        try:
            overrides[key] = yaml.safe_load(value) if value != "" else None
        except yaml.YAMLError:
            overrides[key] = value
    return hparams_file, overrides


def load_hparams(hparams_file, overrides: dict) -> dict:
    """hyperpyyaml with overrides; unknown keys and unreadable files are DataErrors."""
    from hyperpyyaml import load_hyperpyyaml

    try:
        with open(hparams_file, encoding="utf-8") as fin:
            hparams = load_hyperpyyaml(fin, overrides)
    except OSError as err:
        raise DataError(f"cannot read the hparams file ({err.strerror})", path=hparams_file) from None
    except KeyError as err:
        raise DataError(f"unknown override {err}", path=hparams_file,
                        hint="every --key=value must name a key of the hparams file") from None
    except (ValueError, ImportError, AttributeError) as err:
        raise DataError(f"cannot load the hparams ({err})", path=hparams_file) from None
    hparams["hparams_file"] = str(hparams_file)
    hparams["overrides"] = overrides
    return hparams


def main(argv=None, *, prog: str = "evaluate_text") -> int:
    from .evaluate import evaluate_from_hparams

    try:
        hparams_file, overrides = parse_arguments(sys.argv[1:] if argv is None else argv)
        hparams = load_hparams(hparams_file, overrides)
        path = evaluate_from_hparams(hparams, log=lambda msg: print(msg, file=sys.stderr))
    except DataError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    print(path)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "text", help="SPARC transcript-only speaker/attribute verification",
        description="Trials, scores and metrics per task, (P, L) setting and condition from an hparams file "
                    "(hparams/text/*.yaml) with --key=value overrides.")
    p.add_argument("hparams", help="hparams file, e.g. hparams/text/tfidf.yaml")
    p.add_argument("overrides", nargs=argparse.REMAINDER, help="--key=value overrides")
    p.set_defaults(func=run)


def run(args) -> int:
    return main([args.hparams, *args.overrides], prog="sparc-eval text")
