"""Scoring rules for embedding attackers: cosine, max-similarity and a PLDA back-end.

- ``cosine`` (the default): cosine against the speaker-mean enrollment embedding
  (VoicePrivacy, SpAnE; :func:`.scoring.score_pairs`).
- ``max``: the highest cosine between the trial and any one of the speaker's enrollment
  utterances (VoxGuard's rule): one close enrollment take suffices, which helps at low FPR.
- ``plda``: a two-covariance PLDA back-end (SpeechBrain's ``speechbrain.processing.PLDA_LDA``)
  fitted on training-side embeddings and their speakers (:func:`fit_backend`): centred,
  within-speaker whitened, LDA-reduced, length-normalised (Garcia-Romero and Espy-Wilson 2011),
  then scored by SpeechBrain's fast PLDA scoring against the speaker-mean enrollment vectors.

Every rule scores all trials by matrix products, never a loop over trials.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from ..errors import DataError, one_of
from .scoring import check_enrollment, pick_pairs, score_pairs, speaker_models, trial_vectors, unit

SCORINGS = ("cosine", "max", "plda")
MIN_PLDA_SPEAKERS = 2  # LDA keeps at most n_speakers - 1 dimensions: one speaker leaves none
MIN_WITHIN_VARIANCE = 1e-3  # relative to the mean: within-speaker directions kept for LDA


def _plda_lda():
    """SpeechBrain's PLDA_LDA module (imported on first use: it pulls in torch)."""
    from ..speechbrain_compat import import_speechbrain

    return import_speechbrain("speechbrain.processing.PLDA_LDA")


def check_scoring(scoring: str) -> str:
    return one_of(scoring, SCORINGS, "scoring")


# --- the PLDA back-end ---------------------------------------------------------------------------


@dataclass
class PldaBackend:
    """Centring, whitening+LDA projection and a SpeechBrain PLDA model, fitted on training embeddings."""

    centre: np.ndarray  # (D,) training mean
    projection: np.ndarray  # (D, lda_dim): within-speaker whitening then LDA
    plda: object  # speechbrain.processing.PLDA_LDA.PLDA
    lda_dim: int
    n_speakers: int
    notes: list = field(default_factory=list)  # sentences for the record (LDA dimension clamped)

    def transform(self, x: np.ndarray) -> np.ndarray:
        """Centred, projected, length-normalised vectors, as the PLDA model was fitted on."""
        return unit((np.asarray(x, dtype=np.float64) - self.centre) @ self.projection)

    def score_matrix(self, models: np.ndarray, trials: np.ndarray) -> np.ndarray:
        """(S, N) PLDA log-likelihood ratios of transformed speaker models against transformed trials."""
        enroll, test = _stat_object(models), _stat_object(trials)
        # the Ndx is only read for its names and mask; SpeechBrain's own loops over every model
        ndx = SimpleNamespace(
            modelset=enroll.modelset,
            segset=test.segset,
            trialmask=np.ones((len(models), len(trials)), dtype=bool),
        )
        p = self.plda
        return (
            _plda_lda()
            .fast_PLDA_scoring(enroll, test, ndx, p.mean, p.F, p.Sigma, check_missing=False)
            .scoremat
        )


def _stat_object(x: np.ndarray, labels=None):
    """SpeechBrain's container of vectors (stat1), one session each (stat0 = 1)."""
    n = len(x)
    ids = np.array([str(i) for i in range(n)], dtype=object)
    return _plda_lda().StatObject_SB(
        modelset=ids if labels is None else np.asarray(labels, dtype=object),
        segset=ids,
        start=np.array([None] * n),
        stop=np.array([None] * n),
        stat0=np.ones((n, 1)),
        stat1=np.asarray(x, dtype=np.float64),
    )


def _check_training(x: np.ndarray, labels: np.ndarray) -> int:
    if len(x) != len(labels):
        raise DataError(f"{len(x)} training embeddings but {len(labels)} speaker labels")
    speakers, counts = np.unique(labels, return_counts=True)
    if len(speakers) < MIN_PLDA_SPEAKERS or counts.max() < 2:
        raise DataError(
            f"a PLDA back-end needs at least {MIN_PLDA_SPEAKERS} training speakers and one with two "
            f"or more utterances; the training data has {len(speakers)} speaker(s), at most "
            f"{counts.max() if len(counts) else 0} utterance(s) each",
            hint="train on more speakers, or use scoring: cosine or max",
        )
    return len(speakers)


