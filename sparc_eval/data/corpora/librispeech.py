"""LibriSpeech as released: ``<subset>/<speaker>/<chapter>/<speaker>-<chapter>.trans.txt`` with
``<id>.flac`` beside it, and ``SPEAKERS.TXT`` in the subset's parent folder.

The path may be a subset folder (``LibriSpeech/test-clean``) or the ``LibriSpeech`` folder
itself (every subset under it is loaded). Chapter = episode; the subset goes in ``series``.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import DataError
from ..manifest import AudioRef, Manifest, Utterance, normalise_sex, resolve_audio


class LibriSpeechLoader:
    """A LibriSpeech subset folder, or a folder holding subsets (``LibriSpeech/``)."""

    name = "librispeech"
    priority = 40

    def detects(self, path: Path) -> bool:
        return path.is_dir() and (
            is_librispeech_subset(path)
            or any(is_librispeech_subset(p) for p in path.iterdir() if p.is_dir())
        )

    def load(
        self, path, *, skip_missing: bool = False, keep_unreadable: bool = False, **_unused
    ) -> Manifest:
        return load_librispeech(path, skip_missing=skip_missing, keep_unreadable=keep_unreadable)


def read_speakers_txt(path) -> dict:
    """``SPEAKERS.TXT``: ``ID | SEX | SUBSET | MINUTES | NAME`` -> {speaker: {"sex", "subset"}}."""
    path = Path(path)
    speakers = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip() or line.lstrip().startswith(";"):
                continue
            fields = [f.strip() for f in line.split("|")]
            if len(fields) < 3:
                raise DataError(
                    f"expected 'ID | SEX | SUBSET | ...', got {line.strip()!r}",
                    path=path,
                    line=number,
                )
            speakers[fields[0]] = {"sex": normalise_sex(fields[1]), "subset": fields[2]}
    return speakers


def is_librispeech_subset(path) -> bool:
    path = Path(path)
    return path.is_dir() and any(path.glob("*/*/*.trans.txt"))


def load_librispeech(
    path, *, skip_missing: bool = False, keep_unreadable: bool = False
) -> Manifest:
    root = Path(path)
    if is_librispeech_subset(root):
        subsets = [root]
    else:
        subsets = (
            sorted(p for p in root.iterdir() if is_librispeech_subset(p)) if root.is_dir() else []
        )
    if not subsets:
        raise DataError(
            f"{root}: no <speaker>/<chapter>/*.trans.txt found",
            hint="point at a LibriSpeech subset folder such as LibriSpeech/test-clean",
        )
    utterances = []
    for subset in subsets:
        speakers_file = subset.parent / "SPEAKERS.TXT"
        speakers = read_speakers_txt(speakers_file) if speakers_file.is_file() else {}
        for trans in sorted(subset.glob("*/*/*.trans.txt")):
            speaker, chapter = trans.parent.parent.name, trans.parent.name
            with open(trans, encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    if not line.strip():
                        continue
                    fields = line.split(maxsplit=1)
                    utt = fields[0]
                    if not utt.startswith(f"{speaker}-{chapter}-"):
                        raise DataError(
                            f"utterance {utt!r} does not belong to {speaker}/{chapter}",
                            path=trans,
                            line=number,
                        )
                    utterances.append(
                        Utterance(
                            id=utt,
                            speaker=speaker,
                            text=fields[1].strip() if len(fields) > 1 else "",
                            episode=chapter,
                            series=subset.name,
                            audio=AudioRef(str((trans.parent / f"{utt}.flac").resolve())),
                            sex=speakers.get(speaker, {}).get("sex"),
                        )
                    )
    name = str(root)
    utterances = resolve_audio(utterances, name=name, skip_missing=skip_missing)
    if any(u.audio is not None for u in utterances):
        from ...speech.audio import fill_durations

        fill_durations(utterances, keep_unreadable=keep_unreadable)
    return Manifest(utterances, name=name).validate()
