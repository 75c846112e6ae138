"""Utterance manifests: the typed record every stage reads and writes (GUIDE section 4).

One JSON object per line::

    {"id": "1089-134686-0000", "speaker": "1089", "text": "HE HOPED ...", "episode": "134686",
     "series": null, "audio": {"path": "/abs/1089-134686-0000.flac", "start": null, "stop": null},
     "duration": 10.435, "sex": "M", "age": null, "accent": null, "extra": {}}

``audio`` is null for text-only corpora. Paths are absolute once a loader has resolved them.
"""

from __future__ import annotations

import csv
import json
import math
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional

from .atomic import atomic_open
from .errors import DataError

FIELDS = ("id", "speaker", "text", "episode", "series", "audio", "duration", "sex", "age", "accent", "extra")

SEX_WORDS = {"f": "F", "female": "F", "woman": "F", "m": "M", "male": "M", "man": "M"}
MISSING_WORDS = frozenset({"", "nan", "na", "n/a", "null", "none"})


def normalise_sex(value) -> Optional[str]:
    """``F``/``M`` from f, m, Female, Male (any case); anything else (NaN, "Demiboy") is None."""
    if value is None or isinstance(value, float):
        return None
    return SEX_WORDS.get(str(value).strip().lower())


def clean_value(value):
    """Missing-value markers (None, NaN, "", "nan", "n/a", "null", ...) become None; strings are stripped."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str):
        value = value.strip()
        if value.lower() in MISSING_WORDS:
            return None
    return value


def clean_age(value) -> Optional[float]:
    value = clean_value(value)
    if value is None:
        return None
    try:
        age = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(age) else age


def read_json_lines(path, *, hint: str = "the file may be truncated; regenerate it or delete the line"):
    """Yield (line number, decoded value) for each non-blank line; DataError names a bad line."""
    path = Path(path)
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"not valid JSON ({err.msg})", path=path, line=number, hint=hint) from None


@dataclass
class AudioRef:
    path: str
    start: Optional[float] = None
    stop: Optional[float] = None


@dataclass
class Utterance:
    id: str
    speaker: str
    text: str = ""
    episode: Optional[str] = None
    series: Optional[str] = None
    audio: Optional[AudioRef] = None
    duration: Optional[float] = None
    sex: Optional[str] = None
    age: Optional[float] = None
    accent: Optional[str] = None
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        record = asdict(self)
        record["audio"] = asdict(self.audio) if self.audio is not None else None
        return record

    @classmethod
    def from_dict(cls, record: dict, *, where: str = "record") -> "Utterance":
        if not isinstance(record, dict):
            raise DataError(f"{where}: expected a JSON object, got {type(record).__name__}")
        unknown = set(record) - set(FIELDS)
        if unknown:
            raise DataError(f"{where}: unknown fields {sorted(unknown)}; put other attributes under 'extra'")
        for key in ("id", "speaker"):
            if record.get(key) in (None, ""):
                raise DataError(f"{where}: missing '{key}'")
        audio = record.get("audio")
        if audio is not None:
            if isinstance(audio, str):
                audio = {"path": audio}
            if not isinstance(audio, dict) or "path" not in audio:
                raise DataError(f"{where}: 'audio' must be null or {{'path': ..., 'start': ..., 'stop': ...}}")
            audio = AudioRef(str(audio["path"]), audio.get("start"), audio.get("stop"))
        duration = record.get("duration")
        return cls(
            id=str(record["id"]),
            speaker=str(record["speaker"]),
            text=record.get("text") or "",
            episode=None if record.get("episode") is None else str(record["episode"]),
            series=None if record.get("series") is None else str(record["series"]),
            audio=audio,
            duration=None if duration is None else float(duration),
            sex=normalise_sex(record.get("sex")),
            age=clean_age(record.get("age")),
            accent=clean_value(record.get("accent")),
            extra=dict(record.get("extra") or {}),
        )


class Manifest:
    """An ordered list of utterances with the lookups the stages need."""

    def __init__(self, utterances: Iterable[Utterance] = (), *, name: str = "corpus", read_passages: bool = False):
        self.utterances = list(utterances)
        self.name = name
        self.read_passages = bool(read_passages)  # set by loaders of corpora with read passages (EdAcc)

    def __len__(self) -> int:
        return len(self.utterances)

    def __iter__(self) -> Iterator[Utterance]:
        return iter(self.utterances)

    def __getitem__(self, index):
        return self.utterances[index]

    # lookups -----------------------------------------------------------------
    def by_id(self) -> dict:
        return {u.id: u for u in self.utterances}

    def speakers(self) -> list:
        return sorted({u.speaker for u in self.utterances})

    def episodes(self) -> list:
        return sorted({u.episode for u in self.utterances if u.episode is not None})

    def utt2spk(self) -> dict:
        return {u.id: u.speaker for u in self.utterances}

    @property
    def has_audio(self) -> bool:
        return any(u.audio is not None for u in self.utterances)

    def hours(self) -> Optional[float]:
        """Total duration in hours, or None for a text-only corpus (hours unknown)."""
        if not self.has_audio or any(u.duration is None for u in self.utterances):
            return None
        return sum(u.duration for u in self.utterances) / 3600.0

    def speaker_attributes(self) -> dict:
        """speaker -> {"sex", "age", "accent", **extra}: the first non-null value seen for each."""
        table: dict = {}
        for u in self.utterances:
            row = table.setdefault(u.speaker, {"speaker": u.speaker, "sex": None, "age": None, "accent": None})
            for key, value in (("sex", u.sex), ("age", u.age), ("accent", u.accent), *u.extra.items()):
                if row.get(key) is None and value is not None:
                    row[key] = value
        return table

    def subset(self, keep) -> "Manifest":
        """The utterances for which ``keep(utt)`` is true, in order."""
        return Manifest([u for u in self.utterances if keep(u)], name=self.name, read_passages=self.read_passages)

    # checks ------------------------------------------------------------------
    def validate(self, *, require_text: bool = False) -> "Manifest":
        """Raise DataError on duplicate ids, empty speakers, or empty text where text is required.

        Text may be empty only in audio-only corpora: when ``require_text`` is set, or the corpus
        has no audio at all, every utterance needs a transcript.
        """
        counts = Counter(u.id for u in self.utterances)
        dupes = [i for i, n in counts.items() if n > 1]
        if dupes:
            raise DataError(
                f"{self.name}: {len(dupes)} duplicate utterance id(s), e.g. {dupes[:3]}",
                hint="ids must be unique; rename or drop the repeats",
            )
        text_needed = require_text or not self.has_audio
        for u in self.utterances:
            if not u.speaker:
                raise DataError(f"{self.name}: utterance {u.id!r} has no speaker")
            if text_needed and not u.text.strip():
                raise DataError(
                    f"{self.name}: utterance {u.id!r} has an empty transcript",
                    hint="a text-only corpus needs text for every utterance; drop it or add its transcript",
                )
            if u.audio is not None and u.audio.start is not None and u.audio.stop is not None:
                if u.audio.stop <= u.audio.start:
                    raise DataError(f"{self.name}: utterance {u.id!r} has a segment stop <= start")
        return self

    # files -------------------------------------------------------------------
    def write_jsonl(self, path) -> None:
        with atomic_open(path, "w", encoding="utf-8") as handle:
            for u in self.utterances:
                handle.write(json.dumps(u.to_dict(), ensure_ascii=False) + "\n")

    @classmethod
    def read_jsonl(cls, path, *, validate: bool = True) -> "Manifest":
        path = Path(path)
        utterances = [Utterance.from_dict(record, where=f"{path}, line {number}")
                      for number, record in read_json_lines(path)]
        manifest = cls(utterances, name=str(path))
        return manifest.validate() if validate else manifest

    def to_speechbrain_csv(self, path) -> None:
        """A CSV for ``speechbrain.dataio.dataset.DynamicItemDataset.from_csv``.

        Columns: ID, duration, wav, start, stop, spk_id, text, episode. ``wav`` is an absolute
        path (or empty for text-only corpora); start/stop are seconds, empty for whole files.
        """
        with atomic_open(path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["ID", "duration", "wav", "start", "stop", "spk_id", "text", "episode"])
            for u in self.utterances:
                audio = u.audio
                writer.writerow([
                    u.id,
                    "" if u.duration is None else f"{u.duration:.4f}",
                    "" if audio is None else audio.path,
                    "" if audio is None or audio.start is None else audio.start,
                    "" if audio is None or audio.stop is None else audio.stop,
                    u.speaker,
                    u.text,
                    u.episode or "",
                ])


def resolve_audio(utterances: list, *, name: str, skip_missing: bool = False) -> list:
    """Apply the text-only rule to utterances whose ``audio.path`` is already absolute.

    - no listed file exists: the corpus is text-only (audio set to None), with one warning;
    - some exist and some do not: DataError naming the missing ones, unless ``skip_missing``,
      which drops them and warns with the count.
    """
    listed = [u for u in utterances if u.audio is not None]
    if not listed:
        return utterances
    missing = [u for u in listed if not Path(u.audio.path).is_file()]
    if not missing:
        return utterances
    if len(missing) == len(listed):
        warnings.warn(f"{name}: none of the {len(listed)} listed audio files exist; loading as text-only",
                      stacklevel=3)
        for u in utterances:
            u.audio = None
        return utterances
    if skip_missing:
        warnings.warn(f"{name}: skipped {len(missing)} utterances whose audio is missing", stacklevel=3)
        gone = {id(u) for u in missing}
        return [u for u in utterances if id(u) not in gone]
    shown = ", ".join(f"{u.id} ({u.audio.path})" for u in missing[:3])
    raise DataError(
        f"{name}: {len(missing)} of {len(listed)} audio files are missing, e.g. {shown}",
        hint="restore them, or pass skip_missing=True to drop those utterances",
    )
