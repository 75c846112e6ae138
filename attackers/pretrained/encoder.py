"""What both snapshot encoders share: their options and ``embed`` over :mod:`.batching`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .batching import embed_in_batches


class SnapshotEncoder:
    """A model loaded from ``folder``; a subclass loads it and embeds one batch
    (``_embed_batch(waves) -> (b, D)``), and says its ``sample_rate`` and ``settings()``."""

    format = ""
    sample_rate = 16000

    def __init__(
        self, folder, *, device: str = "cpu", batch_size: int = 16, padded_batches: bool = False
    ):
        self.folder, self.device, self.batch_size = Path(folder), device, int(batch_size)
        self.padded_batches = bool(padded_batches)

    def embed(self, waves: list) -> np.ndarray:
        """(n, D) float32 embeddings of 1-D float32 waves at ``sample_rate``."""
        return embed_in_batches(
            waves, self.batch_size, self._embed_batch, padded=self.padded_batches
        )

    def _embed_batch(self, waves: list) -> np.ndarray:
        raise NotImplementedError

    def settings(self) -> dict:
        raise NotImplementedError
