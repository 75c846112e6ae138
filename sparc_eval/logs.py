"""Progress messages: the library logs to ``logging`` (loggers under ``sparc_eval``); the command
lines show them on stderr at INFO, so that stdout keeps only what the contracts print (the path of
results.json last). A program that embeds the library configures logging as it likes."""

from __future__ import annotations

import logging
import sys

_HANDLER_NAME = "sparc_eval.cli"


class _CurrentStderr(logging.StreamHandler):
    """Writes to ``sys.stderr`` as it is when a message comes (a redirected or captured stream),
    not the one it was when the handler was added."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):  # StreamHandler.__init__ sets it: the property decides
        pass


def cli_logging(level: int = logging.INFO) -> None:
    """One stderr handler on the ``sparc_eval`` logger, message only (added once)."""
    root = logging.getLogger("sparc_eval")
    if any(getattr(h, "name", None) == _HANDLER_NAME for h in root.handlers):
        return
    handler = _CurrentStderr()
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(logging.Formatter("%(message)s"))
    root.addHandler(handler)
    root.setLevel(level)
