"""Corpus specs as recipes name them: a path any loader accepts, or ``SCHEME:rest`` for a scheme
registered in the entry-point group ``sparc_eval.corpus_specs`` (``demo:reading`` /
``demo:conversation``: the built-in demo corpus, built under the cache folder)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from ...errors import DataError
from ...plugins import entry_points
from ..manifest import Manifest
from . import load_corpus

CORPUS_SPEC_GROUP = "sparc_eval.corpus_specs"
# what the demo corpus's settings.json says it is (sparc_eval.demo writes it)
DEMO_CORPUS_MARK = "sparc-eval demo"


def load_spec(spec, *, cache_folder, root=None) -> Manifest:
    """A corpus from a path, or from the function a registered scheme names (``demo:reading``)."""
    spec = str(spec)
    scheme, colon, rest = spec.partition(":")
    schemes = entry_points(CORPUS_SPEC_GROUP) if colon else {}
    if scheme in schemes:
        return schemes[scheme].load()(rest, cache_folder=Path(cache_folder))
    if scheme == "demo":  # the built-in scheme, missing from a checkout not installed again
        raise DataError(
            f"corpus {spec!r}: the demo scheme is not registered (sparc_eval.corpus_specs)",
            hint="install the package again (make install, or pip install -e .)",
        )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*loading as text-only")
        return load_corpus(spec, root=root)


def load_specs(specs, **kwargs) -> Manifest:
    specs = [specs] if isinstance(specs, (str, Path)) else list(specs)
    utterances = [u for spec in specs for u in load_spec(spec, **kwargs)]
    return Manifest(utterances, name="+".join(map(str, specs))).validate()


def is_demo_corpus(spec) -> bool:
    """Whether a corpus spec names the demo corpus: ``demo:MODE``, or a folder (or a manifest in
    one) that holds a demo corpus's ``settings.json``: its speech is espeak-ng's, not people's."""
    text = str(spec or "")
    if not text:
        return False
    if text.startswith("demo:"):
        return True
    path = Path(text)
    folder = path if path.is_dir() else path.parent
    try:
        settings = json.loads((folder / "settings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(settings, dict) and settings.get("corpus") == DEMO_CORPUS_MARK
