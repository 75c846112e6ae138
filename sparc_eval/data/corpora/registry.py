"""Corpus loaders by registered name: the entry-point group ``sparc_eval.corpus_loaders``.

A corpus loader is an object (or a class built without arguments) with::

    name: str                          # the layout it reads, the name it is registered under
    priority: int                      # detection order, lower first
    detects(path: Path) -> bool        # PATH (a folder or file that exists) is in this layout
    load(path, **options) -> Manifest  # the corpus; options are load_corpus's keywords

:func:`~sparc_eval.data.corpora.detect_layout` asks the registered loaders in priority order and
takes the first that says yes, so a loader that recognises a more specific layout goes first. The
built-ins, one per module of this package: ``manifest`` 10, ``kaldi`` 20, ``edacc`` 30,
``librispeech`` 40, ``spane`` 50, ``audio_folder`` 55, ``sparc`` 60 (a folder holding
``manifest.jsonl`` is a manifest whatever else it holds; a folder of audio files that no specific
layout claims is an audio folder; any JSON-lines file that no other loader claims is a SPARC export).
``load`` receives every option of :func:`~sparc_eval.data.corpora.load_corpus` (``root``,
``split``, ``columns``, ``skip_missing``, ``keep_unreadable``) and ignores the ones it does not use.

Another package registers its own loader in its ``pyproject.toml``::

    [project.entry-points."sparc_eval.corpus_loaders"]
    my_corpus = "my_package.my_corpus:MyCorpusLoader"
"""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import DataError

CORPUS_LOADER_GROUP = "sparc_eval.corpus_loaders"


def corpus_loaders() -> list:
    """Every registered loader, in detection order (priority, then name)."""
    from ...plugins import entry_points  # read at call time: tests and plug-ins may replace it

    loaders = [_loaded(entry) for entry in entry_points(CORPUS_LOADER_GROUP).values()]
    return sorted(loaders, key=lambda loader: (loader.priority, loader.name))


def registered_layouts() -> tuple:
    """The registered layout names, in detection order."""
    return tuple(loader.name for loader in corpus_loaders())


def corpus_loader(layout: str):
    """The loader registered as ``layout``."""
    from ...plugins import entry_points, lookup

    hint = lambda: f"one of {', '.join(registered_layouts())}"  # noqa: E731 (asked on a miss)
    found = lookup(CORPUS_LOADER_GROUP, layout, what="layout", hint=hint)
    registered = entry_points(CORPUS_LOADER_GROUP)
    return _checked(found, registered.get(layout) or registered[layout.replace("-", "_")])


def _loaded(entry):
    """The loader object an entry point names (every one, for detection), checked."""
    try:
        found = entry.load()
    except ImportError as err:
        raise DataError(
            f"corpus loader {entry.name!r} is registered as {entry.value} but cannot be imported: {err}",
            hint="check that its package is installed",
        ) from None
    return _checked(found, entry)


def _checked(found, entry):
    """The loader ``found`` (a class is built), checked against the contract."""
    loader = found() if isinstance(found, type) else found
    missing = [m for m in ("detects", "load") if not callable(getattr(loader, m, None))]
    if missing:
        raise DataError(
            f"corpus loader {entry.name!r} ({entry.value}) lacks {', '.join(missing)}()",
            hint="see sparc_eval/data/corpora/registry.py for the contract",
        )
    if getattr(loader, "name", None) != entry.name:
        raise DataError(
            f"corpus loader {entry.value} is named {getattr(loader, 'name', None)!r} "
            f"but registered as {entry.name!r}",
            hint="register it under its name",
        )
    if not isinstance(getattr(loader, "priority", None), (int, float)):
        raise DataError(
            f"corpus loader {entry.name!r} ({entry.value}) has no numeric priority",
            hint="set priority (lower is asked first; the built-ins use 10 to 60)",
        )
    return loader


def json_lines_keys(path: Path) -> set:
    """The keys of the first record of a JSON-lines file; empty when the file is not JSON lines
    of objects (a parquet file never is, whatever its first bytes)."""
    if Path(path).suffix == ".parquet":
        return set()
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    record = json.loads(line)
                    return set(record) if isinstance(record, dict) else set()
    except (OSError, ValueError, UnicodeDecodeError):
        return set()
    return set()
