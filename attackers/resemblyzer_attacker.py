"""A pretrained speaker encoder as attacker: Resemblyzer's GE2E voice encoder, no training.

A voice attack for users without GPUs: ``resemblyzer`` (the ``voice`` extra) ships its weights
inside the wheel (``resemblyzer/pretrained.pt``, Apache-2.0), so nothing is trained or fetched.
Each utterance is read at 16 kHz (its segment, :func:`sparc_eval.speech.audio.read_utterance`),
preprocessed by Resemblyzer (volume normalisation, long silences trimmed by a VAD) and embedded
(256 dimensions, unit norm). Scoring, caching and scenarios are the shared base's
(:class:`attackers.embedding.EmbeddingAttacker`): by default enrollment embeddings are averaged
per speaker and trials scored by cosine, as for ECAPA; ``scoring: max`` or ``plda`` change that.

It serves the original, ignorant and lazy-informed scenarios. Semi-informed, whose attacker is
trained on anonymized speech, is refused unless ``scoring: plda`` (back-end adaptation).

    python recipes/train_attacker.py hparams/resemblyzer.yaml [--key=value ...]
"""

from __future__ import annotations

import warnings

import numpy as np

from attackers.embedding import EmbeddingAttacker
from sparc_eval.errors import DataError

SAMPLE_RATE = 16000  # Resemblyzer's encoder works at 16 kHz
RATE, MIN_COVERAGE = (
    1.3,
    0.75,
)  # embed_utterance's defaults: partial windows per second, last window kept


def _install_hint() -> str:
    return "install the voice extra: pip install -e '.[voice]' (see docs/plugins/attacker.md, 'A pretrained voice attacker')"


class ResemblyzerAttacker(EmbeddingAttacker):
    name = "resemblyzer"
    sample_rate = SAMPLE_RATE
    encoder_label = "resemblyzer GE2E (pretrained, 256-dim)"

    def __init__(
        self,
        cache_folder: str = "results/cache",
        device: str = "cpu",
        batch_partials: int = 256,
        scoring: str = "cosine",
        lda_dim: int | None = None,
        batch_size: int = 32,
        progress: bool = True,
    ):
        super().__init__(cache_folder, device, scoring, batch_size, lda_dim, progress)
        self.batch_partials = int(batch_partials)  # partial windows per forward pass (memory)
        self._encoder = None

    # --- the encoder ---------------------------------------------------------------------------

    def _load(self) -> None:
        if self._encoder is not None:
            return
        try:
            with (
                warnings.catch_warnings()
            ):  # webrtcvad imports pkg_resources, which warns of its removal
                warnings.simplefilter("ignore", UserWarning)
                import resemblyzer  # noqa: F401
                from resemblyzer import VoiceEncoder
        except ImportError as err:
            raise DataError(
                f"the resemblyzer attacker needs the resemblyzer package ({err})",
                hint=_install_hint(),
            ) from None
        self._encoder = VoiceEncoder(self.device, verbose=False)

    def model_files(self) -> list:
        """The installed package's weights (found without importing it)."""
        from sparc_eval.plugins import package_folder

        root = package_folder("resemblyzer")
        return [root / "pretrained.pt"] if root else []

    def encoder_settings(self) -> dict:
        """The cache's settings: the package's version and its weights' bytes."""
        from importlib.metadata import version

        from sparc_eval.digest import content_digest

        files = self.model_files()
        return {
            "encoder": "resemblyzer",
            "version": version("resemblyzer"),
            "weights": "resemblyzer/pretrained.pt",
            "weights_sha256": content_digest(files) if files else None,
            "sample_rate": SAMPLE_RATE,
            "preprocess": "preprocess_wav",
            "embedding": f"embed_utterance(rate={RATE}, min_coverage={MIN_COVERAGE})",
        }

    def _prepare_wave(self, utt, wave: np.ndarray) -> np.ndarray:
        """Resemblyzer's preprocessing: volume normalised, long silences trimmed."""
        from resemblyzer import preprocess_wav

        wave = preprocess_wav(wave, source_sr=SAMPLE_RATE)
        if wave.size == 0:
            raise DataError(
                f"utterance {utt.id!r}: no speech left after Resemblyzer's silence trimming",
                hint="drop the utterance or check its audio",
            )
        return wave

    def _partials(self, wave: np.ndarray) -> np.ndarray:
        """(n, frames, mels) partial mel spectrograms of one utterance, cut as Resemblyzer's
        ``embed_utterance`` cuts them (1.6 s windows, rate 1.3, the last kept at 75% coverage)."""
        from resemblyzer.audio import wav_to_mel_spectrogram

        wav_slices, mel_slices = self._encoder.compute_partial_slices(len(wave), RATE, MIN_COVERAGE)
        if wav_slices[-1].stop >= len(wave):
            wave = np.pad(wave, (0, wav_slices[-1].stop - len(wave)))
        mel = wav_to_mel_spectrogram(wave)
        return np.stack([mel[s] for s in mel_slices])

    def _forward(self, partials: np.ndarray) -> np.ndarray:
        """Partial embeddings, ``batch_partials`` windows per forward pass."""
        import torch

        out = []
        with torch.no_grad():
            for at in range(0, len(partials), self.batch_partials):
                chunk = torch.from_numpy(partials[at : at + self.batch_partials]).to(self.device)
                out.append(self._encoder(chunk).cpu().numpy())
        return np.concatenate(out)

    def _embed_waves(self, waves: list) -> np.ndarray:
        """Utterance embeddings: the unit-norm mean of their partials' embeddings, as
        ``embed_utterance`` computes them, the partials of the whole batch forwarded together."""
        partials = [self._partials(w) for w in waves]
        out = self._forward(np.concatenate(partials))
        bounds = np.cumsum([0] + [len(p) for p in partials])
        means = np.stack([out[a:b].mean(axis=0) for a, b in zip(bounds[:-1], bounds[1:])])
        return (means / np.linalg.norm(means, axis=1, keepdims=True)).astype(np.float32)

    # --- the record ----------------------------------------------------------------------------

    def encoder_deviations(self) -> dict:
        scored = {
            "cosine": "scored by cosine against speaker-mean enrollment embeddings",
            "max": "scored by the highest cosine against the speaker's enrollment utterances",
            "plda": "scored by a PLDA back-end fitted on the training data's embeddings",
        }[self.scoring]
        return {
            "pretrained_resemblyzer_attacker": (
                "the attacker is not the paper's ECAPA-TDNN trained on the attack's training data but Resemblyzer's "
                "pretrained GE2E speaker encoder (trained on VoxCeleb and LibriSpeech, never on anonymized speech), "
                + scored
            )
        }
