"""Corpus specs as recipes name them: a path any loader accepts, or ``demo:reading`` /
``demo:conversation`` (the built-in demo corpus, built under the cache folder)."""

from __future__ import annotations

import warnings
from pathlib import Path

from ..manifest import Manifest
from . import load_corpus


def load_spec(spec, *, cache_folder, root=None) -> Manifest:
    """A corpus from a path, or the built-in demo corpus for ``demo:reading`` / ``demo:conversation``."""
    spec = str(spec)
    if spec.startswith("demo:"):
        from sparc_eval.demo import build_demo_corpus

        mode = spec.split(":", 1)[1] or "reading"
        return build_demo_corpus(Path(cache_folder) / f"demo_{mode}", mode=mode, progress=False)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*loading as text-only")
        return load_corpus(spec, root=root)


def load_specs(specs, **kwargs) -> Manifest:
    specs = [specs] if isinstance(specs, (str, Path)) else list(specs)
    utterances = [u for spec in specs for u in load_spec(spec, **kwargs)]
    return Manifest(utterances, name="+".join(map(str, specs))).validate()
