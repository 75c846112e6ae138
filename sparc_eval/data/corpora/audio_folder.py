"""A folder of audio files, with a table of speakers or with one folder per speaker.

With a table: ``file,speaker[,text,sex,age,accent,episode]`` as CSV (comma, semicolon or tab
separated, whichever the header uses most) or JSON lines, ``file`` relative to the folder. The
table is found at the folder's root under a conventional name (``TABLE_NAMES``), or as the only
other ``*.csv`` / ``*.tsv`` / ``*.jsonl`` there whose header has ``file`` and ``speaker``; or the
path given is the table itself (its folder is the corpus root). Columns are matched without case;
``gender`` stands for ``sex``; any other column goes to ``extra``. The episode is the ``episode``
column, else the file's folder (relative to the root) when files are grouped in folders, else None.
Audio files the table does not list are left out, with one warning counting them.

Without a table: each file's speaker is its parent folder's name (``alice/a1.wav``); files at the
top of the folder have no speaker, which is an error saying what to add. Episodes are unknown.

Utterance ids are the file's path relative to the root without its extension, ``/`` read as
``-`` and whitespace as ``_`` (``alice/day 1/a1.wav`` -> ``alice-day_1-a1``). Durations come from
the audio headers; hidden files and folders (``.DS_Store``, ``._a1.wav``) are ignored.
"""

from __future__ import annotations

import csv
import os
import re
import warnings
from dataclasses import replace
from pathlib import Path

from ...errors import DataError
from ..manifest import (
    AudioRef,
    Manifest,
    Utterance,
    clean_age,
    clean_value,
    normalise_sex,
    read_json_lines,
)
from .registry import json_lines_keys

AUDIO_SUFFIXES = frozenset(
    ".wav .flac .ogg .oga .opus .mp3 .aif .aiff .aifc .au .snd .caf .w64 .rf64 .sph .voc".split()
)
TABLE_NAMES = ("metadata.csv", "speakers.csv", "metadata.jsonl", "speakers.jsonl")
TABLE_SUFFIXES = (".csv", ".tsv", ".jsonl")
REQUIRED_COLUMNS = ("file", "speaker")
COLUMN_ALIASES = {"gender": "sex"}
KNOWN_COLUMNS = ("file", "speaker", "text", "episode", "sex", "age", "accent")
TABLE_HINT = "columns file,speaker[,text,sex,age,accent], file relative to the folder"


class AudioFolderLoader:
    """A folder of audio files with a table (or a table file), or with a folder per speaker."""

    name = "audio_folder"
    # After every specific folder layout (a LibriSpeech tree or Kaldi dir holds audio too) and
    # SpAnE; before SPARC, which would claim a JSON-lines table as an export.
    priority = 55

    def detects(self, path: Path) -> bool:
        if not path.is_dir():
            return is_table(path)
        if any(p.suffix == ".parquet" for p in path.iterdir()):
            return False  # a SPARC export, whatever audio lies beside it
        return bool(tables_at(path)) or next(_walk_audio(path), None) is not None

    def load(
        self,
        path,
        *,
        table=None,
        skip_missing: bool = False,
        keep_unreadable: bool = False,
        **_unused,
    ) -> Manifest:
        return load_audio_folder(
            path, table=table, skip_missing=skip_missing, keep_unreadable=keep_unreadable
        )


def load_audio_folder(
    path, *, table=None, skip_missing: bool = False, keep_unreadable: bool = False
) -> Manifest:
    """The corpus in folder PATH (or whose table PATH is); ``table`` names the table explicitly."""
    folder, table = _folder_and_table(Path(path), table)
    audio = audio_files(folder)
    if table is None:
        utterances = _from_speaker_folders(folder, audio)
    else:
        utterances = _from_table(folder, table, audio, skip_missing=skip_missing)
    if any(u.audio is not None for u in utterances):
        from ...speech.audio import fill_durations

        fill_durations(utterances, keep_unreadable=keep_unreadable)
    return Manifest(utterances, name=str(folder)).validate()


# --- finding the table and the audio ---------------------------------------------------------


def is_table(path: Path) -> bool:
    """A CSV/TSV/JSON-lines file named like a table, or whose header has file and speaker."""
    if path.suffix not in TABLE_SUFFIXES or not path.is_file():
        return False
    return path.name in TABLE_NAMES or set(REQUIRED_COLUMNS) <= _header(path)


