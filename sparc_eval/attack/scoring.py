"""Cosine scoring of trial embeddings against speaker-level enrollment models.

Enrollment embeddings are averaged per speaker (as VoicePrivacy and SpAnE do), then every
trial is scored by one matrix product, never a loop over trials.
"""

from __future__ import annotations

import numpy as np

from ..errors import DataError


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


def speaker_models(embeddings: dict, enroll: dict) -> tuple:
    """(speakers, (S, D) mean enrollment embedding per speaker)."""
    speakers = sorted(enroll)
    missing = [u for s in speakers for u in enroll[s] if u not in embeddings]
    if missing:
        raise DataError(
            f"{len(missing)} enrollment utterances have no embedding, e.g. {missing[:3]}"
        )
    models = np.vstack([np.mean([embeddings[u] for u in enroll[s]], axis=0) for s in speakers])
    return speakers, models


def score_pairs(embeddings: dict, enroll: dict, pairs: list) -> np.ndarray:
    """Cosine score of each (enroll speaker, trial id, is_target) pair."""
    speakers, models = speaker_models(embeddings, enroll)
    trial_ids = list(dict.fromkeys(t for _, t, _ in pairs))
    missing = [t for t in trial_ids if t not in embeddings]
    if missing:
        raise DataError(f"{len(missing)} trial utterances have no embedding, e.g. {missing[:3]}")
    trials = np.vstack([embeddings[t] for t in trial_ids])
    matrix = _unit(models) @ _unit(trials).T  # (S, N)
    row = {s: i for i, s in enumerate(speakers)}
    col = {t: j for j, t in enumerate(trial_ids)}
    return matrix[[row[s] for s, _, _ in pairs], [col[t] for _, t, _ in pairs]]
