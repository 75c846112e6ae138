"""Cosine scoring of trial embeddings against speaker-level enrollment models.

Enrollment embeddings are averaged per speaker (as VoicePrivacy and SpAnE do), then every
trial is scored by one matrix product, never a loop over trials. The other scoring rules
(max over enrollment utterances, PLDA) live in :mod:`.embedding_scoring` and reuse these helpers.
"""

from __future__ import annotations

import numpy as np

from ..errors import DataError


def unit(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


def check_enrollment(embeddings: dict, enroll: dict) -> list:
    """The enrollment speakers, sorted; a DataError when one has no (embedded) utterance."""
    speakers = sorted(enroll)
    empty = [s for s in speakers if not enroll[s]]
    if empty:
        raise DataError(f"{len(empty)} enrollment speakers have no utterance, e.g. {empty[:3]}")
    missing = [u for s in speakers for u in enroll[s] if u not in embeddings]
    if missing:
        raise DataError(
            f"{len(missing)} enrollment utterances have no embedding, e.g. {missing[:3]}"
        )
    return speakers


def speaker_models(embeddings: dict, enroll: dict) -> tuple:
    """(speakers, (S, D) mean enrollment embedding per speaker)."""
    speakers = check_enrollment(embeddings, enroll)
    models = np.vstack([np.mean([embeddings[u] for u in enroll[s]], axis=0) for s in speakers])
    return speakers, models


def trial_vectors(embeddings: dict, pairs: list) -> tuple:
    """(trial ids in first-seen order, (N, D) their embeddings)."""
    trial_ids = list(dict.fromkeys(t for _, t, _ in pairs))
    missing = [t for t in trial_ids if t not in embeddings]
    if missing:
        raise DataError(f"{len(missing)} trial utterances have no embedding, e.g. {missing[:3]}")
    return trial_ids, np.vstack([embeddings[t] for t in trial_ids])


def pick_pairs(matrix: np.ndarray, speakers: list, trial_ids: list, pairs: list) -> np.ndarray:
    """The (speaker, trial) entries of an (S, N) score matrix, in the order of ``pairs``."""
    row = {s: i for i, s in enumerate(speakers)}
    col = {t: j for j, t in enumerate(trial_ids)}
    return matrix[[row[s] for s, _, _ in pairs], [col[t] for _, t, _ in pairs]]


def score_pairs(embeddings: dict, enroll: dict, pairs: list) -> np.ndarray:
    """Cosine score of each (enroll speaker, trial id, is_target) pair."""
    speakers, models = speaker_models(embeddings, enroll)
    trial_ids, trials = trial_vectors(embeddings, pairs)
    matrix = unit(models) @ unit(trials).T  # (S, N)
    return pick_pairs(matrix, speakers, trial_ids, pairs)
