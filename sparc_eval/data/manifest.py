"""Utterance manifests: the typed record every stage reads and writes (:doc:`/contracts`).

One JSON object per line::

    {"id": "1089-134686-0000", "speaker": "1089", "text": "HE HOPED ...", "episode": "134686",
     "series": null, "audio": {"path": "/abs/1089-134686-0000.flac", "start": null, "stop": null},
     "duration": 10.435, "sex": "M", "age": null, "accent": null, "extra": {}}

``audio`` is null for text-only corpora. Paths are absolute once a loader has resolved them.

A ``Manifest`` is a value: its utterances are a tuple, its lookups (``by_id``, ``utt2spk``,
``speakers``, ``episodes``, ``speaker_attributes``) are built once on first use, and its
transforms (``subset``, ``replace``) return new manifests. Change an utterance with
``dataclasses.replace`` and build a new manifest; never edit one that is in a manifest.

Speaker attributes (sex, age, accent and every ``extra`` key) are stored per utterance, so a
speaker's utterances may disagree. Rule: a speaker's value is the most frequent non-null value
among that speaker's utterances, ties going to the value seen first (in manifest order).
``Manifest.attribute_conflicts()`` lists every disagreement and ``speaker_attributes()`` warns
with ``AttributeConflictWarning``. Extra keys in ``UTTERANCE_EXTRA`` describe the utterance or
its episode (an anonymizer's transcript, an episode title), so they are resolved by the same
rule but never reported.
"""

from __future__ import annotations

import csv
import json
import math
import sys
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from itertools import groupby
from pathlib import Path
from types import MappingProxyType
from typing import Iterable, Iterator, Mapping, NamedTuple, Optional

from ..atomic import atomic_open
from ..errors import DataError

FIELDS = (
    "id",
    "speaker",
    "text",
    "episode",
    "series",
    "audio",
    "duration",
    "sex",
    "age",
    "accent",
    "extra",
    "language",
)

SEX_WORDS = {"f": "F", "female": "F", "woman": "F", "m": "M", "male": "M", "man": "M"}
MISSING_WORDS = frozenset({"", "nan", "na", "n/a", "null", "none"})
CORE_ATTRIBUTES = ("sex", "age", "accent")
# extra keys that vary per utterance or episode by design: never reported as speaker conflicts
UTTERANCE_EXTRA = frozenset(
    {
        "asr_text",
        "anonymizer",
        "keeps_words",
        "anonymization_key",
        "mcadams_alpha",
        "scripted",
        "title",
        "description",
        "category",
        "emotion",  # an utterance's emotion label (the emotion utility's UAR), never a speaker's
    }
)
RESOLUTION_RULE = "kept each speaker's most frequent value (ties: the first seen)"


class AttributeConflictWarning(UserWarning):
    """A speaker's utterances disagree on an attribute (resolved by RESOLUTION_RULE)."""


class AttributeConflict(NamedTuple):
    """One speaker's disagreeing attribute: ``counts`` is ((value, n), ...) in first-seen order."""

    speaker: str
    attribute: str
    counts: tuple
    resolved: object  # the value speaker_attributes() keeps


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


def read_json_lines(
    path, *, hint: str = "the file may be truncated; regenerate it or delete the line"
):
    """Yield (line number, decoded value) for each non-blank line; DataError names a bad line."""
    path = Path(path)
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(
                    f"not valid JSON ({err.msg})", path=path, line=number, hint=hint
                ) from None


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
    # ISO 639-1 (sparc_eval.data.languages); None: English, and no key in the manifest line
    language: Optional[str] = None

    def to_dict(self) -> dict:
        record = asdict(self)
        record["audio"] = asdict(self.audio) if self.audio is not None else None
        if self.language is None:
            del record["language"]  # English corpora keep the lines (and digests) they had
        return record

    @classmethod
    def from_dict(cls, record: dict, *, where: str = "record") -> "Utterance":
        if not isinstance(record, dict):
            raise DataError(f"{where}: expected a JSON object, got {type(record).__name__}")
        unknown = set(record) - set(FIELDS)
        if unknown:
            raise DataError(
                f"{where}: unknown fields {sorted(unknown)}; put other attributes under 'extra'"
            )
        for key in ("id", "speaker"):
            if record.get(key) in (None, ""):
                raise DataError(f"{where}: missing '{key}'")
        audio = record.get("audio")
        if audio is not None:
            if isinstance(audio, str):
                audio = {"path": audio}
            if not isinstance(audio, dict) or "path" not in audio:
                raise DataError(
                    f"{where}: 'audio' must be null or {{'path': ..., 'start': ..., 'stop': ...}}"
                )
            audio = AudioRef(str(audio["path"]), audio.get("start"), audio.get("stop"))
        duration = record.get("duration")
        accent = clean_value(record.get("accent"))
        if not isinstance(record.get("extra") or {}, dict):
            raise DataError(f"{where}: 'extra' must be null or a JSON object of attributes")
        return cls(
            id=str(record["id"]),
            speaker=_shared(record["speaker"]),
            text=record.get("text") or "",
            episode=None if record.get("episode") is None else _shared(record["episode"]),
            series=None if record.get("series") is None else _shared(record["series"]),
            audio=audio,
            duration=None if duration is None else float(duration),
            sex=normalise_sex(record.get("sex")),
            age=clean_age(record.get("age")),
            accent=accent if not isinstance(accent, str) else sys.intern(accent),
            extra=_shared_extra(record.get("extra")),
            language=_language(record.get("language"), where),
        )


