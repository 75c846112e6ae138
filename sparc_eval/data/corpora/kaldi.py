"""Kaldi data directories: ``text``, ``utt2spk``, ``wav.scp``, ``segments``, ``spk2gender``,
``utt2dur``, and the VoicePrivacy ``trials`` / ``enrolls`` lists.

Relative ``wav.scp`` paths resolve against the data directory. With ``segments`` the episode
is the recording id; without it, LibriSpeech-style ids (``<spk>-<chapter>-<n>``) give the
chapter; otherwise the episode is unknown (None).
"""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import DataError
from ..manifest import AudioRef, Manifest, Utterance, normalise_sex, resolve_audio

LIBRISPEECH_ID = re.compile(r"^(?P<spk>[^-]+)-(?P<chapter>[^-]+)-\d+$")
TRIAL_LABELS = {"target": True, "nontarget": False}


class KaldiLoader:
    """A Kaldi data directory: a folder holding ``utt2spk``."""

    name = "kaldi"
    priority = 20

    def detects(self, path: Path) -> bool:
        return path.is_dir() and (path / "utt2spk").is_file()

    def load(
        self, path, *, skip_missing: bool = False, keep_unreadable: bool = False, **_unused
    ) -> Manifest:
        return load_kaldi_dir(path, skip_missing=skip_missing, keep_unreadable=keep_unreadable)


def read_table(path, *, min_fields: int = 2, rest: bool = True) -> dict:
    """``<key> <value...>`` lines into a dict; blank lines skipped, duplicates are an error.

    With ``rest`` the value is the remainder of the line (a transcript); otherwise a list.
    """
    path = Path(path)
    table = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            fields = line.split(maxsplit=1) if rest else line.split()
            if len(fields) < min_fields:
                raise DataError(
                    f"expected at least {min_fields} fields, got {line!r}", path=path, line=number
                )
            key = fields[0]
            if key in table:
                raise DataError(
                    f"duplicate id {key!r}", path=path, line=number, hint="each id may appear once"
                )
            table[key] = (fields[1] if len(fields) > 1 else "") if rest else fields[1:]
    return table


def _float(value, path, key):
    try:
        return float(value)
    except ValueError:
        raise DataError(f"{key!r}: {value!r} is not a number", path=path) from None


def _wav_path(entry: str, base: Path, path: Path, utt: str) -> str:
    """A ``wav.scp`` entry as an absolute path, a relative one resolved against ``base``."""
    if entry.rstrip().endswith("|"):
        raise DataError(
            f"{utt!r}: piped wav.scp commands are not supported ({entry!r})",
            path=path,
            hint="write the audio to files and list their paths",
        )
    target = Path(entry.strip())
    return str(target if target.is_absolute() else (base / target).resolve())


def load_kaldi_dir(
    path,
    *,
    skip_missing: bool = False,
    require_text: bool = False,
    wav_entries: dict | None = None,
    keep_unreadable: bool = False,
    wav_root=None,
) -> Manifest:
    """A Manifest from a Kaldi data directory (``utt2spk`` required, the rest optional).

    ``wav_entries`` (recording or utterance id -> path) stands in for a ``wav.scp`` that the
    layout implies but does not ship (the EdAcc release keeps ``data/<recording>.wav``).
    Relative ``wav.scp`` paths resolve against ``wav_root`` when given (VoicePrivacy 2026's track
    2 writes them relative to the challenge root), else against the directory.
    """
    data_dir = Path(path)
    if not (data_dir / "utt2spk").is_file():
        raise DataError(
            f"{data_dir} is not a Kaldi data dir: no utt2spk",
            hint="point at the folder holding utt2spk",
        )
    tables = _read_kaldi_tables(data_dir, wav_entries)
    tables["wav base"] = data_dir if wav_root is None else Path(wav_root)
    utterances = [
        _kaldi_utterance(utt, spk, tables, data_dir) for utt, spk in tables["utt2spk"].items()
    ]
    utterances = resolve_audio(utterances, name=str(data_dir), skip_missing=skip_missing)
    if any(u.audio is not None and u.duration is None for u in utterances):
        from ...speech.audio import fill_durations

        fill_durations(utterances, keep_unreadable=keep_unreadable)
    return Manifest(utterances, name=str(data_dir)).validate(require_text=require_text)


