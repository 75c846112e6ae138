"""Appearances and probes (paper 4.2, :doc:`/definitions`; the rules are in :mod:`~sparc_eval.text_trials.trials`).

An *appearance* is one (speaker, episode): that speaker's non-empty utterances of the episode,
in manifest order. A *probe* is a run of whole utterances from an appearance holding ``P +-
tolerance`` words (the last one cut at a word boundary when it would jump over the window).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..data.manifest import word_counts
from ..errors import DataError


@dataclass
class Appearance:
    index: int
    speaker: str
    episode: str
    series: Optional[str]
    ids: list
    texts: list
    words: list  # word count per utterance


@dataclass
class Probe:
    id: str
    app: int  # appearance index
    k: int  # probe number within the appearance
    start: int
    stop: int  # utterance indices [start, stop) of the appearance
    texts: tuple
    n_words: int
    cut_words: Optional[int]  # words kept of the last utterance when it was cut


def cut_probes(
    app: Appearance, P: int, tolerance: int = 5, strict: bool = False, max_probes: int = 10
):
    """Non-overlapping probes from the start of an appearance; returns (probes, n_cut, n_skipped)."""
    lo, hi = P - tolerance, P + tolerance
    probes, n_cut, n_skipped = [], 0, 0
    i, n = 0, len(app.words)
    while i < n and len(probes) < max_probes:
        count, j, made = 0, i, None
        while j < n:
            w = app.words[j]
            if count + w < lo:
                count += w
                j += 1
                continue
            if count + w <= hi:
                made = (j + 1, list(app.texts[i : j + 1]), count + w, None)
            elif strict:
                n_skipped += 1
                made = "skip"
            else:
                keep = P - count
                texts = list(app.texts[i:j]) + [" ".join(app.texts[j].split()[:keep])]
                made = (j + 1, texts, P, keep)
                n_cut += 1
            break
        if made is None:  # ran out of text before reaching the window
            break
        if made == "skip":
            i = j + 1
            continue
        stop, texts, n_words, cut = made
        k = len(probes)
        probes.append(
            Probe(
                f"{clean_id(app.speaker)}/{clean_id(app.episode)}/p{k}",
                app.index,
                k,
                i,
                stop,
                tuple(texts),
                n_words,
                cut,
            )
        )
        i = stop
    return probes, n_cut, n_skipped


def clean_id(value: str) -> str:
    """``value`` with each run of whitespace one underscore, and none at its ends (``split``
    reads the same whitespace as the regular expression ``\\s+``, faster)."""
    return "_".join(str(value).split())


def appearances(manifest) -> list:
    """(speaker, episode) appearances in order of first utterance; utterances keep manifest order."""
    groups = {}
    for u, n_words in zip(manifest, word_counts(manifest)):  # a Manifest's: counted once
        if not u.text or not u.text.strip():
            continue
        if u.episode is None:
            raise DataError(
                f"utterance {u.id!r} has no episode",
                hint="SPARC trials need an episode (conversation, chapter, podcast) for every utterance",
            )
        key = (u.speaker, u.episode)
        app = groups.get(key)
        if app is None:
            app = groups[key] = Appearance(len(groups), u.speaker, u.episode, u.series, [], [], [])
        app.ids.append(u.id)
        app.texts.append(u.text)
        app.words.append(n_words)
    return list(groups.values())
