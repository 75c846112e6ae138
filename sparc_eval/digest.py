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


# file content hashes of this process, by what stat says of the file: a file read again in the
# same run costs one stat; a file rewritten in place (even keeping size and mtime) is read again
_CONTENT_MEMO: dict = {}


def _stat_key(path: Path) -> tuple:
    """What stat says of a file: a rewrite, or a copy over it (``cp -p`` keeps size and mtime),
    changes its ctime or inode."""
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class FileDigests:
    """Full SHA-256 of files' bytes, remembered by what stat says of them (path, size, mtime,
    ctime, inode) in this process and, given ``memo_file``, in a JSON-lines file read once per
    process, so a warm re-run costs one stat per file. The file is a memo only: lines that do not
    parse are skipped, a failed write is ignored."""

    FIELDS = ("path", "size", "mtime_ns", "ctime_ns", "inode")
    _read: set = set()  # memo files this process has read

    def __init__(self, memo_file=None):
        self.memo_file = Path(memo_file) if memo_file else None
        if self.memo_file is not None and str(self.memo_file) not in self._read:
            self._read.add(str(self.memo_file))
            self._load()

    def _load(self) -> None:
        if not self.memo_file.is_file():
            return
        for line in self.memo_file.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
                _CONTENT_MEMO[tuple(record[k] for k in self.FIELDS)] = record["sha256"]
            except (ValueError, KeyError, TypeError):
                continue  # an interrupted append, or a line of an older layout

    def __call__(self, path) -> str:
        key = _stat_key(Path(path))
        if key not in _CONTENT_MEMO:
            _CONTENT_MEMO[key] = file_digest(path, n=None)
            self._remember(key)
        return _CONTENT_MEMO[key]

    def _remember(self, key: tuple) -> None:
        if self.memo_file is None:
            return
        record = {**dict(zip(self.FIELDS, key)), "sha256": _CONTENT_MEMO[key]}
        try:
            self.memo_file.parent.mkdir(parents=True, exist_ok=True)
            with open(self.memo_file, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")
        except OSError:
            pass  # a memo only


IN_PROCESS = FileDigests()  # remembered in this process only


def _model_file_paths(folder: Path) -> list:
    """The files under a folder that hold a model: hidden entries (``.cache``, ``.git``) and
    ``__pycache__`` are left out, since they change with the reader, not the model."""
    files = []
    for f in folder.rglob("*"):
        parts = f.relative_to(folder).parts
        if f.is_file() and not any(p.startswith(".") or p == "__pycache__" for p in parts):
            files.append(f)
    return sorted(files)


def content_digest(paths, n: Optional[int] = 16, *, digests: Optional[Callable] = None) -> str:
    """SHA-256 over the bytes of model files, in the order given; a folder counts as every file
    under it, by relative path. A file's name is not part of it: the same voice under another
    name keys alike, another voice under the same name does not. ``digests``: how a file's bytes
    are hashed (a :class:`FileDigests` with a memo file; default: remembered in this process). A
    missing path raises FileNotFoundError naming it."""
    digests = digests or IN_PROCESS
    h = hashlib.sha256()
    for item in paths:
        item = Path(item)
        if not item.exists():
            raise FileNotFoundError(f"model file {item} does not exist")
        if item.is_dir():
            for f in _model_file_paths(item):
                h.update(f"{f.relative_to(item)}\t{digests(f)}\n".encode())
        else:
            h.update(f"\t{digests(item)}\n".encode())
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