def _read_kaldi_tables(data_dir: Path, wav_entries: dict | None) -> dict:
    """The tables of ``data_dir`` by file name (an absent optional file is an empty table), with
    ``wav_entries`` in place of ``wav.scp`` when given; ids outside ``utt2spk`` are an error."""
    utt2spk = {u: v for u, v in read_table(data_dir / "utt2spk", rest=False).items()}
    utt2spk = {u: v[0] for u, v in utt2spk.items()}
    text = read_table(data_dir / "text", min_fields=1) if (data_dir / "text").is_file() else {}
    wav = read_table(data_dir / "wav.scp") if (data_dir / "wav.scp").is_file() else {}
    if wav_entries is not None:
        wav = dict(wav_entries)
    segments = (
        read_table(data_dir / "segments", rest=False) if (data_dir / "segments").is_file() else {}
    )
    spk2gender = read_table(data_dir / "spk2gender") if (data_dir / "spk2gender").is_file() else {}
    utt2dur = read_table(data_dir / "utt2dur") if (data_dir / "utt2dur").is_file() else {}

    for name, table in (("text", text), ("utt2dur", utt2dur), ("segments", segments)):
        unknown = [u for u in table if u not in utt2spk]
        if unknown:
            raise DataError(
                f"{len(unknown)} ids not in utt2spk, e.g. {unknown[:3]}", path=data_dir / name
            )
    return {
        "utt2spk": utt2spk,
        "text": text,
        "wav.scp": wav,
        "segments": segments,
        "spk2gender": spk2gender,
        "utt2dur": utt2dur,
    }


def _kaldi_utterance(utt: str, spk: str, tables: dict, data_dir: Path) -> Utterance:
    """Utterance ``utt`` of speaker ``spk`` from the tables of :func:`_read_kaldi_tables`."""
    segments, wav, utt2dur = tables["segments"], tables["wav.scp"], tables["utt2dur"]
    audio, episode, duration = None, None, None
    if utt in segments:
        audio, episode, duration = _segment_audio(utt, segments[utt], tables, data_dir)
    elif utt in wav:
        audio = AudioRef(_wav_path(wav[utt], tables["wav base"], data_dir / "wav.scp", utt))
    elif wav:
        raise DataError(f"{utt!r} has no wav.scp entry", path=data_dir / "wav.scp")
    if episode is None:
        match = LIBRISPEECH_ID.match(utt)
        if match and match.group("spk") == spk:
            episode = match.group("chapter")
    if utt in utt2dur:
        duration = _float(utt2dur[utt].split()[0], data_dir / "utt2dur", utt)
    return Utterance(
        id=utt,
        speaker=spk,
        text=tables["text"].get(utt, "").strip(),
        episode=episode,
        audio=audio,
        duration=duration,
        sex=normalise_sex(tables["spk2gender"].get(spk)),
    )


def _segment_audio(utt: str, segment: list, tables: dict, data_dir: Path) -> tuple:
    """``(audio, episode, duration)`` of ``utt`` from its ``segments`` line: the episode is the
    recording; no audio when there is no ``wav.scp`` at all."""
    wav = tables["wav.scp"]
    reco, start, stop = segment[:3]
    start, stop = (
        _float(start, data_dir / "segments", utt),
        _float(stop, data_dir / "segments", utt),
    )
    audio = None
    if wav:
        if reco not in wav:
            raise DataError(
                f"recording {reco!r} of {utt!r} is not in wav.scp",
                path=data_dir / "segments",
            )
        path = _wav_path(wav[reco], tables["wav base"], data_dir / "wav.scp", reco)
        audio = AudioRef(path, start, stop)
    return audio, reco, stop - start


def read_trials(path, *, known_utterances=None, known_speakers=None) -> list:
    """Kaldi ``trials``: ``<enroll> <test> target|nontarget`` -> [(enroll, test, is_target)].

    Unknown label words, duplicate pairs, and (when given) test ids outside
    ``known_utterances`` or enrollment ids outside ``known_speakers`` raise DataError.
    """
    path = Path(path)
    trials, seen = [], {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 3:
                raise DataError(
                    f"expected '<enroll> <test> target|nontarget', got {line.strip()!r}",
                    path=path,
                    line=number,
                )
            enroll, test, label = fields
            if label not in TRIAL_LABELS:
                raise DataError(
                    f"unknown label {label!r}",
                    path=path,
                    line=number,
                    hint="use target or nontarget",
                )
            if (enroll, test) in seen:
                raise DataError(
                    f"duplicate trial {enroll} {test} (first on line {seen[enroll, test]})",
                    path=path,
                    line=number,
                )
            seen[enroll, test] = number
            if known_utterances is not None and test not in known_utterances:
                raise DataError(
                    f"test utterance {test!r} is not in the corpus", path=path, line=number
                )
            if known_speakers is not None and enroll not in known_speakers:
                raise DataError(
                    f"enrollment speaker {enroll!r} is not in the corpus", path=path, line=number
                )
            trials.append((enroll, test, TRIAL_LABELS[label]))
    return trials


def read_id_list(path) -> list:
    """One id per line (VoicePrivacy ``enrolls``, SpAnE enroll/trial lists); duplicates are an error."""
    path = Path(path)
    ids, seen = [], set()
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            item = line.strip()
            if not item:
                continue
            if item in seen:
                raise DataError(f"duplicate id {item!r}", path=path, line=number)
            seen.add(item)
            ids.append(item)
    return ids
