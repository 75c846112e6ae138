"""Trial types, conditions and :class:`TrialSet`, the trials of one (task, P, L).

Trial types: easy positive (same speaker or label, same episode), hard positive (other
episode), easy negative (other speaker or label, other episode), hard negative (same episode).
Conditions (:data:`~sparc_eval.text_trials.trial_set.TRIAL_CONDITIONS`): ``easy`` = EP+EN, ``hard`` = HP+HN, ``same_topic`` =
EP+HN, ``different_topic`` = HP+EN, ``combined`` = all (see :mod:`~sparc_eval.text_trials.trials`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..arrays import distinct, ranges_positions
from ..atomic import atomic_stream
from ..errors import DataError

EP, HP, EN, HN = "easy_positive", "hard_positive", "easy_negative", "hard_negative"
TRIAL_TYPES = (EP, HP, EN, HN)
#: the conditions a task's results are reported under (the module docstring says which types
#: each holds).
TRIAL_CONDITIONS = ("combined", "easy", "hard", "same_topic", "different_topic")
TYPE_CONDITIONS = {
    EP: ("combined", "easy", "same_topic"),
    HP: ("combined", "hard", "different_topic"),
    EN: ("combined", "easy", "different_topic"),
    HN: ("combined", "hard", "same_topic"),
}


class LazyRecords(Sequence):
    """Trial records built when read: ``build(n)`` makes trial ``n``'s dict. A trial builder's
    sets hold these, so a corpus of millions of trials keeps columns, not a dict per trial.
    ``lines(index, parts)``, when given, writes the records ``index`` as JSON lines itself
    (``parts``: a dict the set's lines share, to dump a part once)."""

    def __init__(self, build, index, *, lines=None):
        self._build, self._index = build, np.asarray(index, dtype=np.int64)
        self._lines = lines

    def __len__(self) -> int:
        return len(self._index)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return LazyRecords(self._build, self._index[i], lines=self._lines)
        return self._build(int(self._index[i]))

    def __eq__(self, other) -> bool:  # compares as the list of records it stands for
        return isinstance(other, (list, LazyRecords)) and list(self) == list(other)

    __hash__ = None

    def take(self, idx) -> "LazyRecords":
        index = self._index[np.asarray(idx, dtype=np.int64)]
        return LazyRecords(self._build, index, lines=self._lines)

    def __reduce__(self):
        # pickled as the records it stands for (a scoring worker's batch), not as the trial
        # builder its functions hold
        return list, (list(self),)

    def json_lines(self, lo: int, hi: int, parts: dict) -> str:
        """Records ``lo:hi`` as :meth:`TrialSet.write_jsonl` writes them (without texts)."""
        if self._lines is None:
            return "".join(_json_line(self[i]) for i in range(lo, hi))
        return self._lines(self._index[lo:hi], parts)


class CodedTexts(Sequence):
    """A trial set's distinct texts as codes into a list of distinct texts shared by many sets
    (a trial builder's): read like the list of strings it stands for, without that list being
    built; a scorer that knows it (TF-IDF) finds each text's counts by its code, not by the
    string. Pickled as the plain list (a scoring worker gets the set's texts, not the corpus's)."""

    def __init__(self, space: list, codes):
        self.space, self.codes = space, np.asarray(codes, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.space[c] for c in self.codes[i].tolist()]
        return self.space[self.codes[i]]

    def __iter__(self):
        return map(self.space.__getitem__, self.codes.tolist())

    def __eq__(self, other) -> bool:  # compares as the list of texts it stands for
        return isinstance(other, (list, CodedTexts)) and list(self) == list(other)

    __hash__ = None

    def __reduce__(self):
        return list, (list(self),)

    def take(self, idx) -> "CodedTexts":
        return CodedTexts(self.space, self.codes[np.asarray(idx, dtype=np.int64)])


class Sides(Sequence):
    """A trial set's sides as one flat array of text indices, side after side, and where each side
    ends: read like the list of arrays it stands for (side ``i`` is a view of ``flat``), with no
    array object per side; what reads many sides at once (:meth:`select`, the scorers'
    incidence matrices) reads ``flat`` and :meth:`lengths` in a few array passes."""

    def __init__(self, flat, ends):
        self.flat = np.asarray(flat, dtype=np.int64)
        self.ends = np.asarray(ends, dtype=np.int64)
        self.starts = np.r_[0, self.ends[:-1]] if len(self.ends) else self.ends

    @classmethod
    def of(cls, sides) -> "Sides":
        """Sides given as a list of arrays (or a :class:`Sides`, returned as it is)."""
        if isinstance(sides, Sides):
            return sides
        sides = [np.asarray(s, dtype=np.int64).ravel() for s in sides]
        flat = np.concatenate(sides) if sides else np.zeros(0, dtype=np.int64)
        return cls(flat, np.cumsum([len(s) for s in sides], dtype=np.int64))

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = int(i)
        if not -len(self) <= i < len(self):
            raise IndexError(f"side {i} of {len(self)}")
        i %= len(self)
        return self.flat[self.starts[i] : self.ends[i]]

    def lengths(self) -> np.ndarray:
        return self.ends - self.starts

    def select(self, side_ids) -> "Sides":
        """The sides ``side_ids``, in that order, as a new :class:`Sides`."""
        side_ids = np.asarray(side_ids, dtype=np.int64)
        lengths = self.lengths()[side_ids]
        flat = self.flat[ranges_positions(self.starts[side_ids], lengths)]
        return Sides(flat, np.cumsum(lengths, dtype=np.int64))

    def renumbered(self, values: np.ndarray) -> "Sides":
        """The same sides with each text index ``t`` replaced by ``values[t]``."""
        return Sides(np.asarray(values, dtype=np.int64)[self.flat], self.ends)

    def compact(self):
        """``(text_ids, sides)``: the texts these sides use (ascending) and the sides as indices
        into them (what a batch or a block of sides is scored with)."""
        text_ids = distinct(self.flat)
        position = np.zeros(int(text_ids[-1]) + 1 if len(text_ids) else 0, dtype=np.int64)
        position[text_ids] = np.arange(len(text_ids))
        return text_ids, self.renumbered(position)


_ENCODER = json.JSONEncoder(ensure_ascii=False)  # json.dumps(ensure_ascii=False) makes one per call
LINES_PER_WRITE = 4096  # trial lines joined into one write (a write per line cost more at scale)


def dumps(obj) -> str:
    """A record or a part of one as a trial file writes it (UTF-8 kept, not escaped): what
    ``json.dumps(obj, ensure_ascii=False)`` returns."""
    return _ENCODER.encode(obj)


def _json_line(record: dict) -> str:
    return dumps(record) + "\n"


#: what :meth:`TrialSet.column` reads from a record when a set has no such column
_FROM_RECORD = {
    "id": lambda r: r["id"],
    "type": lambda r: r["type"],
    "probe_id": lambda r: r["probe"]["id"],
    "probe_speaker": lambda r: r["probe"].get("speaker"),
    "enroll_id": lambda r: r["enroll"]["id"],
    "enroll_speaker": lambda r: r["enroll"].get("speaker"),
}


class TrialSet:
    """Trials of one (task, P, L): sides as indices into unique texts, plus metadata records.

    A *side* is a tuple of text indices (a probe or an enrollment); trials reference sides by
    index so that scorers represent each unique side once. ``records[i]`` holds the ids, type,
    label and conditions of trial ``i`` (what is written to JSON lines); ``columns`` optionally
    hold the fields the metrics read (the names :meth:`column` takes) as arrays, one entry per
    trial, so that they need not build records (:meth:`column`).
    """

    def __init__(
        self, texts, sides, probe_side, enroll_side, labels, records, *, meta=None, columns=None
    ):
        self.texts = texts if isinstance(texts, CodedTexts) else list(texts)
        self.sides = Sides.of(sides)
        self.probe_side = np.asarray(probe_side, dtype=np.int64)
        self.enroll_side = np.asarray(enroll_side, dtype=np.int64)
        self.labels = np.asarray(labels, dtype=bool)
        self.records = records if isinstance(records, LazyRecords) else list(records)
        self.meta = dict(meta or {})
        self.columns = {k: np.asarray(v, dtype=object) for k, v in (columns or {}).items()}
        n = len(self.records)
        if not (len(self.probe_side) == len(self.enroll_side) == len(self.labels) == n):
            raise ValueError(
                "probe_side, enroll_side, labels and records must have one entry per trial"
            )
        if any(len(v) != n for v in self.columns.values()):
            raise ValueError("columns must have one entry per trial")

    def __len__(self) -> int:
        return len(self.records)

    def column(self, name: str) -> np.ndarray:
        """One field of every trial (``id``, ``type``, ``probe_id``, ``probe_speaker``,
        ``enroll_id``, ``enroll_speaker``): the column when the set has it, else from the records."""
        if name in self.columns:
            return self.columns[name]
        return np.array([_FROM_RECORD[name](r) for r in self.records], dtype=object)

    @property
    def types(self) -> np.ndarray:
        return self.column("type")

    def side_texts(self, side: int) -> list:
        return [self.texts[i] for i in self.sides[side]]

    def probe_texts(self, i: int) -> list:
        return self.side_texts(self.probe_side[i])

    def enroll_texts(self, i: int) -> list:
        return self.side_texts(self.enroll_side[i])

    def condition_mask(self, condition: str) -> np.ndarray:
        if condition not in TRIAL_CONDITIONS:
            raise ValueError(
                f"unknown condition {condition!r}; known: {', '.join(TRIAL_CONDITIONS)}"
            )
        wanted = {t for t in TRIAL_TYPES if condition in TYPE_CONDITIONS[t]}
        return np.fromiter((t in wanted for t in self.types.tolist()), dtype=bool, count=len(self))

    def type_counts(self) -> dict:
        counts = Counter(self.types.tolist())
        return {t: counts.get(t, 0) for t in TRIAL_TYPES}

    def _records_at(self, idx):
        if isinstance(self.records, LazyRecords):
            return self.records.take(idx)
        return [self.records[i] for i in idx]

    def _columns_at(self, idx) -> dict:
        return {k: v[idx] for k, v in self.columns.items()}

    @classmethod
    def from_records(cls, records, *, meta=None) -> "TrialSet":
        """From dicts with ``probe_texts`` and ``enroll_texts`` (lists of str), ``label`` (bool or
        0/1) and optionally ``type`` (default: hard_positive / easy_negative by label), ``id``."""
        index, texts, side_index, sides = {}, [], {}, []
        probe_side, enroll_side, labels, out = [], [], [], []

        def side_of(utts):
            if isinstance(utts, str):
                utts = [utts]
            key = []
            for t in utts:
                t = str(t)
                if t not in index:
                    index[t] = len(texts)
                    texts.append(t)
                key.append(index[t])
            key = tuple(key)
            if key not in side_index:
                side_index[key] = len(sides)
                sides.append(key)
            return side_index[key]

        for i, r in enumerate(records):
            for need in ("probe_texts", "enroll_texts", "label"):
                if need not in r:
                    raise DataError(f"trial {i}: missing {need!r}")
            probe_side.append(side_of(r["probe_texts"]))
            enroll_side.append(side_of(r["enroll_texts"]))
            label = bool(r["label"])
            labels.append(label)
            rec = {k: v for k, v in r.items() if k not in ("probe_texts", "enroll_texts")}
            rec.setdefault("id", f"t{i:07d}")
            rec.setdefault("type", HP if label else EN)
            rec.setdefault("probe", {"id": f"{rec['id']}-probe"})
            rec.setdefault("enroll", {"id": f"{rec['id']}-enroll"})
            rec["conditions"] = list(TYPE_CONDITIONS[rec["type"]])
            out.append(rec)
        return cls(texts, sides, probe_side, enroll_side, labels, out, meta=meta)

    def take(self, idx) -> "TrialSet":
        """Trials ``idx`` as a TrialSet holding only the sides and texts they use (kept in their
        original order, so each side lists its texts as before): a batch to score on its own."""
        idx = np.asarray(idx, dtype=np.int64)
        side_ids = distinct(np.concatenate([self.probe_side[idx], self.enroll_side[idx]]))
        text_ids, sides = self.sides.select(side_ids).compact()
        texts = self.texts
        return TrialSet(
            texts.take(text_ids)
            if isinstance(texts, CodedTexts)
            else [texts[t] for t in text_ids.tolist()],
            sides,
            np.searchsorted(side_ids, self.probe_side[idx]),
            np.searchsorted(side_ids, self.enroll_side[idx]),
            self.labels[idx],
            self._records_at(idx),
            meta=self.meta,
            columns=self._columns_at(idx),
        )

    def subset(self, mask) -> "TrialSet":
        idx = np.flatnonzero(np.asarray(mask))
        return TrialSet(
            self.texts,
            self.sides,
            self.probe_side[idx],
            self.enroll_side[idx],
            self.labels[idx],
            self._records_at(idx),
            meta=self.meta,
            columns=self._columns_at(idx),
        )

    def write_jsonl(self, path, *, with_text: bool = False) -> None:
        parts, n = {}, len(self)  # parts: what a lazy set's lines share (dumped once)

        def lines(lo: int, hi: int) -> str:
            if not with_text and isinstance(self.records, LazyRecords):
                return self.records.json_lines(lo, hi, parts)
            return "".join(self._json_line(i, with_text) for i in range(lo, hi))

        with atomic_stream(path) as handle:
            for lo in range(0, n, LINES_PER_WRITE):
                handle.write(lines(lo, min(n, lo + LINES_PER_WRITE)))

    def _json_line(self, i: int, with_text: bool) -> str:
        row = dict(self.records[i])
        if with_text:
            row["probe_texts"] = self.probe_texts(i)
            row["enroll_texts"] = self.enroll_texts(i)
        return _json_line(row)


def read_trials_jsonl(path) -> TrialSet:
    """Trials written with texts (``with_text=True``) or any JSON lines of the same shape."""
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise DataError(f"not valid JSON ({err.msg})", path=path, line=number) from None
    try:
        return TrialSet.from_records(records)
    except DataError as err:
        raise DataError(
            f"{err} (trials written without texts need the manifest to rebuild them)", path=path
        ) from None
