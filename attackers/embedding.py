"""The shared base of pretrained-encoder attackers: batched, cached embeddings and their scoring.

A subclass names its model and says how to embed a batch of waveforms::

    class MyAttacker(EmbeddingAttacker):
        name = "my-encoder"
        sample_rate = 16000
        def _load(self): ...                       # build the model once
        def encoder_settings(self) -> dict: ...    # plain values: name, version, weights digest
        def _embed_waves(self, waves) -> np.ndarray: ...  # (n, D), one batched forward

The base reads each utterance at the model's rate (resampling said once per run), caches
embeddings by audio content under the model's settings, and scores trials by ``scoring``:
``cosine`` (speaker-mean enrollment, the default), ``max`` (over enrollment utterances) or
``plda`` (a back-end fitted on the training data's embeddings;
:mod:`sparc_eval.attack.embedding_scoring`). The encoder itself is never trained, so the
semi-informed scenario is refused, except with ``plda``: then the back-end is fitted on the
anonymized training speech (back-end adaptation), labelled ``semi-informed (back-end)``.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from sparc_eval.attack import AttackerBase, Needs
from sparc_eval.attack.embedding_scoring import check_scoring, fit_backend, score_embeddings
from sparc_eval.attack.trials import Trials
from sparc_eval.errors import DataError

log = logging.getLogger(f"sparc_eval.{__name__}")

SEMI_INFORMED = "semi-informed"
BACKEND_ADAPTATION_LABEL = "semi-informed (back-end)"


class EmbeddingAttacker(AttackerBase):
    name = "embedding"  # also the cache namespace
    sample_rate = 16000  # the rate _embed_waves expects
    encoder_label = ""  # how results.json names the encoder (describe()); the name when empty

    def __init__(
        self,
        cache_folder: str = "results/cache",
        device: str = "cpu",
        scoring: str = "cosine",
        batch_size: int = 32,
        lda_dim: int | None = None,
        progress: bool = True,
    ):
        self.cache_folder, self.device = cache_folder, device
        self.show_progress = bool(progress)  # a bar over the embedding pass
        self.scoring = check_scoring(scoring)
        self.batch_size = max(1, int(batch_size))
        self.lda_dim = None if lda_dim is None else int(lda_dim)
        self.needs = Needs(audio=True, training=self.scoring == "plda")
        self.backend = None  # the fitted PLDA back-end (scoring plda)
        self.n_embedded = 0  # utterances embedded by this run (the rest came from the cache)
        self._cache, self._resampling_said = None, False
        self._held = {}  # cache key -> vector, this run's: prepare, score and singling out read once

    # --- what a subclass defines ---------------------------------------------------------------

    def _load(self) -> None:
        """Build the model once (called before every embedding pass: return early when built)."""
        raise NotImplementedError

    def encoder_settings(self) -> dict:
        """Plain values identifying the model (name, version, weights digest): the cache key."""
        raise NotImplementedError

    def _embed_waves(self, waves: list) -> np.ndarray:
        """(n, D) embeddings of n 1-D float32 waveforms at ``sample_rate``, one batched forward."""
        raise NotImplementedError

    def _prepare_wave(self, utt, wave: np.ndarray) -> np.ndarray:
        """A hook for the model's own preprocessing of one utterance (identity here)."""
        return wave

    def encoder_deviations(self) -> dict:
        """{name: sentence} for using this pretrained encoder instead of the paper's attacker."""
        return {
            f"pretrained_{self.name}_attacker": (
                f"the attacker is not the paper's ECAPA-TDNN trained on the attack's training data but "
                f"the pretrained {self.name} speaker encoder, never trained on anonymized speech"
            )
        }

    # --- the scenario --------------------------------------------------------------------------

    def refusal(self, plan) -> str | None:
        """Why this attacker cannot run the plan's scenario (None when it can)."""
        if plan.scenario == SEMI_INFORMED and self.scoring != "plda":
            return (
                f"the {self.name} attacker cannot run the {plan.scenario} scenario: it is a pretrained "
                "encoder that is never trained, so it cannot be trained on anonymized speech (with "
                f"scoring: plda it adapts its back-end instead; scoring is {self.scoring})"
            )
        return None

    def scenario_label(self, plan) -> str:
        """The scenario as this attacker serves it: semi-informed with plda is back-end adaptation."""
        if plan.scenario == SEMI_INFORMED and self.scoring == "plda":
            return BACKEND_ADAPTATION_LABEL
        return plan.scenario

    def _check(self, plan) -> None:
        why = self.refusal(plan)
        if why:
            raise DataError(
                why,
                hint="use scenario original, ignorant or lazy-informed, scoring: plda, or a trained "
                "attacker (hparams/mel.yaml) for semi-informed",
            )

    # --- embeddings ----------------------------------------------------------------------------

    def _open_cache(self):
        if self._cache is None:
            from sparc_eval.cache import ArrayCache

            self._cache = ArrayCache(self.cache_folder, self.name, self.encoder_settings())
        return self._cache

    def _read(self, utt) -> np.ndarray:
        """The utterance at the model's rate; the first resampled file of a run is logged."""
        from sparc_eval.speech.audio import read_utterance, resample

        wave, rate = read_utterance(utt, sample_rate=None)
        if rate != self.sample_rate:
            if not self._resampling_said:
                log.info(
                    "%s: resampling audio from %d Hz to the encoder's %d Hz (e.g. %s)",
                    self.name,
                    rate,
                    self.sample_rate,
                    utt.id,
                )
                self._resampling_said = True
            wave = resample(wave, rate, self.sample_rate)
        return self._prepare_wave(utt, np.asarray(wave, dtype=np.float32))

    def _embed_batch(self, batch: list, out: dict) -> None:
        """Embed (utterance, cache key) pairs in one forward, cache and collect them."""
        vectors = np.asarray(self._embed_waves([self._read(u) for u, _ in batch]), dtype=np.float32)
        for (utt, key), vector in zip(batch, vectors):
            self._open_cache().put(key, vector)
            out[utt.id] = self._held[key] = vector
        self.n_embedded += len(batch)

    def embed(self, utterances) -> dict:
        """{utterance id: embedding}, from the cache where it holds them, else in batches."""
        from sparc_eval.cache import content_key

        self._load()
        start, out, todo = time.perf_counter(), {}, {}
        for utt in utterances:
            if utt.id in out or utt.id in todo:
                continue
            key = content_key(utt, source="audio")
            cached = self._held.get(key)
            if cached is None:
                cached = self._open_cache().get(key)
            if cached is not None:
                out[utt.id] = self._held[key] = cached
            else:
                todo[utt.id] = (utt, key)
        pending = list(todo.values())
        batches = range(0, len(pending), self.batch_size)
        for at in self.progress(batches, desc=f"{self.name} embeddings") if pending else batches:
            self._embed_batch(pending[at : at + self.batch_size], out)
        self.timings_s["embeddings"] = (
            self.timings_s.get("embeddings", 0.0) + time.perf_counter() - start
        )
        return out

    def embeddings(self, plan) -> dict:
        """{utterance id: embedding} of the plan's enrollment and trial utterances."""
        return self.embed([*plan.enroll_utterances(), *plan.trial_utterances()])

    # --- the contract --------------------------------------------------------------------------

    def prepare(self, plan) -> None:
        """Refuse an unserved scenario before any work, then embed (and cache) what the run reads."""
        self._check(plan)
        if self.needs.training:
            self.embed(plan.train)
        self.embeddings(plan)

    def fit(self, train) -> None:
        """Nothing to learn for cosine and max; plda fits its back-end on the training embeddings."""
        if self.scoring != "plda":
            return
        utterances = list(train)
        vectors = self.embed(utterances)
        start = time.perf_counter()
        self.backend = fit_backend(
            np.vstack([vectors[u.id] for u in utterances]),
            [u.speaker for u in utterances],
            lda_dim=self.lda_dim,
        )
        self.timings_s["backend"] = time.perf_counter() - start

    def score(self, plan) -> Trials:
        self._check(plan)
        embeddings = self.embeddings(plan)
        utt2spk = plan.eval_original.utt2spk()
        pairs = plan.split.trial_pairs(utt2spk)
        scores = score_embeddings(
            embeddings, plan.split.enroll, pairs, scoring=self.scoring, backend=self.backend
        )
        if self.scoring == "plda":
            self.notes["backend"] = self._backend_note(embeddings, plan.split.enroll, pairs, scores)
        return Trials.from_pairs(pairs, scores, utt2spk)

    def _backend_note(self, embeddings: dict, enroll: dict, pairs: list, plda: np.ndarray) -> dict:
        """PLDA against cosine on the same trials: whether the back-end earns its place."""
        from sparc_eval.metrics import eer

        labels = np.array([bool(p[2]) for p in pairs])
        cosine_eer = eer(score_embeddings(embeddings, enroll, pairs), labels).eer
        plda_eer = eer(plda, labels).eer
        note = {
            "cosine_eer": cosine_eer,
            "plda_eer": plda_eer,
            "beats_cosine": bool(plda_eer < cosine_eer),
            "lda_dim": self.backend.lda_dim,
            "n_train_speakers": self.backend.n_speakers,
            "notes": list(self.backend.notes),
        }
        if not note["beats_cosine"]:
            note["notes"].append(
                f"the PLDA back-end ({self.backend.n_speakers} training speakers, LDA to "
                f"{self.backend.lda_dim} dimensions) does not beat cosine scoring on these trials "
                f"(EER {plda_eer:.3f} against {cosine_eer:.3f})"
            )
        return note

    def describe(self) -> dict:
        described = {
            "features": self.name,
            "encoder": self.encoder_label or self.name,
            "training": "PLDA back-end" if self.scoring == "plda" else "none",
            "scoring": self.scoring,
        }
        if self.scoring == "plda":
            described["lda_dim"] = self.lda_dim
        return described

    def deviations(self, plan) -> dict:
        out = dict(self.encoder_deviations())
        if self.scoring == "max":
            out["max_similarity_scoring"] = (
                "trials are scored by the highest cosine against any one of the speaker's enrollment "
                "utterances (VoxGuard's rule), not against the speaker-mean enrollment embedding"
            )
        if self.scoring == "plda":
            out["plda_scoring"] = (
                "trials are scored by a PLDA back-end (SpeechBrain's PLDA_LDA, after centring, LDA and "
                "length normalisation) fitted on the training data's embeddings, not by cosine"
            )
        if self.scenario_label(plan) == BACKEND_ADAPTATION_LABEL:
            out["backend_adaptation"] = (
                "semi-informed is served by back-end adaptation: the encoder stays pretrained and only "
                "the PLDA back-end is fitted on anonymized training speech, where the VoicePrivacy "
                "semi-informed attacker retrains the whole speaker model"
            )
        return out
