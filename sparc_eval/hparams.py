"""Hparams files and their overrides: the one reader and the one override syntax of every recipe
and ``sparc-eval`` subcommand.

The syntax is SpeechBrain's: ``HPARAMS.yaml --key=value ...`` (or ``--key value``), values are
YAML (``0.8``, ``[1, 2]``, ``true``), nested values are YAML fragments
(``--anonymizer_options="{mcadams: {alpha: 0.7}}"``), and a flag alone (``--merge``) is true.
A file is read once (:class:`HparamsFile`), however often it is loaded with other overrides.
Errors are printed as one line with exit status 2; a recipe prints its results.json last.
"""

from __future__ import annotations

import argparse
import functools
import logging
import re
import sys
from functools import cached_property
from pathlib import Path
from typing import Optional

from .errors import DataError

logger = logging.getLogger(__name__)
RENAMED_UNTIL = "0.5.0"  # old option spellings are accepted until this release
_TOP_LEVEL = re.compile(r"^([A-Za-z_]\w*)\s*:\s*([^#\n]*?)\s*(#.*)?$", re.M)


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


def parse_arguments(argv, *, file_required: bool = True, repeatable=()) -> tuple:
    """(hparams file or None, overrides dict) from ``[file] --key=value --key value --flag ...``;
    a ``repeatable`` key collects its values in a list (an old spelling such as ``--param``)."""
    argv = list(argv)
    hparams_file = None
    if argv and not argv[0].startswith("--"):
        hparams_file = argv.pop(0)
    elif file_required:
        raise DataError("usage: HPARAMS.yaml [--key=value ...]")
    overrides = {}
    while argv:
        arg = argv.pop(0)
        if not arg.startswith("--") or arg == "--":
            raise DataError(f"unexpected argument {arg!r}", hint="overrides are --key=value")
        key, eq, value = arg[2:].partition("=")
        if eq:
            value = value if key in repeatable else parse_value(value)
        elif argv and not argv[0].startswith("--"):
            value = argv.pop(0) if key in repeatable else parse_value(argv.pop(0))
        else:
            value = True  # a flag alone: --merge, --wer
        if key in repeatable:
            overrides.setdefault(key, []).append(value)
        else:
            overrides[key] = value
    return hparams_file, overrides


def apply_renamed(overrides: dict, renamed: dict, *, prog: str) -> dict:
    """Old option spellings under their new keys, each with a message naming the new one.
    ``renamed``: {old: new key} or {old: (new key, convert(value, overrides))}."""
    out = dict(overrides)
    for old, new in renamed.items():
        if old not in out:
            continue
        value = out.pop(old)
        key, convert = new if isinstance(new, tuple) else (new, None)
        logger.warning(
            "%s: --%s is now --%s (the old spelling works until sparc-eval %s)",
            prog,
            old,
            key,
            RENAMED_UNTIL,
        )
        out[key] = convert(value, out) if convert else value
    return out


class HparamsFile:
    """One hparams file, read once: its top-level keys and values as written, and the hparams
    loaded with any overrides (as often as a run needs: each load builds new objects)."""

    def __init__(self, path):
        self.path = str(path)
        try:
            self.text = Path(path).read_text(encoding="utf-8")
        except OSError as err:
            raise DataError(
                f"cannot read the hparams file ({err.strerror})", path=self.path
            ) from None

    def __repr__(self) -> str:
        return f"HparamsFile({self.path!r})"

    @cached_property
    def written(self) -> dict:
        """Every top-level key with its value as written (text; objects and nesting unparsed)."""
        return {m.group(1): m.group(2) for m in _TOP_LEVEL.finditer(self.text)}

    @property
    def keys(self) -> set:
        """The top-level keys the file defines (what hyperpyyaml accepts as overrides)."""
        return set(self.written)

    @cached_property
    def plain(self) -> dict:
        """The top-level values that are plain YAML (numbers, words, lists), parsed, without
        building anything; tagged values (``!new:``, ``!ref``, ``!name:``) are left out."""
        import yaml

        out = {}
        for key, text in self.written.items():
            if not text or text.startswith("!"):
                continue
            try:
                out[key] = yaml.safe_load(text)
            except yaml.YAMLError:
                out[key] = text
        return out

    def named_class(self, key: str):
        """The class a top-level ``!new:`` or ``!name:`` tag at ``key`` names, imported but not
        built (what an attacker file's ``attacker:`` will make); None without such a tag."""
        from .plugins import load_object

        text = self.written.get(key) or ""
        if not text.startswith(("!new:", "!name:")):
            return None
        return load_object(text.split(":", 1)[1].strip())

    def load(self, overrides=None, *, library_keys=frozenset()) -> dict:
        """hyperpyyaml with overrides; unknown keys are DataErrors. Overrides of ``library_keys``
        (keys whose defaults live in the library, e.g. the data keys) that the file does not
        define are set after loading instead of failing."""
        from hyperpyyaml import load_hyperpyyaml

        given = dict(overrides or {})
        late = {k: v for k, v in given.items() if k in library_keys and k not in self.keys}
        early = {k: v for k, v in given.items() if k not in late}
        try:
            hparams = load_hyperpyyaml(self.text, early)
        except KeyError as err:
            raise DataError(
                f"unknown override {err}",
                path=self.path,
                hint="every --key=value must name a key of the hparams file",
            ) from None
        except DataError:  # an object the file builds refused its settings: its message says why
            raise
        except (ValueError, ImportError, AttributeError) as err:
            raise DataError(
                f"cannot load the hparams ({err})",
                path=self.path,
                hint="set required (!PLACEHOLDER) keys with --key=value",
            ) from None
        hparams.update(late)
        hparams["hparams_file"] = self.path
        hparams["overrides"] = given
        return hparams


