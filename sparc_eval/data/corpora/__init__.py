"""Corpus loaders. Each returns a :class:`~sparc_eval.data.manifest.Manifest`.

``load_corpus(path)`` detects the layout; the specific loaders take layout options.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from ...errors import DataError
from ..manifest import Manifest, resolve_audio
from .edacc import is_edacc_release, load_edacc_release
from .kaldi import load_kaldi_dir, read_id_list, read_trials
from .librispeech import is_librispeech_subset, load_librispeech
from .spane import EDACC_ID, load_spane_datafile
from .sparc import load_sparc

LAYOUTS = ("librispeech", "kaldi", "edacc", "spane", "manifest", "sparc")

__all__ = [
    "LAYOUTS",
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


def _first_record_keys(path: Path):
    import json

    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    record = json.loads(line)
                    return set(record) if isinstance(record, dict) else set()
    except (OSError, ValueError, UnicodeDecodeError):
        return set()
    return set()


def detect_layout(path) -> str:
    """One of LAYOUTS for a folder or file, or DataError saying what was expected."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path} does not exist")
    if path.is_dir():
        if (path / "manifest.jsonl").is_file():
            return "manifest"
        if (path / "utt2spk").is_file():
            return "kaldi"
        if is_edacc_release(path):
            return "edacc"
        if is_librispeech_subset(path) or any(
            is_librispeech_subset(p) for p in path.iterdir() if p.is_dir()
        ):
            return "librispeech"
        if any(p.suffix == ".parquet" for p in path.iterdir()):
            return "sparc"
    else:
        if path.suffix == ".parquet":
            return "sparc"
        keys = _first_record_keys(path)
        if {"id", "speaker"} <= keys:
            return "manifest"
        if {"path", "label"} <= keys:
            return "spane"
        if keys:
            return "sparc"
    raise DataError(
        f"{path}: unknown corpus layout",
        hint="expected a LibriSpeech tree, a Kaldi data dir, an EdAcc release, a SpAnE/EdAcc "
        "datafile, a manifest.jsonl (or a folder holding one), or SPARC parquet/JSON lines",
    )


def load_manifest(path, *, skip_missing: bool = False) -> Manifest:
    """A manifest.jsonl (or a folder holding one); relative audio paths resolve against its folder."""
    path = Path(path)
    if path.is_dir():
        path = path / "manifest.jsonl"
    manifest = Manifest.read_jsonl(path, validate=False)
    utterances = [_absolute_audio(utt, path.parent) for utt in manifest]
    utterances = resolve_audio(utterances, name=str(path), skip_missing=skip_missing)
    read_passages = _input_had_read_passages(path.parent / "anonymization.json")
    return manifest.replace(utterances, read_passages=read_passages).validate()


def _absolute_audio(utt, folder: Path):
    """``utt`` with a relative audio path resolved against ``folder`` (a copy; the input stays)."""
    if utt.audio is None or Path(utt.audio.path).is_absolute():
        return utt
    return replace(utt, audio=replace(utt.audio, path=str((folder / utt.audio.path).resolve())))


def _input_had_read_passages(report_path: Path) -> bool:
    """An anonymized corpus keeps its input loader's mark (EdAcc's read passages) in the
    anonymization report beside its manifest."""
    try:
        return bool(json.loads(report_path.read_text(encoding="utf-8")).get("read_passages"))
    except (OSError, ValueError, AttributeError):
        return False


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
    manifest = _load_layout(
        path,
        layout or detect_layout(path),
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


def _load_layout(
    path, layout: str, *, root, split, columns, skip_missing, keep_unreadable=False
) -> Manifest:
    if layout == "librispeech":  # the layouts whose durations come from the audio headers
        return load_librispeech(path, skip_missing=skip_missing, keep_unreadable=keep_unreadable)
    if layout == "kaldi":
        return load_kaldi_dir(path, skip_missing=skip_missing, keep_unreadable=keep_unreadable)
    if layout == "edacc":
        return load_edacc_release(path, split=split, skip_missing=skip_missing)
    if layout == "spane":
        return load_spane_datafile(path, root=root, skip_missing=skip_missing)
    if layout == "manifest":
        return load_manifest(path, skip_missing=skip_missing)
    if layout == "sparc":
        return load_sparc(path, columns=columns, skip_missing=skip_missing)
    raise DataError(f"unknown layout {layout!r}", hint=f"one of {', '.join(LAYOUTS)}")
