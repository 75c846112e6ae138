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


# file content hashes of this process, by what stat says of the file: a model read again in the
# same run costs one stat; a file rewritten in place (even keeping size and mtime) is read again
_CONTENT_MEMO: dict = {}


def _memo_digest(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    if key not in _CONTENT_MEMO:
        _CONTENT_MEMO[key] = file_digest(path, n=None)
    return _CONTENT_MEMO[key]


def content_digest(paths, n: Optional[int] = 16) -> str:
    """SHA-256 over the bytes of model files, in the order given; a folder counts as every file
    under it, by relative path. A file's name is not part of it: the same voice under another
    name keys alike, another voice under the same name does not (issue 62)."""
    h = hashlib.sha256()
    for item in paths:
        item = Path(item)
        if item.is_dir():
            for f in sorted(p for p in item.rglob("*") if p.is_file()):
                h.update(f"{f.relative_to(item)}\t{_memo_digest(f)}\n".encode())
        else:
            h.update(f"\t{_memo_digest(item)}\n".encode())
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