def load_hparams(hparams_file, overrides: dict, *, library_keys=frozenset()) -> dict:
    """The hparams of a file loaded once with ``overrides`` (see :meth:`sparc_eval.hparams.HparamsFile.load`)."""
    return HparamsFile(hparams_file).load(overrides, library_keys=library_keys)


def run_recipe(argv, body, *, prog: str, library_keys=frozenset()) -> int:
    """Parse ``argv`` (sys.argv[1:] when None), load the hparams and call
    ``body(hparams, hparams_file, overrides)``, which returns the results.json path."""
    from .logs import cli_logging

    cli_logging()

    def call():
        hparams_file, overrides = parse_arguments(sys.argv[1:] if argv is None else argv)
        hparams = load_hparams(hparams_file, overrides, library_keys=library_keys)
        print(body(hparams, hparams_file, overrides))
        return 0

    return reporting_data_errors(prog, call)


def reporting_data_errors(prog: str, call) -> int:
    """``call()``'s exit code, or 2 with ``prog: error: ...`` on stderr when its input is bad."""
    try:
        return call()
    except DataError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2


def register_recipe(
    subparsers, name: str, run, *, help: str, description: str, example: str
) -> None:
    """A ``sparc-eval NAME HPARAMS [--key=value ...]`` subcommand calling ``run(args)``."""
    p = subparsers.add_parser(name, help=help, description=description)
    p.add_argument("hparams", help=f"hparams file, e.g. {example}")
    p.add_argument("overrides", nargs=argparse.REMAINDER, help="--key=value overrides")
    p.set_defaults(func=run)


def register_passthrough(subparsers, name: str, main, *, help: str, description: str) -> None:
    """A ``sparc-eval NAME ...`` subcommand whose arguments all go to ``main(argv, prog=...)``
    (it parses the hparams syntax itself; :mod:`sparc_eval.cli` dispatches to it)."""
    p = subparsers.add_parser(name, help=help, description=description, add_help=False)
    p.set_defaults(func=None, raw=main)


# --- typed settings from hparams ---------------------------------------------------------------


RANGE = ("minimum", "maximum", "above", "choices")  # what bounded() checks


def bounded(default, *, key=None, group=None, minimum=None, maximum=None, above=None, choices=None):
    """A settings dataclass field whose hparams value :func:`read_fields` checks: a number in
    [``minimum``, ``maximum``] (``above``: an exclusive lower bound) or one of ``choices``.
    ``key``: its hparams key where that is not the field's name (``bootstrap_unit`` for
    ``BootstrapSettings.unit``); ``group``: a name the field is listed under
    (:func:`keys_in`: the data settings' split keys). The default is the one place it is set."""
    from dataclasses import field

    meta = {"key": key, "group": group, "minimum": minimum, "maximum": maximum, "above": above}
    meta["choices"] = choices
    return field(default=default, metadata={k: v for k, v in meta.items() if v is not None})


def has_range(f) -> bool:
    """Whether a dataclass field carries a :func:`bounded` range to check."""
    return any(k in f.metadata for k in RANGE)


def keys_in(cls, group: str) -> tuple:
    """The hparams keys of ``cls``'s fields listed under ``group`` (:func:`bounded`), in order."""
    return tuple(key for key, f in _setting_fields(cls) if f.metadata.get("group") == group)


