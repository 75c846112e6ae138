"""Content-addressed on-disk cache for per-utterance arrays (features, phone sequences).

A key is the SHA-256 of the producer's settings plus the utterance's content (its text, or
the audio file's bytes and segment), so a cache is shared across attackers, runs and corpora
that hold the same content, and a change of settings never returns stale values.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .atomic import atomic_open
from .digest import digest, text_digest
from .digest import file_digest as whole_file_digest


def default_cache_dir() -> Path:
    return Path(os.environ.get("SPARC_EVAL_CACHE", Path.home() / ".cache" / "sparc_eval"))


def settings_digest(settings: dict) -> str:
    return digest(settings)


_FILE_HASHES: dict = {}


def file_digest(path) -> str:
    """SHA-256 of a file's bytes, remembered per (path, size, mtime) within the process."""
    stat = os.stat(path)
    memo = (str(path), stat.st_size, stat.st_mtime_ns)
    if memo not in _FILE_HASHES:
        _FILE_HASHES[memo] = whole_file_digest(path, n=None)
    return _FILE_HASHES[memo]


def content_key(utt, *, source: str, text: str | None = None) -> str:
    """What an utterance's features depend on: its text, or its audio bytes and segment."""
    if source == "audio":
        audio = utt.audio
        payload = f"audio:{file_digest(audio.path)}:{audio.start}:{audio.stop}"
        if text is not None:  # recognizers that align to the transcript
            payload += ":text:" + text
    else:
        payload = "text:" + (utt.text if text is None else text)
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