def tables_at(folder: Path) -> list:
    """The tables at the top of FOLDER: the conventional names if any are there, else the other
    table files whose header has file and speaker."""
    named = [folder / n for n in TABLE_NAMES if (folder / n).is_file()]
    if named:
        return named
    candidates = sorted(p for p in folder.iterdir() if p.suffix in TABLE_SUFFIXES)
    return [p for p in candidates if is_table(p)]


def _folder_and_table(path: Path, table) -> tuple:
    if not path.exists():
        raise DataError(f"{path} does not exist")
    if table is not None:
        if not Path(table).is_file():
            raise DataError(f"table {table} does not exist", hint="give the path of a CSV or JSONL")
        return (path if path.is_dir() else path.parent), Path(table)
    if not path.is_dir():
        return path.parent, path
    found = tables_at(path)
    if len(found) > 1:
        raise DataError(
            f"{path}: more than one table ({', '.join(p.name for p in found)})",
            hint="point at the table file itself, or keep one table in the folder",
        )
    return path, (found[0] if found else None)


def audio_files(folder: Path) -> dict:
    """{path relative to FOLDER (posix): absolute path} of every audio file under FOLDER."""
    return {p.relative_to(folder).as_posix(): p for p in _walk_audio(folder)}


def _walk_audio(folder: Path):
    """Audio files under FOLDER in sorted order, following folder links once each."""
    seen = set()
    for top, dirs, files in os.walk(folder, followlinks=True):
        real = os.path.realpath(top)
        if real in seen:  # a link back up the tree
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith(".") and Path(name).suffix.lower() in AUDIO_SUFFIXES:
                yield Path(top) / name


def utterance_id(relative: str) -> str:
    """``alice/day 1/a1.wav`` -> ``alice-day_1-a1``: unique per file, and safe in Kaldi-style
    whitespace-separated lists (score files, trials)."""
    stem = relative[: -len(Path(relative).suffix)] if Path(relative).suffix else relative
    return re.sub(r"\s+", "_", stem.replace("/", "-"))


# --- speakers from folder names ---------------------------------------------------------------


def _from_speaker_folders(folder: Path, audio: dict) -> list:
    if not audio:
        raise DataError(
            f"{folder}: no audio files and no table",
            hint=f"audio files end in {', '.join(sorted(AUDIO_SUFFIXES))}",
        )
    at_top = [rel for rel in audio if "/" not in rel]
    if at_top:
        raise DataError(
            f"{folder}: {len(at_top)} audio files lie at the top of the folder (e.g. {at_top[0]}) "
            "and there is no table, so their speakers are unknown",
            hint=f"add metadata.csv with {TABLE_HINT}; or put each speaker's files in a folder "
            "named after the speaker",
        )
    utterances = [
        Utterance(
            id=utterance_id(rel),
            speaker=path.parent.name,
            audio=AudioRef(str(path.resolve())),
        )
        for rel, path in audio.items()
    ]
    _check_unique_ids([(u.id, rel) for u, rel in zip(utterances, audio)], where=folder)
    return utterances


# --- speakers from a table --------------------------------------------------------------------


def _from_table(folder: Path, table: Path, audio: dict, *, skip_missing: bool) -> list:
    rows = read_table(table)
    if not rows:
        raise DataError("the table has no rows", path=table)
    entries = [(line, _relative_file(row, line, folder, table), row) for line, row in rows]
    _check_unique_ids(
        [(utterance_id(rel), f"line {line} ({rel})") for line, rel, _ in entries], where=table
    )
    _warn_unlisted(folder, table, audio, {rel for _, rel, _ in entries})
    utterances = [_table_utterance(folder, rel, row) for _, rel, row in entries]
    return _without_missing(utterances, entries, folder, table, skip_missing=skip_missing)


