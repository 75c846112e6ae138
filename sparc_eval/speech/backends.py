"""Named errors of the anonymization stage and lazy imports of optional backends.

Every error is a :class:`~sparc_eval.errors.DataError`, so the command line prints it without a
traceback, and the corpus runner records it per utterance in ``failures.jsonl`` and goes on.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from ..errors import DataError

INSTALL = "pip install 'sparc-eval[{extra}]'"


class BackendUnavailable(DataError):
    """An optional package or a model checkpoint is missing; the message says which extra to
    install or which path to set."""


class EmptyTranscript(DataError):
    """The ASR returned no words for an utterance (silence, noise, or a failed decode)."""


class UnspeakableText(DataError):
    """The TTS produced no audio for a text (only symbols, an unsupported script)."""


class AnonymizerOutputError(DataError):
    """An anonymizer returned unusable audio (empty, NaN or infinite samples, wrong shape)."""


class DiskFull(DataError):
    """Writing an output failed for lack of space; what was finished is kept."""


class LazyModel:
    """Base of ASR and TTS backends: a heavy model in ``_model`` (and any attribute named in
    ``_lazy``) is loaded on first use and never pickled, so a backend travels to a worker
    process (Ray, multiprocessing) as its settings and loads there."""

    name = "backend"
    _lazy = ("_model",)

    def settings(self) -> dict:
        return {"backend": self.name, **self.files_key()}

    def model_files(self) -> list:
        """Every model file (or folder) the backend reads; their content joins its settings, so
        another model under the same name is never taken for the old one (issue 62)."""
        return []

    def files_key(self) -> dict:
        """``{"model_files": <content digest>}`` of :meth:`model_files`, or nothing."""
        from ..digest import content_digest

        files = [f for f in self.model_files() if f is not None]
        return {"model_files": content_digest(files)} if files else {}

    def __getstate__(self):
        state = dict(self.__dict__)
        for key in self._lazy:
            state.pop(key, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        for key in self._lazy:
            self.__dict__[key] = None

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings().items() if k != "backend")
        return f"{type(self).__name__}({args})"


def require(module: str, *, extra: str, purpose: str):
    """Import ``module`` or raise BackendUnavailable naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise BackendUnavailable(
            f"{purpose} needs the Python package {module.split('.')[0]!r}, which cannot be imported ({err})",
            hint=f"install it with {INSTALL.format(extra=extra)}",
        ) from None


def require_file(path, *, what: str, setting: str, is_dir: bool = False) -> Path:
    """``path`` as a Path when it exists, else BackendUnavailable naming the setting to fix."""
    if path is None or str(path) == "":
        raise BackendUnavailable(f"{what}: no path given", hint=f"set {setting}")
    p = Path(path).expanduser()
    ok = p.is_dir() if is_dir else p.is_file()
    if not ok:
        kind = "folder" if is_dir else "file"
        raise BackendUnavailable(
            f"{what}: {kind} {p} does not exist", hint=f"set {setting} to an existing {kind}"
        )
    return p


def available_cores() -> int:
    """Threads a backend should use: $OMP_NUM_THREADS when set (Ray sets it to an actor's CPUs),
    else the cores this process may run on. ONNX Runtime and CTranslate2 otherwise take the
    host's core count or a fixed 4, and oversubscribe a small machine."""
    value = os.environ.get("OMP_NUM_THREADS", "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
