"""A pretrained speaker encoder as attacker: Resemblyzer's GE2E voice encoder, no training.

A voice attack for users without GPUs: ``resemblyzer`` (the ``voice`` extra) ships its weights
inside the wheel (``resemblyzer/pretrained.pt``, Apache-2.0), so nothing is trained or fetched.
Each utterance is read at 16 kHz (its segment, :func:`sparc_eval.speech.audio.read_utterance`),
preprocessed by Resemblyzer (volume normalisation, long silences trimmed by a VAD) and embedded
(256 dimensions, unit norm); enrollment embeddings are averaged per speaker and trials scored by
cosine, as for ECAPA (:func:`sparc_eval.attack.scoring.score_pairs`). Embeddings are cached on disk,
keyed by the audio's content.

It serves the original, ignorant and lazy-informed scenarios. It cannot serve semi-informed,
whose attacker is trained on anonymized speech: it refuses that scenario with a DataError.

    python recipes/train_attacker.py hparams/resemblyzer.yaml [--key=value ...]
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from sparc_eval.attack import Needs
from sparc_eval.attack.scoring import score_pairs
from sparc_eval.attack.trials import Trials
from sparc_eval.errors import DataError

SAMPLE_RATE = 16000  # Resemblyzer's encoder works at 16 kHz
RATE, MIN_COVERAGE = (
    1.3,
    0.75,
)  # embed_utterance's defaults: partial windows per second, last window kept
UNTRAINABLE_SCENARIOS = ("semi-informed",)


def _install_hint() -> str:
    return "install the voice extra: pip install -e '.[voice]' (see docs/plugins/attacker.md, 'A pretrained voice attacker')"


class ResemblyzerAttacker:
    name = "resemblyzer"
    needs = Needs(audio=True, training=False)

    def __init__(
        self, cache_folder: str = "results/cache", device: str = "cpu", batch_partials: int = 256
    ):
        self.cache_folder, self.device, self.batch_partials = (
            cache_folder,
            device,
            int(batch_partials),
        )
        self._encoder, self._cache = None, None
        self.n_embedded = 0  # utterances embedded by this run (the rest came from the cache)
        self.timings_s = {}

    # --- the scenario --------------------------------------------------------------------------

    @staticmethod
    def refusal(plan) -> str | None:
        """Why this attacker cannot run the plan's scenario (None when it can)."""
        if plan.scenario in UNTRAINABLE_SCENARIOS:
            return (
                f"the resemblyzer attacker cannot run the {plan.scenario} scenario: it is a pretrained "
                "encoder that is never trained, so it cannot be trained on anonymized speech"
            )
        return None

    def _check(self, plan) -> None:
        why = self.refusal(plan)
        if why:
            raise DataError(
                why,
                hint="use scenario original, ignorant or lazy-informed, or a trained attacker "
                "(hparams/mel.yaml) for semi-informed",
            )

    # --- the encoder and its cache -------------------------------------------------------------

    def _load(self):
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
        from importlib.metadata import version

        from sparc_eval.cache import ArrayCache

        self._encoder = VoiceEncoder(self.device, verbose=False)
        self.settings = {
            "encoder": "resemblyzer",
            "version": version("resemblyzer"),
            "weights": "resemblyzer/pretrained.pt",
            "sample_rate": SAMPLE_RATE,
            "preprocess": "preprocess_wav",
            "embedding": f"embed_utterance(rate={RATE}, min_coverage={MIN_COVERAGE})",
        }
        self._cache = ArrayCache(self.cache_folder, "resemblyzer", self.settings)

    def _partials(self, utt) -> np.ndarray:
        """(n, frames, mels) partial mel spectrograms of one utterance, cut as Resemblyzer's
        ``embed_utterance`` cuts them (1.6 s windows, rate 1.3, the last kept at 75% coverage)."""
        from resemblyzer import preprocess_wav
        from resemblyzer.audio import wav_to_mel_spectrogram

        from sparc_eval.speech.audio import read_utterance

        wav, sr = read_utterance(utt, sample_rate=SAMPLE_RATE)
        wav = preprocess_wav(wav, source_sr=sr)
        if wav.size == 0:
            raise DataError(
                f"utterance {utt.id!r}: no speech left after Resemblyzer's silence trimming",
                hint="drop the utterance or check its audio",
            )
        wav_slices, mel_slices = self._encoder.compute_partial_slices(len(wav), RATE, MIN_COVERAGE)
        if wav_slices[-1].stop >= len(wav):
            wav = np.pad(wav, (0, wav_slices[-1].stop - len(wav)))
        mel = wav_to_mel_spectrogram(wav)
        return np.stack([mel[s] for s in mel_slices])

    def _embed_batch(self, partials: list) -> list:
        """Utterance embeddings (the unit-norm mean of their partials' embeddings, as
        ``embed_utterance`` computes them), the partials of several utterances in one forward pass."""
        import torch

        with torch.no_grad():
            out = (
                self._encoder(torch.from_numpy(np.concatenate(partials)).to(self.device))
                .cpu()
                .numpy()
            )
        embeddings, at = [], 0
        for p in partials:
            mean = out[at : at + len(p)].mean(axis=0)
            embeddings.append((mean / np.linalg.norm(mean)).astype(np.float32))
            at += len(p)
        return embeddings

    def embeddings(self, utterances) -> dict:
        """{utterance id: 256-dim embedding}, from the cache where it holds them."""
        from sparc_eval.cache import content_key

        self._load()
        start, out, todo, pending = time.perf_counter(), {}, [], set()

        def flush():
            for (utt_id, key, _), emb in zip(todo, self._embed_batch([p for _, _, p in todo])):
                self._cache.put(key, emb)
                out[utt_id] = emb
            self.n_embedded += len(todo)
            todo.clear()
            pending.clear()

        for utt in utterances:
            if utt.id in out or utt.id in pending:
                continue
            key = content_key(utt, source="audio")
            emb = self._cache.get(key)
            if emb is not None:
                out[utt.id] = emb
                continue
            todo.append((utt.id, key, self._partials(utt)))
            pending.add(utt.id)
            if sum(len(p) for _, _, p in todo) >= self.batch_partials:
                flush()
        if todo:
            flush()
        self.timings_s["embeddings"] = (
            self.timings_s.get("embeddings", 0.0) + time.perf_counter() - start
        )
        return out

    # --- the contract --------------------------------------------------------------------------

    def prepare(self, plan) -> None:
        """Refuse an untrainable scenario before any work, then embed (and cache) every utterance."""
        self._check(plan)
        self.embeddings([*plan.enroll_utterances(), *plan.trial_utterances()])

    def fit(self, train) -> None:
        """Nothing to learn: the encoder is pretrained."""

    def score(self, plan) -> Trials:
        self._check(plan)
        embeddings = self.embeddings([*plan.enroll_utterances(), *plan.trial_utterances()])
        utt2spk = plan.eval_original.utt2spk()
        pairs = plan.split.trial_pairs(utt2spk)
        return Trials.from_pairs(pairs, score_pairs(embeddings, plan.split.enroll, pairs), utt2spk)

    def describe(self) -> dict:
        return {
            "features": "resemblyzer",
            "encoder": "resemblyzer GE2E (pretrained, 256-dim)",
            "training": "none",
        }

    def deviations(self, plan) -> dict:
        return {
            "pretrained_resemblyzer_attacker": (
                "the attacker is not the paper's ECAPA-TDNN trained on the attack's training data but Resemblyzer's "
                "pretrained GE2E speaker encoder (trained on VoxCeleb and LibriSpeech, never on anonymized speech), "
                "scored by cosine against speaker-mean enrollment embeddings"
            )
        }
