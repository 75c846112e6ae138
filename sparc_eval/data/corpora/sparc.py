"""SPARC-style release files (Hugging Face dataset exports: parquet or JSON lines).

The SPARC release schema is not public here, so columns are mapped by name. Each manifest
field takes a column name or a list of candidates (the first present wins); pass your own
mapping as a dict or a YAML file. The defaults below cover common spellings::

    speaker: [speaker, speaker_id, spk]
    episode: [episode, episode_id, conversation_id]
    text: [text, transcript, utterance]

``title``, ``description`` and ``category`` (SPARC's topic controls), ``start`` and ``end``,
and any column named in ``extra_columns`` land in ``extra``. Rows keep file order, which the
SPARC probes rely on (utterances in conversation order). Without an id column, ids are
``<episode>-<row number>``.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ...errors import DataError
from ..manifest import (
    AudioRef,
    Manifest,
    Utterance,
    clean_age,
    clean_value,
    normalise_sex,
    read_json_lines,
    resolve_audio,
)
from .registry import json_lines_keys

DEFAULT_COLUMNS = {
    "id": ["id", "utterance_id", "segment_id", "utt_id"],
    "speaker": ["speaker", "speaker_id", "spk", "speaker_name"],
    "episode": ["episode", "episode_id", "conversation_id", "conversation"],
    "series": ["series", "series_id", "podcast", "show", "podcast_id"],
    "text": ["text", "transcript", "utterance", "sentence"],
    "sex": ["sex", "gender"],
    "age": ["age"],
    "accent": ["accent"],
    "audio": ["audio_path", "path", "audio"],
    "title": ["title", "episode_title"],
    "description": ["description", "episode_description"],
    "category": ["category", "categories"],
    "start": ["start", "start_time", "begin"],
    "end": ["end", "end_time", "stop"],
}
REQUIRED = ("speaker", "episode", "text")
_EXTRA_FIELDS = ("title", "description", "category", "start", "end")


class SparcLoader:
    """A SPARC export: a parquet file, a folder holding parquet files, or a JSON-lines file no
    other loader claims (asked last)."""

    name = "sparc"
    priority = 60

    def detects(self, path: Path) -> bool:
        if path.is_dir():
            return any(p.suffix == ".parquet" for p in path.iterdir())
        return path.suffix == ".parquet" or bool(json_lines_keys(path))

    def load(self, path, *, columns=None, skip_missing: bool = False, **_unused) -> Manifest:
        return load_sparc(path, columns=columns, skip_missing=skip_missing)


def read_column_mapping(mapping) -> dict:
    """Defaults updated with a dict or a YAML file of ``field: column`` (or ``field: [columns]``)."""
    columns = {k: list(v) for k, v in DEFAULT_COLUMNS.items()}
    if mapping is None:
        return columns
    if isinstance(mapping, (str, Path)):
        path = Path(mapping)
        try:
            mapping = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as err:
            raise DataError(f"malformed YAML ({err})", path=path) from None
        if not isinstance(mapping, dict):
            raise DataError("expected a mapping of field: column", path=path)
    for key, value in mapping.items():
        if key == "extra_columns":
            columns[key] = list(value)
        else:
            columns[key] = [value] if isinstance(value, str) else list(value)
    return columns


def _read_rows(path: Path):
    """(column names, iterator of row dicts) for parquet, or JSON lines files, or a folder of them."""
    files = (
        sorted(p for p in path.iterdir() if p.suffix in (".parquet", ".jsonl", ".json"))
        if path.is_dir()
        else [path]
    )
    if not files:
        raise DataError(
            f"{path}: no .parquet or .jsonl files", hint="point at a SPARC export file or folder"
        )
    rows = []
    for file in files:
        if file.suffix == ".parquet":
            import pyarrow.parquet as pq

            try:
                table = pq.read_table(file)
            except Exception as err:  # pyarrow raises several types for corrupt files
                raise DataError(f"unreadable parquet ({err})", path=file) from None
            rows.extend((file, i + 1, row) for i, row in enumerate(table.to_pylist()))
        else:
            rows.extend(
                (file, number, record)
                for number, record in read_json_lines(file, hint="the export may be truncated")
            )
    return rows


def load_sparc(path, *, columns=None, skip_missing: bool = False) -> Manifest:
    path = Path(path)
    mapping = read_column_mapping(columns)
    rows = _read_rows(path)
    if not rows:
        raise DataError(f"{path}: no rows")
    present = set(rows[0][2])

    def pick(field):
        return next((c for c in mapping.get(field, []) if c in present), None)

    chosen = {field: pick(field) for field in mapping if field != "extra_columns"}
    missing = [f for f in REQUIRED if chosen.get(f) is None]
    if missing:
        raise DataError(
            f"{path}: no column for {missing} among {sorted(present)}",
            hint="give a column mapping, e.g. columns={'speaker': 'host_name'}",
        )
    extra_columns = [c for c in mapping.get("extra_columns", []) if c in present]
    utterances = []
    for file, number, row in rows:

        def get(field, row=row):
            return clean_value(row.get(chosen[field])) if chosen.get(field) else None

        speaker, episode = get("speaker"), get("episode")
        if speaker is None or episode is None:
            raise DataError("empty speaker or episode", path=file, line=number)
        utt_id = get("id") or f"{episode}-{len(utterances):07d}"
        audio = get("audio")
        if isinstance(audio, dict):  # a Hugging Face Audio column exported as a struct
            audio = audio.get("path")
        extra = {f: get(f) for f in _EXTRA_FIELDS if get(f) is not None}
        extra.update({c: clean_value(row.get(c)) for c in extra_columns})
        utterances.append(
            Utterance(
                id=str(utt_id),
                speaker=str(speaker),
                text=str(get("text") or ""),
                episode=str(episode),
                series=None if get("series") is None else str(get("series")),
                audio=None
                if not audio
                else AudioRef(
                    str((path.parent / str(audio)).resolve())
                    if not Path(str(audio)).is_absolute()
                    else str(audio)
                ),
                sex=normalise_sex(get("sex")),
                age=clean_age(get("age")),
                accent=get("accent"),
                extra={k: v for k, v in extra.items() if v is not None},
            )
        )
    utterances = resolve_audio(utterances, name=str(path), skip_missing=skip_missing)
    return Manifest(utterances, name=str(path)).validate()
