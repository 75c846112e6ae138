"""The LLM judge's reply cache: JSON lines that threads and processes (Ray actors) share."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path


class ReplyCache:
    """JSON lines of {key, model, reply}, shared by threads and processes (Ray actors).

    Each reply is appended with one ``os.write`` of one whole line to a file opened with
    ``O_APPEND``, then fsynced, so lines that several processes append at once never interleave.
    :meth:`refresh` reads what other processes appended since the last read; a torn last line (a
    process killed while writing) is skipped, and the next append starts on a new line.
    """

    def __init__(self, path):
        self.path = Path(path) if path else None
        self._lock = threading.Lock()
        self._mem = {}
        self._offset = 0
        self.refresh()

    def refresh(self) -> None:
        """Read the lines appended to the file since the last read (complete lines only)."""
        if self.path is None or not self.path.is_file():
            return
        with self._lock, open(self.path, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
            end = data.rfind(b"\n") + 1
            for line in data[:end].splitlines():
                try:
                    row = json.loads(line)
                    self._mem[row["key"]] = row["reply"]
                except (ValueError, KeyError, TypeError):
                    continue  # a torn line from an interrupted run
            self._offset += end

    def get(self, key):
        return self._mem.get(key)

    def __contains__(self, key) -> bool:
        return key in self._mem

    def put(self, key, model, reply) -> None:
        with self._lock:
            self._mem[key] = reply
            if self.path is None:
                return
            line = (
                json.dumps({"key": key, "model": model, "reply": reply}, ensure_ascii=False) + "\n"
            ).encode()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                if _ends_torn(fd):
                    line = b"\n" + line
                while line:  # one write for a line on a local file system; the loop is for the rare short write
                    line = line[os.write(fd, line) :]
                os.fsync(fd)
            finally:
                os.close(fd)


def _ends_torn(fd) -> bool:
    """Whether the file does not end with a newline (a torn last line)."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"
