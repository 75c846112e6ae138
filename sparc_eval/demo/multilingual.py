"""The German, French and Spanish demo corpora (``demo:de``, ``demo:fr``, ``demo:es``): espeak-ng
voices of the language reading the fixed sentences of :mod:`.sentences`, with ids, speakers and
books as Multilingual LibriSpeech writes them (``<speaker>_<book>_<index>``, numbers only; the
book is the episode), so that a VoicePrivacy 2026 track-2 tree can be built from them.

Each speaker reads mostly one book (all but two utterances) and two sentences of the next book,
as an MLS speaker reads mostly one book: some target trials then cross books. Speech synthesized
this way is a smoke test of the pipeline, not a measurement of anything.
"""

from __future__ import annotations

import numpy as np

from ..data.manifest import Utterance
from .sentences import BOOKS
from .speakers import AGE_RANGES, FEMALE_VARIANTS, MALE_VARIANTS, Speaker

LANGUAGES = tuple(BOOKS)
# the espeak-ng voice and the accent attribute of each language's speakers
VOICES = {"de": ("de", "German"), "fr": ("fr", "French (France)"), "es": ("es", "Spanish (Spain)")}
CROSS_BOOK_UTTERANCES = 2  # per speaker, from the next book
FIRST_SPEAKER, FIRST_BOOK = 1000, 100  # MLS-like numeric ids


def design_language_speakers(language: str, n_speakers: int, seed: int) -> list:
    """``n_speakers`` espeak voices of ``language``, alternately female and male, each with its
    own variant, pitch, pitch range and rate (seeded), ids ``1000``, ``1001``..."""
    voice, accent = VOICES[language]
    rng = np.random.default_rng([seed, 1, LANGUAGES.index(language)])
    speakers = []
    for i in range(n_speakers):
        female = i % 2 == 0
        variants = FEMALE_VARIANTS if female else MALE_VARIANTS
        low, high = list(AGE_RANGES.values())[i % len(AGE_RANGES)]
        speakers.append(
            Speaker(
                id=str(FIRST_SPEAKER + i),
                sex="F" if female else "M",
                age=int(rng.integers(low, high + 1)),
                accent=accent,
                voice=voice,
                variant=variants[(i // 2) % len(variants)],
                rate=int(rng.integers(140, 191)),
                pitch=int(rng.integers(35, 81) if female else rng.integers(20, 61)),
                pitch_range=int(rng.integers(25, 86)),
            )
        )
    return speakers


def plan_language(language: str, n_speakers: int, utts: int, seed: int) -> list:
    """``(Utterance, Speaker)`` pairs: speaker ``i`` reads ``utts`` sentences, all but
    ``CROSS_BOOK_UTTERANCES`` of them from book ``i % 3`` (seeded order, repeating a book that
    is too short), the rest from the next book."""
    books = BOOKS[language]
    rng = np.random.default_rng([seed, 2, LANGUAGES.index(language)])
    planned = []
    for i, speaker in enumerate(design_language_speakers(language, n_speakers, seed)):
        own = i % len(books)
        cross = min(CROSS_BOOK_UTTERANCES, utts - 1)
        reads = [(own, k) for k in _draw(rng, len(books[own]), utts - cross)]
        other = (own + 1) % len(books)
        reads += [(other, k) for k in _draw(rng, len(books[other]), cross)]
        for index, (book, k) in enumerate(reads):
            planned.append((_utterance(speaker, language, book, index, books[book][k]), speaker))
    return sorted(planned, key=lambda pair: pair[0].id)


def _draw(rng, size: int, n: int) -> list:
    """``n`` sentence indices of a book of ``size``, each once before any repeats (seeded)."""
    order = []
    while len(order) < n:
        order += [int(k) for k in rng.permutation(size)]
    return order[:n]


def _utterance(speaker, language: str, book: int, index: int, text: str) -> Utterance:
    book_id = str(FIRST_BOOK + book)
    return Utterance(
        id=f"{speaker.id}_{book_id}_{index:06d}",
        speaker=speaker.id,
        text=text,
        episode=book_id,
        series="reading",
        sex=speaker.sex,
        age=float(speaker.age),
        accent=speaker.accent,
        language=language,
        extra={"voice": speaker.voice_name, "book": book_id},
    )