def read_table(path: Path) -> list:
    """[(line number, {column: value})] from a CSV/TSV or JSON-lines table, columns lower-cased
    and aliased; DataError when file or speaker is not among the columns."""
    rows = _json_rows(path) if path.suffix == ".jsonl" else _csv_rows(path)
    columns = set().union(*(row for _, row in rows)) if rows else _header(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise DataError(
            f"no {' or '.join(missing)} column; the table has {sorted(columns) or 'no columns'}",
            path=path,
            hint=TABLE_HINT,
        )
    return rows


def _column(name) -> str:
    name = str(name).strip().lower()
    return COLUMN_ALIASES.get(name, name)


def _csv_rows(path: Path) -> list:
    with open(path, encoding="utf-8-sig", newline="") as handle:  # -sig: spreadsheets write a BOM
        reader = csv.reader(handle, delimiter=_delimiter(handle.readline()))
        handle.seek(0)
        header = [_column(c) for c in next(reader, [])]
        rows = []
        for fields in reader:
            if any(f.strip() for f in fields):
                rows.append((reader.line_num, dict(zip(header, fields))))
    return rows


def _delimiter(header_line: str) -> str:
    return max((",", ";", "\t"), key=header_line.count)


def _json_rows(path: Path) -> list:
    rows = []
    for line, record in read_json_lines(path, hint="the table may be truncated"):
        if not isinstance(record, dict):
            raise DataError("expected a JSON object", path=path, line=line)
        rows.append((line, {_column(k): v for k, v in record.items()}))
    return rows


def _header(path: Path) -> set:
    """The column names of a table file; empty when it cannot be read as one."""
    if path.suffix == ".jsonl":
        return {_column(k) for k in json_lines_keys(path)}
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            line = handle.readline()
    except (OSError, UnicodeDecodeError):
        return set()
    return {_column(c) for c in next(csv.reader([line], delimiter=_delimiter(line)), [])}


def _relative_file(row: dict, line: int, folder: Path, table: Path) -> str:
    """The row's file as a normalised posix path relative to FOLDER."""
    name, speaker = clean_value(row.get("file")), clean_value(row.get("speaker"))
    if name is None or speaker is None:
        raise DataError("empty file or speaker", path=table, line=line, hint=TABLE_HINT)
    relative = os.path.normpath(os.path.relpath(folder / str(name), folder)).replace(os.sep, "/")
    if relative.startswith("../") or relative == "..":
        raise DataError(
            f"{name} lies outside {folder}",
            path=table,
            line=line,
            hint="ids come from paths relative to the folder; move the file into it",
        )
    return relative


def _table_utterance(folder: Path, relative: str, row: dict) -> Utterance:
    parent = Path(relative).parent.as_posix()
    episode = clean_value(row.get("episode"))
    if episode is None and parent != ".":
        episode = parent  # files grouped in folders: a folder is a recording session
    text = clean_value(row.get("text"))
    return Utterance(
        id=utterance_id(relative),
        speaker=str(clean_value(row["speaker"])),
        text="" if text is None else str(text),
        episode=None if episode is None else str(episode),
        audio=AudioRef(str((folder / relative).resolve())),
        sex=normalise_sex(row.get("sex")),
        age=clean_age(row.get("age")),
        accent=_text_or_none(row.get("accent")),
        extra=_extra_columns(row),
    )


def _text_or_none(value):
    value = clean_value(value)
    return None if value is None else str(value)


def _extra_columns(row: dict) -> dict:
    cleaned = {k: clean_value(v) for k, v in row.items() if k and k not in KNOWN_COLUMNS}
    return {k: v for k, v in cleaned.items() if v is not None}


def _warn_unlisted(folder: Path, table: Path, audio: dict, listed: set) -> None:
    unlisted = [rel for rel in audio if rel not in listed]
    if unlisted:
        warnings.warn(
            f"{folder}: {len(unlisted)} audio files are not in {table.name} and are left out, "
            f"e.g. {unlisted[0]}",
            stacklevel=4,
        )


def _without_missing(
    utterances: list, entries: list, folder: Path, table: Path, *, skip_missing: bool
) -> list:
    """The text-only rule of every loader, with errors naming the table's line."""
    missing = [i for i, u in enumerate(utterances) if not Path(u.audio.path).is_file()]
    if not missing:
        return utterances
    if len(missing) == len(utterances):
        warnings.warn(
            f"{table}: none of the {len(missing)} listed audio files exist under {folder}; "
            "loading as text-only",
            stacklevel=4,
        )
        return [replace(u, audio=None) for u in utterances]
    if skip_missing:
        warnings.warn(
            f"{table}: skipped {len(missing)} utterances whose audio is missing", stacklevel=4
        )
        gone = set(missing)
        return [u for i, u in enumerate(utterances) if i not in gone]
    line, relative, _ = entries[missing[0]]
    raise DataError(
        f"{relative} does not exist ({len(missing)} of {len(utterances)} listed files are missing)",
        path=table,
        line=line,
        hint=f"fix the path (relative to {folder}), or pass skip_missing=True to drop those rows",
    )


def _check_unique_ids(pairs, *, where) -> None:
    """PAIRS are (id, what gave it); two sources giving one id are named together."""
    first = {}
    for utt_id, source in pairs:
        if utt_id in first:
            raise DataError(
                f"{first[utt_id]} and {source} both give utterance id {utt_id!r}",
                path=where,
                hint="each file may be listed once; ids are paths without extension, '/' read "
                "as '-'",
            )
        first[utt_id] = source