def library_only(default):
    """A settings dataclass field no hparams key sets (a library caller's choice, such as the
    bootstrap's confidence level): :func:`hparams_keys` leaves it out."""
    from dataclasses import field

    return field(default=default, metadata={"hparams": False})


def hparams_keys(cls) -> dict:
    """{hparams key: field name} of a settings dataclass: every field but the nested settings
    (dataclass-typed, whose own keys are read by their class) and :func:`library_only` ones."""
    return {key: f.name for key, f in _setting_fields(cls)}


@functools.lru_cache(maxsize=None)
def _setting_fields(cls) -> tuple:
    """((hparams key, field), ...) of the fields :func:`hparams_keys` reads, worked out once per
    class (type hints resolved once)."""
    import typing
    from dataclasses import fields

    try:
        hints = typing.get_type_hints(cls)
    except (NameError, TypeError):  # an annotation that does not resolve: judge by the defaults
        hints = {}
    return tuple(
        (f.metadata.get("key", f.name), f)
        for f in fields(cls)
        if f.metadata.get("hparams", True) and not _nested(f, hints.get(f.name))
    )


def _nested(f, hint) -> bool:
    """Whether field ``f`` holds settings of their own (a dataclass, by its type or default)."""
    import typing
    from dataclasses import MISSING, is_dataclass

    factory = None if f.default_factory is MISSING else f.default_factory
    kinds = (hint, *typing.get_args(hint), f.default, factory)  # Optional[Settings] too
    return any(is_dataclass(x) for x in kinds if x is not None)


def _cast(key: str, value, kind: str):
    """``value`` as the field's type (``int``, ``float``, ``str``, ``tuple``, ``bool``, or an
    Optional of one), else a DataError naming the key."""
    base = kind.replace("typing.", "").replace("Optional[", "").rstrip("]").strip()
    try:
        if base == "int" and isinstance(value, int) and not isinstance(value, bool):
            return value  # exact, however large (a seed above 2**53 stays itself)
        if base == "int":
            if isinstance(value, bool) or float(value) != int(float(value)):
                raise ValueError
            return int(float(value))
        if base == "float" and not isinstance(value, bool):
            return float(value)
        if base == "bool" and (isinstance(value, bool) or (type(value) is int and value in (0, 1))):
            return bool(value)  # 0 and 1 as YAML's false and true
        if base == "str" and isinstance(value, str):
            return value
        if base == "str" and isinstance(value, Path):
            return str(value)  # a folder given as a path
        if base == "tuple":
            return tuple([value] if isinstance(value, str) else value)
    except (TypeError, ValueError):
        pass
    else:
        if base not in ("int", "float", "bool", "str", "tuple"):
            return value  # a type this reader does not check
    raise DataError(
        f"hparams: {key} must be {'an' if base == 'int' else 'a'} {base}, not {value!r}"
    )


def _check_bounds(key: str, value, meta) -> None:
    low, high, choices = meta.get("minimum"), meta.get("maximum"), meta.get("choices")
    above = meta.get("above")
    if above is not None and not value > above:
        upper = "" if high is None else f" and <= {high}"
        raise DataError(f"hparams: {key} must be > {above}{upper}, not {value!r}")
    if choices is not None and value not in choices:
        raise DataError(
            f"hparams: {key} must be one of {', '.join(map(str, choices))}, not {value!r}"
        )
    if (low is not None and value < low) or (high is not None and value > high):
        where = (
            f">= {low}" if high is None else f"<= {high}" if low is None else f"in [{low}, {high}]"
        )
        raise DataError(f"hparams: {key} must be {where}, not {value!r}")


def read_fields(cls, hp: dict, keys: Optional[dict] = None) -> dict:
    """{field: value} for the dataclass ``cls`` from ``hp``: each hparams key of ``keys`` (key ->
    field name; default: :func:`hparams_keys` of ``cls``) that is present and not null, cast to the field's type and checked against its
    :func:`bounded` range, so that a mistyped or out-of-range setting fails, naming its key,
    before any work. Absent and null keys are left out: the field's default applies."""
    from dataclasses import fields

    declared = {f.name: f for f in fields(cls)}
    found = {}
    for key, name in (hparams_keys(cls) if keys is None else keys).items():
        if hp.get(key) is None:
            continue
        spec = declared[name]
        kind = spec.type.__name__ if isinstance(spec.type, type) else str(spec.type)
        value = _cast(key, hp[key], kind)
        _check_bounds(key, value, spec.metadata)
        found[name] = value
    return found
