"""Atomic file writes: a reader sees the old file or the whole new one, never half of it."""

import contextlib
import json
import os
import queue
import tempfile
import threading
from pathlib import Path

# mkstemp creates files readable by the owner only; give the final file the usual mode
# (0o666 less the process umask), as open() would. Read once, at import.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_open(path, mode: str = "w", **kwargs):
    """Open a temporary file beside ``path``; it replaces ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class _PieceWriter:
    """A file's writes handed to a second thread: ``write(text)`` queues the piece and returns,
    and the thread encodes and writes it. The system call that copies a piece into the page cache
    releases the GIL, so it runs beside the Python code building the next piece (at a gigabyte of
    trial lines that copy is seconds, and it slows as the page cache fills). At most ``depth``
    pieces wait, so memory stays a few pieces whatever the file's size."""

    _DONE = object()

    def __init__(self, handle, encoding: str, depth: int = 4):
        self._handle, self._encoding = handle, encoding
        self._pieces = queue.Queue(maxsize=depth)
        self._error = None
        self._thread = threading.Thread(target=self._drain, name="atomic-writer", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            piece = self._pieces.get()
            if piece is self._DONE:
                return
            if self._error is None:  # after a failure, pieces are taken and dropped
                try:
                    self._handle.write(piece.encode(self._encoding))
                except BaseException as err:  # noqa: BLE001 (re-raised in the caller's thread)
                    self._error = err

    def write(self, text: str) -> None:
        if self._error is not None:
            raise self._error
        self._pieces.put(text)

    def close(self, *, raise_error: bool = True) -> None:
        """Wait for every queued piece; the writing thread's error, if any, raised here."""
        self._pieces.put(self._DONE)
        self._thread.join()
        if raise_error and self._error is not None:
            raise self._error


@contextlib.contextmanager
def atomic_stream(path, encoding: str = "utf-8"):
    """:func:`atomic_open` for text written in many pieces: each ``write`` is encoded and written
    by a second thread while the caller builds the next piece. The file replaces ``path`` only
    when every piece is written and the block succeeded, as with :func:`atomic_open`."""
    with atomic_open(path, "wb") as handle:
        writer = _PieceWriter(handle, encoding)
        try:
            yield writer
        except BaseException:
            writer.close(raise_error=False)  # the block's error is the one to see
            raise
        writer.close()  # the thread is done with the handle before it is flushed and closed


def write_text(path, text: str) -> None:
    with atomic_open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def write_json(path, obj) -> None:
    with atomic_open(path, "w", encoding="utf-8") as handle:
        json.dump(obj, handle, indent=2, sort_keys=False, allow_nan=False)
        handle.write("\n")