def _lda_dim(asked, n_speakers: int, dim: int) -> tuple:
    """(LDA dimension, note or None): at most n_speakers - 1 and the embedding size."""
    most = min(dim, n_speakers - 1)
    if asked is None:
        return most, None
    if int(asked) < 1:
        raise DataError(f"lda_dim {asked} is not a positive dimension", hint="leave it null")
    if int(asked) > most:
        return most, (
            f"lda_dim {asked} clamped to {most}: LDA on {n_speakers} training speakers and "
            f"{dim} usable embedding dimensions gives at most {most} dimensions"
        )
    return int(asked), None


def _within_whitening(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(D, r) map making the within-speaker scatter the identity, on its r reliable directions.

    SpeechBrain's LDA takes eigenvectors of ``(Sb Sw^-1)^T`` with ``eigh``, which assumes a
    symmetric matrix; after this whitening its ``Sw`` (the sum of per-speaker covariances) is
    the identity, so its LDA is exact. Directions with next to no within-speaker variance (few
    utterances per speaker, dead units) are dropped: their inverse would swamp the rest."""
    _, index = np.unique(labels, return_inverse=True)
    counts = np.bincount(index)
    means = np.zeros((len(counts), x.shape[1]))
    np.add.at(means, index, x)
    residual = x - (means / counts[:, None])[index]
    scatter = (residual / counts[index, None]).T @ residual  # as PLDA_LDA's get_lda_matrix_stat1
    values, vectors = np.linalg.eigh(scatter)
    keep = values > MIN_WITHIN_VARIANCE * max(values.mean(), 1e-300)
    return vectors[:, keep] / np.sqrt(values[keep])


def fit_backend(train_embeddings, train_labels, *, lda_dim=None, n_iter: int = 10) -> PldaBackend:
    """A PLDA back-end fitted on (n, D) training embeddings and their n speaker labels."""
    x = np.asarray(train_embeddings, dtype=np.float64)
    labels = np.asarray([str(s) for s in train_labels], dtype=object)
    n_speakers = _check_training(x, labels)
    centre = x.mean(axis=0)
    whiten = _within_whitening(x - centre, labels)
    dim, note = _lda_dim(lda_dim, n_speakers, whiten.shape[1])
    lda = _plda_lda().LDA()
    lda.do_lda(_stat_object((x - centre) @ whiten, labels), reduced_dim=dim)
    backend = PldaBackend(centre, whiten @ lda.transform_mat, None, dim, n_speakers)
    backend.notes = [note] if note else []
    plda = _plda_lda().PLDA(rank_f=dim, nb_iter=n_iter)
    plda.plda(_stat_object(backend.transform(x), labels))
    backend.plda = plda
    return backend


# --- one entry point -----------------------------------------------------------------------------


def max_similarity(embeddings: dict, enroll: dict, pairs: list) -> np.ndarray:
    """Each pair's highest cosine between its trial and one of its speaker's enrollment utterances."""
    speakers = check_enrollment(embeddings, enroll)
    trial_ids, trials = trial_vectors(embeddings, pairs)
    takes = unit(np.vstack([embeddings[u] for s in speakers for u in enroll[s]]))
    starts = np.cumsum([0] + [len(enroll[s]) for s in speakers[:-1]])
    matrix = np.maximum.reduceat(takes @ unit(trials).T, starts, axis=0)  # (S, N)
    return pick_pairs(matrix, speakers, trial_ids, pairs)


def plda_scores(embeddings: dict, enroll: dict, pairs: list, backend: PldaBackend) -> np.ndarray:
    """PLDA scores against each speaker's mean transformed enrollment vector."""
    transformed = dict(zip(embeddings, backend.transform(np.vstack(list(embeddings.values())))))
    speakers, models = speaker_models(transformed, enroll)
    trial_ids, trials = trial_vectors(transformed, pairs)
    return pick_pairs(backend.score_matrix(models, trials), speakers, trial_ids, pairs)


def score_embeddings(
    embeddings: dict, enroll: dict, pairs: list, scoring: str = "cosine", backend=None
) -> np.ndarray:
    """Scores of (enroll speaker, trial id, is_target) pairs from {utterance id: vector}
    embeddings and {speaker: [enrollment ids]}, by the named rule."""
    check_scoring(scoring)
    if scoring == "cosine":
        return score_pairs(embeddings, enroll, pairs)
    if scoring == "max":
        return max_similarity(embeddings, enroll, pairs)
    if backend is None:
        raise DataError(
            "plda scoring needs a fitted back-end",
            hint="fit one with fit_backend(train_embeddings, train_labels) (the attacker's fit())",
        )
    return plda_scores(embeddings, enroll, pairs, backend)
