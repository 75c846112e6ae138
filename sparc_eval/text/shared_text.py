"""Text spoken by many speakers: read passages, scripted prompts, stock phrases.

EdAcc conversations open with a read elicitation passage (a participant-number script and the
"please call Stella" paragraph) that every speaker reads. Left in, a probe taken from the start
of an episode matches the start of every other episode and the SPARC "easy" condition inverts.
This detector finds such text by how many *speakers* say it:

- each utterance is lower-cased and split on white space; its *distinct* word n-grams
  (``n`` = 4) are collected;
- an n-gram is *shared* when ``min_speakers`` (5) or more different speakers say it anywhere
  in the corpus;
- an utterance is removed when more than ``min_fraction`` (0.30) of its distinct n-grams are
  shared. Utterances shorter than ``n`` words have no n-grams and are never removed.

On EdAcc test (9,289 utterances, 60 speakers) the defaults remove 177 utterances: the read
passage, the participant-number lines, the conversation prompts both speakers read, and a few
stock back-channel runs ("mm hmm mm hmm", "yeah yeah yeah yeah"). On LibriSpeech test-clean
(read books, one reader per chapter) they remove none.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class SharedTextConfig:
    """Settings of the shared-text detector (``enabled`` False keeps every utterance)."""

    enabled: bool = True
    n: int = 4
    min_speakers: int = 5
    min_fraction: float = 0.30

    def __post_init__(self):
        if self.n < 1:
            raise ValueError(f"shared_text n must be >= 1, not {self.n}")
        if self.min_speakers < 2:
            raise ValueError(f"shared_text min_speakers must be >= 2, not {self.min_speakers}")
        if not 0.0 <= self.min_fraction < 1.0:
            raise ValueError(f"shared_text min_fraction must lie in [0, 1), not {self.min_fraction}")

    @classmethod
    def from_value(cls, value) -> "SharedTextConfig":
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, bool):
            return cls(enabled=value)
        if isinstance(value, dict):
            unknown = set(value) - {"enabled", "n", "min_speakers", "min_fraction"}
            if unknown:
                raise ValueError(f"unknown shared_text settings {sorted(unknown)}; "
                                 "known: enabled, n, min_speakers, min_fraction")
            return cls(**value)
        raise ValueError(f"shared_text must be a mapping or a boolean, not {value!r}")


@dataclass
class SharedTextResult:
    """What the detector removed: ids (in manifest order) and the numbers for the report."""

    removed_ids: list
    settings: dict
    n_utterances: int
    n_removed: int
    n_words: int
    n_words_removed: int
    n_shared_ngrams: int
    removed_per_speaker: dict = field(default_factory=dict)
    examples: list = field(default_factory=list)

    def stats(self) -> dict:
        """JSON-ready summary (without the full id list)."""
        out = asdict(self)
        out.pop("removed_ids")
        out["fraction_removed"] = self.n_removed / self.n_utterances if self.n_utterances else 0.0
        return out


def _ngrams(text: str, n: int) -> set:
    words = text.lower().split()
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def detect_shared_text(utterances, config: SharedTextConfig | None = None, *, n_examples: int = 5) -> SharedTextResult:
    """Find utterances made mostly of word n-grams that many speakers say (see module doc).

    ``utterances``: a Manifest or any iterable of objects with ``id``, ``speaker`` and ``text``.
    """
    config = config or SharedTextConfig()
    utts = list(utterances)
    settings = asdict(config)
    n_words = sum(len(u.text.split()) for u in utts)
    if not config.enabled:
        return SharedTextResult([], settings, len(utts), 0, n_words, 0, 0)
    grams = [_ngrams(u.text, config.n) for u in utts]
    speakers_of = defaultdict(set)
    for u, g in zip(utts, grams):
        for x in g:
            speakers_of[x].add(u.speaker)
    shared = {x for x, s in speakers_of.items() if len(s) >= config.min_speakers}
    removed, per_speaker, examples, words_removed = [], Counter(), [], 0
    for u, g in zip(utts, grams):
        if not g:
            continue
        fraction = sum(x in shared for x in g) / len(g)
        if fraction > config.min_fraction:
            removed.append(u.id)
            per_speaker[u.speaker] += 1
            words_removed += len(u.text.split())
            if len(examples) < n_examples:
                examples.append({"id": u.id, "shared_fraction": round(fraction, 3), "text": u.text[:120]})
    return SharedTextResult(removed, settings, len(utts), len(removed), n_words, words_removed, len(shared),
                            dict(per_speaker), examples)
