"""A pretrained speaker-verification model from a local snapshot as attacker, no training.

    python recipes/train_attacker.py hparams/pretrained.yaml --source=/models/spkrec-ecapa-voxceleb

``source`` is the folder of a SpeechBrain pretrained-interface model or a Hugging Face x-vector
snapshot (:mod:`attackers.pretrained.source`); it is checked when the attacker is built and the
model loads before any audio is read. Embedding, caching (keyed by a digest of the weight
files), scoring (cosine, max or plda) and the refusal of semi-informed without plda come from
:class:`attackers.embedding.EmbeddingAttacker`.
"""

from __future__ import annotations

import numpy as np

from attackers.embedding import EmbeddingAttacker

from .source import SPEECHBRAIN, resolve_source

FORMAT_LABELS = {SPEECHBRAIN: "SpeechBrain", "huggingface": "Hugging Face"}


def open_encoder(folder, fmt: str, **options):
    """The encoder for a checked snapshot folder of format ``fmt`` (:func:`~attackers.pretrained.source.resolve_source`);
    ``options``: device, batch_size, padded_batches."""
    if fmt == SPEECHBRAIN:
        from .speechbrain_encoder import SpeechBrainEncoder

        return SpeechBrainEncoder(folder, **options)
    from .xvector_encoder import XVectorEncoder

    return XVectorEncoder(folder, **options)


class PretrainedAttacker(EmbeddingAttacker):
    name = "pretrained"  # also the cache namespace; the weights digest keeps models apart

    def __init__(
        self,
        source=None,
        cache_folder: str = "results/cache",
        device: str = "cpu",
        scoring: str = "cosine",
        batch_size: int = 16,
        lda_dim: int | None = None,
        padded_batches: bool = False,
        progress: bool = True,
    ):
        super().__init__(cache_folder, device, scoring, batch_size, lda_dim, progress)
        self.padded_batches = bool(padded_batches)
        self.folder, self.format = resolve_source(source)  # a bad source fails here, at build time
        self.encoder_label = f"{FORMAT_LABELS[self.format]} model at {self.folder}"
        self._encoder = None

    def _load(self) -> None:
        if self._encoder is not None:
            return
        self._encoder = open_encoder(
            self.folder,
            self.format,
            device=self.device,
            batch_size=self.batch_size,
            padded_batches=self.padded_batches,
        )
        self.sample_rate = self._encoder.sample_rate
        settings = self._encoder.settings()
        self.encoder_label = (
            f"{settings['architecture']} ({FORMAT_LABELS[self.format]}, pretrained, "
            f"{settings['embedding_size']}-dim) from {self.folder}"
        )

    def model_files(self) -> list:
        """The snapshot folder, every file in it."""
        return [self.folder]

    def encoder_settings(self) -> dict:
        self._load()
        return {"encoder": self.name, **self._encoder.settings()}

    def _embed_waves(self, waves: list) -> np.ndarray:
        self._load()
        return self._encoder.embed(waves)

    def encoder_deviations(self) -> dict:
        return {
            "pretrained_verification_model": (
                "the attacker is not the paper's ECAPA-TDNN trained on the attack's training data but "
                f"a pretrained speaker-verification model ({self.encoder_label}), trained by its "
                "authors on their own data and never on anonymized speech"
            )
        }
