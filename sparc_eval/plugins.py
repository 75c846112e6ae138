"""Finding plug-ins by registered name (entry points) or by dotted path.

The library never imports ``anonymizers/`` itself: built-in anonymizers are registered in the
``sparc_eval.anonymizers`` entry-point group of this package's metadata, exactly as another
installed package registers its own::

    [project.entry-points."sparc_eval.anonymizers"]
    my_voice = "my_package.voice:MyVoiceAnonymizer"

``load_anonymizer("mcadams", alpha=0.7)`` and
``load_anonymizer("anonymizers.mcadams.McAdams", alpha=0.7)`` build the same object.
"""

from __future__ import annotations

import importlib
import importlib.util
from importlib import metadata

from .errors import DataError

ANONYMIZER_GROUP = "sparc_eval.anonymizers"


def package_folder(module: str):
    """The folder of an installed package, found without importing it (packages that ship
    weights are read as files there); None when it is not installed."""
    from pathlib import Path

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def entry_points(group: str) -> dict:
    """name -> EntryPoint for one group (the last registration of a name wins)."""
    try:
        found = metadata.entry_points(group=group)
    except TypeError:  # Python < 3.10
        found = metadata.entry_points().get(group, [])
    return {ep.name: ep for ep in found}


def lookup(group: str, name: str, *, what: str, dotted: bool = False, hint=""):
    """What is registered as ``name`` in the entry-point group ``group`` (with ``dotted``, a
    ``package.module.Name`` path too), loaded: the one lookup of every registry (anonymizers,
    attackers, corpus loaders, utility metrics, phone recognizers). ``what`` names the kind in
    the errors: an unknown name lists the registered ones; a registered one that cannot be
    imported says which package to check."""
    registered = entry_points(group)
    key = name if name in registered else str(name).replace("-", "_")
    if key in registered:
        try:
            return registered[key].load()
        except ImportError as err:
            raise DataError(
                f"{what} {name!r} is registered as {registered[key].value} "
                f"but cannot be imported: {err}",
                hint="check that its package is installed",
            ) from None
    if dotted and isinstance(name, str) and ("." in name or ":" in name):
        return load_object(name)
    raise DataError(
        f"unknown {what} {name!r}; registered: {', '.join(sorted(registered)) or 'none'}",
        hint=hint() if callable(hint) else hint,  # a callable: the hint is costly, asked on a miss
    )


def load_object(dotted: str):
    """The object at ``package.module.Name`` or ``package.module:Name``."""
    if ":" in dotted:
        module_name, _, attr = dotted.partition(":")
    else:
        module_name, _, attr = dotted.rpartition(".")
    if not module_name or not attr:
        raise DataError(f"{dotted!r} is not a dotted path (package.module.Name)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise DataError(
            f"cannot import {module_name!r} for {dotted!r}: {err}",
            hint="check the spelling, and that the package is installed",
        ) from None
    except SyntaxError as err:  # a plug-in being written: name its file and line, not a traceback
        raise DataError(
            f"cannot import {module_name!r} for {dotted!r}: {err.msg} ({err.filename}, line {err.lineno})",
            hint="fix the plug-in's syntax",
        ) from None
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise DataError(f"{module_name!r} has no attribute {attr!r}") from None
    return obj


def make_backend(spec, options: dict, *, kind: str, method: str, builtins: dict):
    """A backend object from a built-in name (``builtins`` keys, case and ``_``/``-`` folded), a
    dotted class path (``options`` go to the class), or an object that already has ``method``."""
    if not isinstance(spec, str):
        if options:
            raise DataError(f"{kind} options need a backend name, not a {kind} object")
        if not callable(getattr(spec, method, None)):
            raise DataError(f"{spec!r} is not a {kind} (no {method}() method)")
        return spec
    key = spec.strip().lower().replace("_", "-")
    if key in builtins:
        return builtins[key](**options)
    if "." in spec or ":" in spec:
        return load_object(spec)(**options)
    raise DataError(
        f"unknown {kind} backend {spec!r}; one of {', '.join(builtins)} or a dotted class path"
    )


def available_anonymizers() -> list:
    """Registered anonymizer names, sorted."""
    return sorted(entry_points(ANONYMIZER_GROUP))


def anonymizer_class(spec: str):
    """The class for a registered name or a dotted path."""
    if not isinstance(spec, str) or not spec:
        raise DataError(f"anonymizer must be a registered name or a dotted path, got {spec!r}")
    return lookup(
        ANONYMIZER_GROUP,
        spec,
        what="anonymizer",
        dotted=True,
        hint="use one of those names, or a dotted path such as anonymizers.mcadams.McAdams",
    )


def load_anonymizer(spec, **kwargs):
    """An anonymizer object from a registered name or dotted path (``kwargs`` go to the class);
    an object that is already an anonymizer is returned as it is."""
    if not isinstance(spec, str):
        if kwargs:
            raise DataError("keyword arguments need an anonymizer name, not an object")
        if not callable(getattr(spec, "anonymize", None)):
            raise DataError(f"{spec!r} has no anonymize(wav, sr, utterance) method")
        return spec
    cls = anonymizer_class(spec)
    try:
        obj = cls(**kwargs)
    except TypeError as err:
        raise DataError(f"anonymizer {spec!r}: bad parameters {sorted(kwargs)}: {err}") from None
    if not callable(getattr(obj, "anonymize", None)):
        raise DataError(f"{spec!r} does not build an anonymizer (no anonymize method)")
    if getattr(obj, "name", None) in (None, "") and spec in entry_points(ANONYMIZER_GROUP):
        obj.name = spec
    return obj
