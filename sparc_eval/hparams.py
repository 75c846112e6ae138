"""What every hyperpyyaml recipe's command line shares: ``HPARAMS.yaml --key=value ...``, the
hparams loaded with those overrides, errors printed as one line with exit status 2, and the
path of results.json as the last line printed. Used by ``recipes/evaluate_text.py`` /
``sparc-eval text`` and ``recipes/compare_leakage.py`` / ``sparc-eval leakage``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import DataError


def parse_value(text: str):
    """One override value as YAML (``0.8``, ``[1, 2]``, ``true``); text that is not YAML stays text."""
    import yaml

    try:
        return yaml.safe_load(text) if text != "" else None
    except yaml.YAMLError:
        return text


def parse_overrides(overrides) -> dict:
    """Overrides as a dict: SpeechBrain's YAML string (``sb.parse_arguments``) or a dict; a key
    given twice keeps its last value, as on any command line."""
    import yaml

    if not overrides:
        return {}
    if isinstance(overrides, dict):
        return dict(overrides)
    try:
        parsed = yaml.safe_load(overrides)
    except yaml.YAMLError as err:
        raise DataError(f"malformed --key=value override ({err})") from None
    if not isinstance(parsed, dict):
        raise DataError(f"overrides must be --key=value pairs, got {overrides!r}")
    return parsed


def parse_arguments(argv):
    """(hparams file, overrides dict) from ``file --key=value --key value ...``."""
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
        overrides[key] = parse_value(value)
    return hparams_file, overrides


def defined_keys(hparams_file) -> set:
    """The top-level keys an hparams file defines (what hyperpyyaml accepts as overrides)."""
    import re

    try:
        text = Path(hparams_file).read_text(encoding="utf-8")
    except OSError as err:
        raise DataError(
            f"cannot read the hparams file ({err.strerror})", path=hparams_file
        ) from None
    return set(re.findall(r"^([A-Za-z_]\w*)\s*:", text, re.M))


def load_hparams(hparams_file, overrides: dict, *, library_keys=frozenset()) -> dict:
    """hyperpyyaml with overrides; unknown keys and unreadable files are DataErrors. Overrides of
    ``library_keys`` (keys whose defaults live in the library, e.g. the data keys) that the file
    does not define are set after loading instead of failing."""
    from hyperpyyaml import load_hyperpyyaml

    given, late = dict(overrides), {}
    if library_keys:
        defined = defined_keys(hparams_file)
        late = {k: v for k, v in given.items() if k in library_keys and k not in defined}
        overrides = {k: v for k, v in given.items() if k not in late}
    try:
        with open(hparams_file, encoding="utf-8") as fin:
            hparams = load_hyperpyyaml(fin, overrides)
    except OSError as err:
        raise DataError(
            f"cannot read the hparams file ({err.strerror})", path=hparams_file
        ) from None
    except KeyError as err:
        raise DataError(
            f"unknown override {err}",
            path=hparams_file,
            hint="every --key=value must name a key of the hparams file",
        ) from None
    except (ValueError, ImportError, AttributeError) as err:
        raise DataError(
            f"cannot load the hparams ({err})",
            path=hparams_file,
            hint="set required (!PLACEHOLDER) keys with --key=value",
        ) from None
    hparams.update(late)
    hparams["hparams_file"] = str(hparams_file)
    hparams["overrides"] = given
    return hparams


def run_recipe(argv, body, *, prog: str, library_keys=frozenset()) -> int:
    """Parse ``argv`` (sys.argv[1:] when None), load the hparams and call
    ``body(hparams, hparams_file, overrides, log)``, which returns the results.json path."""
    try:
        hparams_file, overrides = parse_arguments(sys.argv[1:] if argv is None else argv)
        hparams = load_hparams(hparams_file, overrides, library_keys=library_keys)
        path = body(
            hparams, hparams_file, overrides, lambda msg: print(msg, file=sys.stderr, flush=True)
        )
    except DataError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    print(path)
    return 0


def register_recipe(
    subparsers, name: str, run, *, help: str, description: str, example: str
) -> None:
    """A ``sparc-eval NAME HPARAMS [--key=value ...]`` subcommand calling ``run(args)``."""
    p = subparsers.add_parser(name, help=help, description=description)
    p.add_argument("hparams", help=f"hparams file, e.g. {example}")
    p.add_argument("overrides", nargs=argparse.REMAINDER, help="--key=value overrides")
    p.set_defaults(func=run)