def _language(value, where: str) -> Optional[str]:
    from .languages import ENGLISH, language_code

    if value is None:
        return None
    try:
        code = language_code(value)
    except DataError as err:
        raise DataError(f"{where}: {err}") from None
    return None if code in (None, ENGLISH) else sys.intern(code)  # English: as if unsaid


def _shared(value) -> str:
    """One string object per distinct speaker, episode or series (a corpus of 10^6 utterances
    repeats each thousands of times: a few hundred MB held once each)."""
    return sys.intern(str(value))


def _shared_extra(extra: Optional[dict]) -> dict:
    """``extra``'s strings held once each, as ``_shared`` holds ids (a podcast export repeats an
    episode's title, description and category on each of its utterances); an utterance's own
    transcript (``asr_text``) is left as read."""
    return {
        key: sys.intern(value) if type(value) is str and key != "asr_text" else value
        for key, value in (extra or {}).items()
    }


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _key(value):
    """A hashable stand-in for counting equal values (extra values may be lists or dicts)."""
    try:
        hash(value)
        return value
    except TypeError:
        return ("json", json.dumps(value, sort_keys=True, default=str))


def _attribute_items(u: Utterance) -> tuple:
    return (("sex", u.sex), ("age", u.age), ("accent", u.accent), *u.extra.items())


def _resolve_speakers(utterances) -> tuple:
    """(speaker -> row, conflicts) by the module's rule: the most frequent non-null value, ties
    to the first seen. Rows keep sex/age/accent always and an extra key once it has a value."""
    seen: dict = {}  # speaker -> attribute -> value key -> [value, count], in first-seen order
    # a speaker's utterances come in runs with the same values: each run is counted at once
    for (speaker, items), run in groupby((u.speaker, _attribute_items(u)) for u in utterances):
        attrs = seen.setdefault(speaker, {key: {} for key in CORE_ATTRIBUTES})
        n = sum(1 for _ in run)
        for key, value in items:
            if not _missing(value):
                attrs.setdefault(key, {}).setdefault(_key(value), [value, 0])[1] += n
    rows, conflicts = {}, []
    for speaker, attrs in seen.items():
        row = rows[speaker] = {"speaker": speaker}
        for key, values in attrs.items():
            # max() keeps the first of equal counts: dicts iterate in first-seen order
            row[key] = max(values.values(), key=lambda slot: slot[1])[0] if values else None
            if len(values) > 1 and key not in UTTERANCE_EXTRA:
                counts = tuple((value, n) for value, n in values.values())
                conflicts.append(AttributeConflict(speaker, key, counts, row[key]))
    return rows, conflicts


def word_counts(utterances) -> tuple:
    """Each utterance's number of words: a Manifest's counts (counted once per manifest: the shared-
    text step and every trial builder read them), or counted here for any other iterable."""
    if isinstance(utterances, Manifest):
        return utterances.word_counts()
    return _count_words(utterances)


def _count_words(utterances) -> tuple:
    return tuple(len(u.text.split()) if u.text else 0 for u in utterances)


