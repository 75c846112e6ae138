"""The one guarded place where SpeechBrain is imported.

SpeechBrain 1.1.2 imports ``torchaudio`` at import time, but what we use of it (Fbank,
ECAPA-TDNN, the losses, ``read_audio`` through soundfile, the Brain class) never calls
torchaudio. On CPU-only installs pip pairs CPU torch with a CUDA build of torchaudio whose
import raises ``OSError: libc10_cuda.so``, and without torchaudio the import raises
``ModuleNotFoundError``. So: if a working torchaudio imports, it is used as it is; otherwise
light stand-in modules take its place, and any attribute actually used from them raises an
ImportError that says which feature needs a real torchaudio.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types

STANDIN_VERSION = "2.9.0+sparc-eval-standin"
_SUBMODULES = ("transforms", "functional", "compliance", "compliance.kaldi", "io", "sox_effects")

_status = None  # "torchaudio <version>" or "stand-in (<why>)"


class TorchaudioUnavailable(AttributeError):
    """Raised on use of the stand-in; an AttributeError, so ``hasattr`` probes see False."""


class _StandIn(types.ModuleType):
    """A module that imports fine and fails, clearly, when something in it is used."""

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise TorchaudioUnavailable(
            f"{self.__name__}.{attr} needs a working torchaudio, which is not importable here "
            f"({_status}); install a torchaudio build matching your torch to use this feature"
        )


def ensure_torchaudio() -> str:
    """Make ``import torchaudio`` succeed; return which torchaudio is in use."""
    global _status
    if _status is not None:
        return _status
    try:
        import torchaudio  # noqa: F401

        _status = f"torchaudio {getattr(torchaudio, '__version__', 'unknown')}"
        return _status
    except (ImportError, OSError, RuntimeError) as err:
        for name in [n for n in sys.modules if n == "torchaudio" or n.startswith("torchaudio.")]:
            del sys.modules[name]
        _status = f"stand-in ({type(err).__name__}: {str(err).splitlines()[0][:120]})"
    root = _StandIn("torchaudio")
    root.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None, is_package=True)
    root.__version__ = STANDIN_VERSION
    root.__path__ = []  # a package, so submodule imports resolve through sys.modules
    sys.modules["torchaudio"] = root
    for sub in _SUBMODULES:
        module = _StandIn(f"torchaudio.{sub}")
        module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None, is_package=True)
        module.__path__ = []
        sys.modules[module.__name__] = module
        parent_name, _, leaf = module.__name__.rpartition(".")
        setattr(sys.modules[parent_name], leaf, module)
    return _status


def torchaudio_status() -> str:
    """``torchaudio <version>`` when the real one works, else ``stand-in (<reason>)``."""
    return ensure_torchaudio()


def import_speechbrain(module: str = "speechbrain"):
    """Import a SpeechBrain module after making torchaudio importable."""
    ensure_torchaudio()
    return importlib.import_module(module)
