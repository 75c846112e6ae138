"""sparc-eval's own layout: a ``manifest.jsonl`` (one :class:`~sparc_eval.data.manifest.Utterance`
per line), or a folder holding one, as the anonymizer and the demo write them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from ..manifest import Manifest, resolve_audio
from .registry import json_lines_keys


class ManifestLoader:
    """A folder holding ``manifest.jsonl`` (whatever else it holds), or a JSON-lines file whose
    first record has ``id`` and ``speaker``."""

    name = "manifest"
    priority = 10

    def detects(self, path: Path) -> bool:
        if path.is_dir():
            return (path / "manifest.jsonl").is_file()
        return {"id", "speaker"} <= json_lines_keys(path)

    def load(self, path, *, skip_missing: bool = False, **_unused) -> Manifest:
        return load_manifest(path, skip_missing=skip_missing)


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
