"""Short content digests (SHA-256, hex) for cache keys: of a JSON-able object, a file, a folder.

``n`` is how many hex characters to keep (``None``: all 64). Changing what a function hashes
changes every key made with it, so existing caches and ledgers would be redone.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable, Optional

_CHUNK = 1 << 20  # 1 MiB: large audio files are hashed without reading them whole
# what a settings record holds for a value whose state cannot be known (an object with no
# settings() and an address for a repr): a key made of it must never be reused
UNKNOWN_STATE = "<unknown state>"


def digest(obj, n: Optional[int] = 16, *, default: Callable = str) -> str:
    """SHA-256 of ``json.dumps(obj, sort_keys=True, default=default)``, first ``n`` hex chars.

    ``default`` turns what JSON cannot hold into text (``str``; ``repr`` for keys that were
    made that way, such as the anonymizer's ledger)."""
    text = json.dumps(obj, sort_keys=True, default=default)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def file_digest(path, n: Optional[int] = 16) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB chunks; first ``n`` hex chars."""
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()[:n]


def folder_digest(path, n: Optional[int] = 16) -> str:
    """SHA-256 over the files under a folder: relative path, size and mtime_ns of each, in sorted
    order (contents are not read, so a big corpus is cheap; a rewrite changes the mtime)."""
    path = Path(path)
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        if f.is_file():
            st = f.stat()
            h.update(f"{f.relative_to(path)}\t{st.st_size}\t{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:n]


def lines_digest(lines, n: Optional[int] = 16) -> str:
    """SHA-256 of text pieces fed in order (e.g. one line per utterance), first ``n`` hex chars."""
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8"))
    return h.hexdigest()[:n]


def text_digest(text: str, n: Optional[int] = 16) -> str:
    """SHA-256 of one text as it is (no JSON quoting), first ``n`` hex chars."""
    return lines_digest([text], n)
