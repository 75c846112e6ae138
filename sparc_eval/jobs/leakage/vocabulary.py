"""Vocabulary statistics that explain why one corpus leaks more speaker content than another.

Read books give each speaker words nobody else says (character names, a chapter's topic);
conversations on shared prompts do not. Two numbers capture it:

- type/token ratio: of the whole corpus, and per speaker over the first ``sample_tokens`` tokens
  (TTR falls as a text grows, so speakers and corpora are compared on equal-length samples);
- unique-word share: the share of a speaker's tokens (and of their word types) that no other
  speaker in the corpus uses. It falls as speakers are added, so compare corpora with the same
  number of speakers (the leakage recipe's ``balance_speakers``).
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)*")


def tokens(text: str) -> list:
    """Lower-cased word tokens (apostrophes kept inside words: don't, speaker's)."""
    return WORD.findall((text or "").lower())


def speaker_tokens(manifest) -> dict:
    """speaker -> token list, utterances in corpus order."""
    out: dict = {}
    for utt in manifest:
        out.setdefault(utt.speaker, []).extend(tokens(utt.text))
    return out


def vocabulary_stats(manifest, *, sample_tokens: int = 500) -> dict:
    """Corpus-level summary plus a per-speaker table (``speakers``) for correlating with EERs."""
    by_speaker = speaker_tokens(manifest)
    type_sets = {s: set(t) for s, t in by_speaker.items()}
    users = Counter(w for types in type_sets.values() for w in types)  # speakers per word type
    corpus_counts = Counter(w for toks in by_speaker.values() for w in toks)
    n_tokens = sum(corpus_counts.values())
    per_speaker = {}
    for spk, toks in by_speaker.items():
        own = [w for w in type_sets[spk] if users[w] == 1]
        own_set = set(own)
        sample = toks[:sample_tokens]
        per_speaker[spk] = {
            "n_tokens": len(toks),
            "n_types": len(type_sets[spk]),
            "unique_token_share": (sum(w in own_set for w in toks) / len(toks)) if toks else None,
            "unique_type_share": (len(own) / len(type_sets[spk])) if toks else None,
            "ttr_sample": (len(set(sample)) / len(sample))
            if len(sample) >= sample_tokens
            else None,
        }

    def summary(key):
        values = np.array([v[key] for v in per_speaker.values() if v[key] is not None], dtype=float)
        if values.size == 0:
            return {"mean": None, "median": None, "n_speakers": 0}
        return {
            "mean": float(values.mean()),
            "median": float(np.median(values)),
            "n_speakers": int(values.size),
        }

    short = sum(v["ttr_sample"] is None for v in per_speaker.values())
    return {
        "n_speakers": len(by_speaker),
        "n_utterances": len(manifest),
        "n_tokens": n_tokens,
        "n_types": len(corpus_counts),
        "type_token_ratio": (len(corpus_counts) / n_tokens) if n_tokens else None,
        "tokens_per_speaker": summary("n_tokens"),
        "speaker_ttr": {
            **summary("ttr_sample"),
            "sample_tokens": sample_tokens,
            "n_speakers_too_short": short,
        },
        "unique_token_share": summary("unique_token_share"),
        "unique_type_share": summary("unique_type_share"),
        "speakers": per_speaker,
    }