def _conflict_message(name: str, conflicts: list, shown: int = 3) -> str:
    def one(c):
        return f"speaker {c.speaker!r} {c.attribute}: " + " vs ".join(
            f"{v!r} ({n})" for v, n in c.counts
        )

    more = f"; and {len(conflicts) - shown} more" if len(conflicts) > shown else ""
    return (
        f"{name}: {len(conflicts)} speaker attribute conflict(s) between utterances, "
        f"{'; '.join(one(c) for c in conflicts[:shown])}{more}; {RESOLUTION_RULE} "
        f"(Manifest.attribute_conflicts() lists them all)"
    )


class Manifest:
    """An ordered, unchanging sequence of utterances with lookups built once, on first use.

    ``utterances`` is a tuple; transforms return new manifests. ``name`` and ``read_passages``
    are labels, not indexed, so reassigning them is harmless.
    """

    def __init__(
        self,
        utterances: Iterable[Utterance] = (),
        *,
        name: str = "corpus",
        read_passages: bool = False,
    ):
        self._utterances = tuple(utterances)
        self.name = name
        self.read_passages = bool(
            read_passages
        )  # set by loaders of corpora with read passages (EdAcc)

    @property
    def utterances(self) -> tuple:
        # read-only: a list edited in place would leave the cached lookups stale
        return self._utterances

    def __len__(self) -> int:
        return len(self._utterances)

    def __iter__(self) -> Iterator[Utterance]:
        return iter(self._utterances)

    def __getitem__(self, index):
        return self._utterances[index]

    def __getstate__(self) -> dict:
        # pickle/deepcopy without the cached lookups: they rebuild on use, and a mappingproxy won't pickle
        cached = {
            k for k in vars(self) if isinstance(getattr(type(self), k, None), cached_property)
        }
        return {k: v for k, v in vars(self).items() if k not in cached}

    # lookups (each cached on first use: the utterance tuple never changes) ----------------
    @cached_property
    def _by_id(self) -> Mapping:
        return MappingProxyType({u.id: u for u in self._utterances})

    @cached_property
    def _utt2spk(self) -> dict:
        return {u.id: u.speaker for u in self._utterances}

    @cached_property
    def _speakers(self) -> tuple:
        return tuple(sorted({u.speaker for u in self._utterances}))

    @cached_property
    def _episodes(self) -> tuple:
        return tuple(sorted({u.episode for u in self._utterances if u.episode is not None}))

    @cached_property
    def _speaker_table(self) -> tuple:
        return _resolve_speakers(self._utterances)

    @cached_property
    def _word_counts(self) -> tuple:
        return _count_words(self._utterances)

    def by_id(self) -> Mapping:
        """id -> Utterance, built once: the same read-only mapping on every call."""
        return self._by_id

    def get(self, utt_id: str, default=None) -> Optional[Utterance]:
        return self._by_id.get(utt_id, default)

    def speakers(self) -> list:
        return list(self._speakers)  # a fresh list: callers may sort or extend it

    def episodes(self) -> list:
        return list(self._episodes)

    def utt2spk(self) -> dict:
        return dict(self._utt2spk)  # a copy (cheap): callers may edit the dict they get

    def word_counts(self) -> tuple:
        """Each utterance's number of words (its text split at whitespace), in manifest order."""
        return self._word_counts

    @cached_property
    def has_audio(self) -> bool:
        return any(u.audio is not None for u in self._utterances)

    @cached_property
    def language(self) -> str:
        """The corpus's one language (ISO 639-1; English when no utterance says), or a DataError
        when its utterances are spoken in several (:mod:`sparc_eval.data.languages`)."""
        from .languages import corpus_language

        return corpus_language((u.language for u in self._utterances), where=self.name or "corpus")

    def with_language(self, language) -> "Manifest":
        """A copy whose utterances all say ``language`` (the ``--language`` override; None: as read)."""
        from dataclasses import replace

        from .languages import ENGLISH, language_code

        code = language_code(language)
        if code is None:
            return self
        said = None if code == ENGLISH else code  # English is stored as unsaid: the same lines
        return self.replace([replace(u, language=said) for u in self._utterances])

    def hours(self) -> Optional[float]:
        """Total duration in hours, or None for a text-only corpus (hours unknown)."""
        if not self.has_audio or any(u.duration is None for u in self._utterances):
            return None
        return sum(u.duration for u in self._utterances) / 3600.0

    def speaker_attributes(self, *, warn: bool = True) -> dict:
        """speaker -> ``{"speaker", "sex", "age", "accent", **extra}``.

        Where a speaker's utterances disagree, the value is the most frequent non-null one
        among that speaker's utterances, ties going to the first seen; unless ``warn`` is off,
        one AttributeConflictWarning names how many disagreements there are and the first few.
        """
        rows, conflicts = self._speaker_table
        if conflicts and warn:
            warnings.warn(
                _conflict_message(self.name, conflicts), AttributeConflictWarning, stacklevel=2
            )
        return {speaker: dict(row) for speaker, row in rows.items()}  # copies: the table is cached

    def attribute_conflicts(self) -> list:
        """Every (speaker, attribute) whose utterances hold different non-null values, as
        AttributeConflict(speaker, attribute, ((value, count), ...), resolved), in manifest order."""
        return list(self._speaker_table[1])

    # transforms (new manifests; this one is left as it is) -------------------------------
    def replace(self, utterances: Optional[Iterable[Utterance]] = None, **labels) -> "Manifest":
        """A new manifest of ``utterances`` (default: these), keeping ``name`` and
        ``read_passages`` unless given in ``labels``."""
        labels = {"name": self.name, "read_passages": self.read_passages, **labels}
        return type(self)(self._utterances if utterances is None else utterances, **labels)

    def content_digest(self, digests=None) -> str:
        """What a model trained on these utterances learned from: ids, speakers, words (and an
        anonymizer's own transcript), segments, durations, and the audio: original audio by its
        file's bytes (``digests``: a :class:`sparc_eval.digest.FileDigests`, whose memo makes a
        warm run cost one stat per file), audio made by sparc-eval's anonymizer runner by the key
        of what made it (its input's bytes and the anonymizer's settings), audio anonymized by
        another tool (``extra.anonymizer`` without a key) by its file's size and modification time.
        Paths are left out, so a moved corpus or cache keeps its models."""
        from ..digest import IN_PROCESS, lines_digest

        digests = digests or IN_PROCESS

        def line(u: Utterance) -> str:
            segment = (u.audio.start, u.audio.stop) if u.audio is not None else None
            made = u.extra.get("anonymization_key") or _made_elsewhere(u)
            return (
                json.dumps(
                    [
                        u.id,
                        u.speaker,
                        u.text,
                        segment,
                        u.duration,
                        u.extra.get("asr_text"),
                        made or _original_bytes(u, digests),
                    ]
                )
                + "\n"
            )

        return lines_digest(line(u) for u in sorted(self._utterances, key=lambda u: u.id))

    def subset(self, keep) -> "Manifest":
        """The utterances for which ``keep(utt)`` is true, in order."""
        return self.replace([u for u in self._utterances if keep(u)])

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
        utterances = [
            Utterance.from_dict(record, where=f"{path}, line {number}")
            for number, record in read_json_lines(path)
        ]
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
                writer.writerow(
                    [
                        u.id,
                        "" if u.duration is None else f"{u.duration:.4f}",
                        "" if audio is None else audio.path,
                        "" if audio is None or audio.start is None else audio.start,
                        "" if audio is None or audio.stop is None else audio.stop,
                        u.speaker,
                        u.text,
                        u.episode or "",
                    ]
                )


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
        warnings.warn(
            f"{name}: none of the {len(listed)} listed audio files exist; loading as text-only",
            stacklevel=3,
        )
        return [
            replace(u, audio=None) for u in utterances
        ]  # copies: the caller's stay as they were
    if skip_missing:
        warnings.warn(
            f"{name}: skipped {len(missing)} utterances whose audio is missing", stacklevel=3
        )
        gone = {id(u) for u in missing}
        return [u for u in utterances if id(u) not in gone]
    shown = ", ".join(f"{u.id} ({u.audio.path})" for u in missing[:3])
    raise DataError(
        f"{name}: {len(missing)} of {len(listed)} audio files are missing, e.g. {shown}",
        hint="restore them, or pass skip_missing=True to drop those utterances",
    )


def _original_bytes(u, digests) -> Optional[str]:
    """The SHA-256 of an utterance's original audio file (None without one, or when it cannot be
    read: loading the audio says why)."""
    if u.audio is None or not u.audio.path or u.extra.get("anonymizer"):
        return None
    try:
        return digests(u.audio.path)
    except OSError:
        return None


def _made_elsewhere(u) -> Optional[list]:
    """[size, mtime_ns] of an utterance's audio anonymized by another tool (None for original
    audio, audio without a file, or audio sparc-eval made: its anonymization key says more)."""
    if not u.extra.get("anonymizer") or u.audio is None or not u.audio.path:
        return None
    try:
        st = Path(u.audio.path).stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]
