"""What is kept on disk to be found again: per-utterance arrays, and results of earlier settings.

- :class:`ArrayCache`, a content-addressed cache for per-utterance arrays (features, phone
  sequences). A key is the SHA-256 of the producer's settings plus the utterance's content (its
  text, or the audio file's bytes and segment), so a cache is shared across attackers, runs and
  corpora that hold the same content, and a change of settings never returns stale values.
- The kept store (:func:`set_aside`, :func:`restore`, :func:`prune`): a result lives where its
  readers look for it (a cell folder, an anonymized wav file, a model's checkpoints); before a run
  replaces it with one made under another key, the old one moves to ``<root>/.kept/<key><suffix>``,
  and a later run whose key is there moves it back instead of computing it again, so going back to
  a setting is free. Moves are renames: nothing is copied. Nothing kept is deleted but by
  :func:`prune` (``sparc-eval prune FOLDER``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from .atomic import atomic_open
from .digest import IN_PROCESS, FileDigests, digest, text_digest


def default_cache_dir() -> Path:
    return Path(os.environ.get("SPARC_EVAL_CACHE", Path.home() / ".cache" / "sparc_eval"))


def settings_digest(settings: dict) -> str:
    return digest(settings)


def file_digest(path) -> str:
    """SHA-256 of a file's bytes, remembered within the process while stat says it is unchanged."""
    return IN_PROCESS(path)


def file_digests(cache_folder) -> FileDigests:
    """File hashes remembered in ``cache_folder`` (``file_digests.jsonl``) as well as in the
    process, so a warm run costs one stat per file; in the process only without a cache folder."""
    return FileDigests(Path(str(cache_folder)) / "file_digests.jsonl" if cache_folder else None)


def content_key(utt, *, source: str, text: str | None = None, settings: dict | None = None) -> str:
    """What an utterance's features depend on: its text, or its audio bytes and segment (and the
    per-utterance ``settings`` that made them, such as another language's phonemizer)."""
    if source == "audio":
        audio = utt.audio
        payload = f"audio:{file_digest(audio.path)}:{audio.start}:{audio.stop}"
        if text is not None:  # recognizers that align to the transcript
            payload += ":text:" + text
    else:
        payload = "text:" + (utt.text if text is None else text)
    if settings:
        payload += ":settings:" + json.dumps(settings, sort_keys=True)
    return text_digest(payload, n=None)


class ArrayCache:
    """``get``/``put`` numpy arrays under ``root/<namespace>/<settings digest>/<key[:2]>/<key>.npy``."""

    def __init__(self, root, namespace: str, settings: dict):
        self.dir = Path(root) / namespace / settings_digest(settings)
        self.settings = settings

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.npy"

    def get(self, key: str):
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            return np.load(path, allow_pickle=False)
        except (ValueError, OSError):
            return None  # a damaged entry is recomputed, never trusted

    def put(self, key: str, array: np.ndarray) -> None:
        path = self._path(key)
        if not (self.dir / "settings.json").is_file():
            with atomic_open(self.dir / "settings.json", "w") as handle:
                json.dump(self.settings, handle, sort_keys=True, default=str)
        with atomic_open(path, "wb") as handle:
            np.save(handle, np.ascontiguousarray(array), allow_pickle=False)


def cached_by_audio(utterances, cache: ArrayCache, fill) -> tuple:
    """({utterance id: array}, how many were computed): each utterance's array from ``cache`` under
    its audio's content key, the missing ones made by ``fill([(utterance, key), ...])`` (one per
    distinct audio), which puts them in ``cache``."""
    keys = {u.id: content_key(u, source="audio") for u in utterances}
    found = {key: cache.get(key) for key in set(keys.values())}
    todo = {keys[u.id]: u for u in utterances if found[keys[u.id]] is None}
    if todo:
        fill([(u, key) for key, u in todo.items()])
        found.update({key: cache.get(key) for key in todo})
    return {u.id: found[keys[u.id]] for u in utterances}, len(todo)


# --- the kept store ------------------------------------------------------------------------------

KEPT = ".kept"


def kept_path(root, key: str, suffix: str = "") -> Path:
    return Path(root) / KEPT / f"{key}{suffix}"


def set_aside(path, root, key: str, suffix: str = "") -> None:
    """Move ``path`` (a file or a folder made under ``key``) into the store; a missing path is
    nothing to keep. An entry already kept under that key was made the same way: it is replaced."""
    path = Path(path)
    if not path.exists():
        return
    target = kept_path(root, key, suffix)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir():
        shutil.rmtree(target)
    os.replace(path, target)


def restore(root, key: str, path, suffix: str = "") -> bool:
    """Move the entry kept under ``key`` back to ``path`` (which the caller has set aside or
    removed); False when none is kept."""
    source, path = kept_path(root, key, suffix), Path(path)
    if not source.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        path.rmdir()  # an empty folder left where the entry goes (a non-empty one raises)
    os.replace(source, path)
    return True


def prune(folder) -> tuple:
    """Delete every kept entry under ``folder``: ``(entries, bytes)`` freed."""
    entries = size = 0
    for store in sorted(Path(folder).rglob(KEPT)):
        if not store.is_dir():
            continue
        for item in store.iterdir():
            entries += 1
            files = [item] if item.is_file() else [p for p in item.rglob("*") if p.is_file()]
            size += sum(p.stat().st_size for p in files)
        shutil.rmtree(store)
    return entries, size


# --- sparc-eval prune ----------------------------------------------------------------------------


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "prune",
        help="delete what earlier settings left kept (.kept/) under an output or cache folder",
        description="Delete the cells, anonymized files and model checkpoints that a card, a "
        "leakage comparison or an anonymization run kept aside when a setting changed (every "
        ".kept/ folder under FOLDER). Going back to those settings then computes them again.",
    )
    p.add_argument("folder", metavar="FOLDER", help="an output folder or cache folder")


def run(args) -> int:
    from .errors import DataError

    if not Path(args.folder).is_dir():
        raise DataError(
            f"{args.folder} is no folder", hint="give a card's or a run's output folder"
        )
    entries, size = prune(args.folder)
    print(f"pruned {entries} kept entries ({size / 1e6:.1f} MB) under {args.folder}")
    return 0
