"""Corpus loaders. Each returns a :class:`~sparc_eval.data.manifest.Manifest`.

``load_corpus(path)`` detects the layout; the specific loaders take layout options. Loaders are
registered by layout name in the entry-point group ``sparc_eval.corpus_loaders`` (the contract
and the detection order are in :mod:`sparc_eval.data.corpora.registry`), so another package adds
a layout with one class and one registration line.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import DataError
from ..manifest import Manifest
from .edacc import load_edacc_release
from .kaldi import load_kaldi_dir, read_id_list, read_trials
from .librispeech import load_librispeech
from .manifest_file import load_manifest
from .registry import CORPUS_LOADER_GROUP, corpus_loader, corpus_loaders, registered_layouts
from .spane import EDACC_ID, load_spane_datafile
from .sparc import load_sparc

__all__ = [
    "CORPUS_LOADER_GROUP",
    "LAYOUTS",
    "corpus_loader",
    "corpus_loaders",
    "detect_layout",
    "load_corpus",
    "load_manifest",
    "load_kaldi_dir",
    "load_librispeech",
    "load_edacc_release",
    "load_spane_datafile",
    "load_sparc",
    "read_trials",
    "read_id_list",
]


def __getattr__(name: str):
    # LAYOUTS is read from the registry when asked: an installed package may have added a layout.
    if name == "LAYOUTS":
        return registered_layouts()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def detect_layout(path) -> str:
    """One of LAYOUTS for a folder or file, or DataError saying what was expected."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path} does not exist")
    for loader in corpus_loaders():
        if loader.detects(path):
            return loader.name
    raise DataError(
        f"{path}: unknown corpus layout",
        hint="expected a LibriSpeech tree, a Kaldi data dir, an EdAcc release, a SpAnE/EdAcc "
        "datafile, a manifest.jsonl (or a folder holding one), SPARC parquet/JSON lines, or a "
        "folder of audio files with a metadata.csv (file,speaker,...) or in speaker folders",
    )


def load_corpus(
    path,
    *,
    layout: str | None = None,
    root=None,
    split: str = "test",
    columns=None,
    skip_missing: bool = False,
    keep_unreadable: bool = False,
) -> Manifest:
    """Load any supported corpus. ``root`` fills SpAnE's ``{root}`` placeholder; ``split`` picks
    the EdAcc release split; ``columns`` maps SPARC export columns (dict or YAML path);
    ``keep_unreadable`` keeps audio files whose header cannot be read (unknown duration; the
    anonymizer lists them as failures) instead of raising. EdAcc
    utterances (by their ids: every conversation opens with a read elicitation passage) and
    utterances flagged ``extra.scripted`` (the demo conversations) mark the manifest as holding
    read passages, whatever the layout."""
    loader = corpus_loader(layout or detect_layout(path))
    manifest = loader.load(
        path,
        root=root,
        split=split,
        columns=columns,
        skip_missing=skip_missing,
        keep_unreadable=keep_unreadable,
    )
    if not manifest.read_passages and any(
        EDACC_ID.match(u.id) or u.extra.get("scripted") for u in manifest
    ):
        manifest = manifest.replace(read_passages=True)
    return manifest
