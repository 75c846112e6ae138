"""sparc-eval: how much a speaker can still be recognised after speech anonymization."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sparc-eval")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

from . import moved as _moved

_moved.install()  # old dotted paths (sparc_eval.asr, sparc_eval.card.utility...) for one release
