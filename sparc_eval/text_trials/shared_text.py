"""Text spoken by many speakers: read passages, scripted prompts, stock phrases.

EdAcc conversations open with a read elicitation passage (a participant-number script and the
"please call Stella" paragraph) that every speaker reads. Left in, a probe taken from the start
of an episode matches the start of every other episode and the SPARC "easy" condition inverts.
This detector finds such text by how many *speakers* say it:

- each utterance is lower-cased and split on white space; its *distinct* word n-grams
  (``n`` = 4) are collected;
- an n-gram is *shared* when ``min_speakers`` or more different speakers say it anywhere in
  the corpus;
- an utterance is removed when more than ``min_fraction`` (0.30) of its distinct n-grams are
  shared. Utterances shorter than ``n`` words have no n-grams and are never removed.

Removing it is not part of SPARC's protocol (its corpora have no read passages): the text
evaluation's default, ``enabled: "auto"``, removes shared text only when the corpus's loader marks
it as holding read passages (``Manifest.read_passages``: the EdAcc loaders do). The detector
called on its own (``SharedTextConfig()``) is on.

``min_speakers: "auto"`` (the default) scales with the corpus: ``max(5, ceil(0.05 x speakers))``
(:func:`~sparc_eval.text_trials.shared_text.auto_min_speakers`): 5 up to 100 speakers, one speaker in twenty above. A fixed count does
not scale: how many speakers share a phrase grows with the corpus, so a fixed 5 (8% of EdAcc test's
60 speakers, 0.04% of 12,500) ends up calling ordinary speech shared. On a synthetic corpus of
12,500 speakers x 19 utterances drawn from a skewed phrase bank a fixed 5 removes 82% of the
utterances, ``auto`` (625) 28%. A read passage is said by nearly every speaker at any size (59 of
EdAcc test's 60 say "please call stella ask"; its most common conversational 4-gram, "i don't know
if", 23).

On EdAcc test (9,289 utterances, 60 speakers: threshold 5) the defaults remove 177 utterances: the
read passage, the participant-number lines, the conversation prompts both speakers read, and a few
stock back-channel runs ("mm hmm mm hmm", "yeah yeah yeah yeah"). On LibriSpeech test-clean
(read books, one reader per chapter) they remove none.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from itertools import chain

import numpy as np

from ..arrays import distinct
from ..data.manifest import Manifest, word_counts
from ..hparams import bounded

AUTO = "auto"
_SHIFT = 32  # a packed pair: high part << 32 | low part (both below 2**31)
AUTO_MIN_SPEAKERS = 5  # the floor of ``min_speakers: auto`` (EdAcc test's 60 speakers get 5)
AUTO_SPEAKER_SHARE = 0.05  # above 100 speakers: an n-gram is shared when one speaker in 20 says it


def auto_min_speakers(n_speakers: int) -> int:
    """``min_speakers: auto``: max(5, ceil(0.05 x speakers)); 5 at 60 speakers, 625 at 12,500."""
    return max(AUTO_MIN_SPEAKERS, math.ceil(AUTO_SPEAKER_SHARE * int(n_speakers)))


@dataclass(frozen=True)
class SharedTextConfig:
    """Settings of the shared-text detector (``enabled`` False keeps every utterance).

    ``enabled``: True, False or ``"auto"`` (on iff the manifest's ``read_passages`` is set);
    ``min_speakers``: a number (>= 2) or ``"auto"`` (:func:`~sparc_eval.text_trials.shared_text.auto_min_speakers`). :meth:`resolve`
    turns both into concrete values for one corpus."""

    enabled: object = bounded(True, key="shared_text")  # also {enabled: ...} (config.py)
    n: int = bounded(4, key="shared_text_n")
    min_speakers: object = bounded(AUTO, key="shared_text_min_speakers")
    min_fraction: float = bounded(0.30, key="shared_text_min_fraction")

    def __post_init__(self):
        if self.enabled not in (True, False, AUTO):
            raise ValueError(f"shared_text must be true, false or auto, not {self.enabled!r}")
        if self.n < 1:
            raise ValueError(f"shared_text n must be >= 1, not {self.n}")
        if self.min_speakers != AUTO and (
            isinstance(self.min_speakers, bool) or int(self.min_speakers) < 2
        ):
            raise ValueError(
                f"shared_text min_speakers must be auto or >= 2, not {self.min_speakers}"
            )
        if not 0.0 <= self.min_fraction < 1.0:
            raise ValueError(
                f"shared_text min_fraction must lie in [0, 1), not {self.min_fraction}"
            )

    @classmethod
    def from_value(cls, value) -> "SharedTextConfig":
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, bool) or value == AUTO:
            return cls(enabled=value)
        if isinstance(value, dict):
            unknown = set(value) - {"enabled", "n", "min_speakers", "min_fraction"}
            if unknown:
                raise ValueError(
                    f"unknown shared_text settings {sorted(unknown)}; "
                    "known: enabled, n, min_speakers, min_fraction"
                )
            return cls(**value)
        raise ValueError(f"shared_text must be a mapping, a boolean or auto, not {value!r}")

    def resolve(self, utterances) -> "SharedTextConfig":
        """Concrete ``enabled`` and ``min_speakers`` for these utterances (a Manifest, or any
        iterable of objects with ``speaker``; only a Manifest can carry ``read_passages``)."""
        enabled = (
            bool(getattr(utterances, "read_passages", False))
            if self.enabled == AUTO
            else self.enabled
        )
        min_speakers = self.min_speakers
        if min_speakers == AUTO:
            min_speakers = auto_min_speakers(len({u.speaker for u in utterances}))
        return replace(self, enabled=enabled, min_speakers=int(min_speakers))


@dataclass
class SharedTextResult:
    """What the detector removed: ids (in manifest order) and the numbers for the report.
    ``settings`` are the resolved values, ``requested`` what was asked for (``auto`` or not)."""

    removed_ids: list
    settings: dict
    n_utterances: int
    n_removed: int
    n_words: int
    n_words_removed: int
    n_shared_ngrams: int
    removed_per_speaker: dict = field(default_factory=dict)
    examples: list = field(default_factory=list)
    requested: dict = field(default_factory=dict)
    n_speakers: int = 0

    def stats(self) -> dict:
        """JSON-ready summary (without the full id list)."""
        out = asdict(self)
        out.pop("removed_ids")
        out["fraction_removed"] = self.n_removed / self.n_utterances if self.n_utterances else 0.0
        return out


def _word_ids(texts: list, batch: int = 10_000):
    """(word ids of all texts, words per text): lower-cased white-space words, a batch of texts
    at a time (their words are Python strings only until numbered)."""
    vocab, ids, lengths = {}, [], []
    for lo in range(0, len(texts), batch):
        words = [t.lower().split() for t in texts[lo : lo + batch]]
        flat = list(chain.from_iterable(words))
        for w in dict.fromkeys(flat):
            vocab.setdefault(w, len(vocab))
        ids.append(np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat)))
        lengths.append(np.fromiter(map(len, words), dtype=np.int64, count=len(words)))
    return np.concatenate(ids or [np.zeros(0, np.int64)]), np.concatenate(
        lengths or [np.zeros(0, np.int64)]
    )


def distinct_ngrams(texts: list, n: int):
    """(text index, n-gram id) once per distinct word n-gram of each text, exactly: an n-gram is
    numbered by sorting (its (n-1)-gram's number, its last word's), one sort per extra word."""
    words, lengths = _word_ids(texts)
    doc = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
    left = np.repeat(lengths, lengths) - (
        np.arange(len(words)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    )
    starts = np.flatnonzero(left >= n)  # the windows of n words inside one text
    gram = words[starts]
    for k in range(1, n):
        gram = np.unique(gram << _SHIFT | words[starts + k], return_inverse=True)[1].ravel()
    pairs = distinct(doc[starts] << _SHIFT | gram)
    return pairs >> _SHIFT, pairs & ((1 << _SHIFT) - 1)


def detect_shared_text(
    utterances, config: SharedTextConfig | None = None, *, n_examples: int = 5
) -> SharedTextResult:
    """Find utterances made mostly of word n-grams that many speakers say (see module doc).

    ``utterances``: a Manifest or any iterable of objects with ``id``, ``speaker`` and ``text``.
    """
    requested = config or SharedTextConfig()
    config = requested.resolve(utterances)
    utts = utterances if isinstance(utterances, Manifest) else list(utterances)
    settings = asdict(config)
    words = word_counts(utts)
    n_words = sum(words)
    speaker_codes = {}
    speaker = np.fromiter(
        (speaker_codes.setdefault(u.speaker, len(speaker_codes)) for u in utts),
        dtype=np.int64,
        count=len(utts),
    )
    if not config.enabled:
        return SharedTextResult(
            [],
            settings,
            len(utts),
            0,
            n_words,
            0,
            0,
            requested=asdict(requested),
            n_speakers=len(speaker_codes),
        )
    doc, gram = distinct_ngrams([u.text for u in utts], config.n)
    n_grams = int(gram.max()) + 1 if len(gram) else 0
    said_by = np.bincount(
        distinct(speaker[doc] << _SHIFT | gram) & ((1 << _SHIFT) - 1), minlength=n_grams
    )
    shared = said_by >= config.min_speakers
    total = np.bincount(doc, minlength=len(utts))
    fraction = np.divide(
        np.bincount(doc, weights=shared[gram], minlength=len(utts)),
        total,
        out=np.zeros(len(utts)),
        where=total > 0,
    )
    removed, per_speaker, examples, words_removed = [], Counter(), [], 0
    for i in np.flatnonzero(fraction > config.min_fraction).tolist():
        u = utts[i]
        removed.append(u.id)
        per_speaker[u.speaker] += 1
        words_removed += words[i]
        if len(examples) < n_examples:
            examples.append(
                {"id": u.id, "shared_fraction": round(float(fraction[i]), 3), "text": u.text[:120]}
            )
    return SharedTextResult(
        removed,
        settings,
        len(utts),
        len(removed),
        n_words,
        words_removed,
        int(shared.sum()),
        dict(per_speaker),
        examples,
        asdict(requested),
        len(speaker_codes),
    )
