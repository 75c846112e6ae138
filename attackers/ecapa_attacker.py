"""The content-leakage paper's attacker: an ECAPA-TDNN speaker classifier trained with AAM
softmax (SpeechBrain), scored by cosine against speaker-level mean enrollment embeddings.

Plugged in by its hparams files (``attacker: !name:attackers.ecapa_attacker.EcapaAttacker`` in
hparams/mel.yaml, phones.yaml, phone_durations.yaml, ssl_ecapa.yaml): it is built from the whole
hparams, since its Brain takes the modules, optimiser and checkpointer they define. Training
resumes from the output folder's checkpoints when the model is the same (:mod:`.resume`); a new
model may start from a pretrained ECAPA-TDNN (``init_from``). With ``feature_type: ssl`` the
self-supervised upstream (:mod:`.ssl_upstream`) is built once, at ``fit``, and becomes the Brain's
``compute_features`` module and a checkpointed recoverable.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sparc_eval.attack import AttackerBase, Needs
from sparc_eval.attack.scoring import score_pairs
from sparc_eval.attack.trials import Trials
from sparc_eval.errors import DataError

from .features import WAVEFORM_FEATURES, FeatureSettings
from .model_size import size_deviation, size_name, size_overrides
from .resume import built_on, check_resume, fingerprint_of


@dataclass(frozen=True)
class TrainingSettings:
    batch_size: int
    eval_batch_size: int
    valid_fraction: float = 0.1
    num_workers: int = 0
    chunk: object = None  # training crop: seconds of audio (mel) or phones
    seed: int = 0
    progress: bool = True

    @classmethod
    def from_hparams(cls, hp: dict) -> "TrainingSettings":
        chunk = (
            hp.get("chunk_seconds")
            if hp["feature_type"] in WAVEFORM_FEATURES
            else hp.get("chunk_phones")
        )
        return cls(
            batch_size=hp["batch_size"],
            eval_batch_size=hp.get("eval_batch_size") or hp["batch_size"],
            valid_fraction=hp.get("valid_fraction", 0.1),
            num_workers=hp.get("num_workers", 0),
            chunk=chunk,
            seed=hp.get("seed") or 0,
            progress=hp.get("progress", True),
        )


class EcapaAttacker(AttackerBase):
    """``fit(train)`` trains (or resumes) the Brain; ``score(plan)`` embeds the split's enrollment
    and trial utterances and scores every trial pair."""

    @classmethod
    def declared_needs(cls, setting) -> Needs:
        """What it will read, from its hparams keys (``setting(key)``), before anything is built:
        the card checks its content attacker with it."""
        keys = {k: v for k in ("phone_source", "recognizer") if (v := setting(k)) is not None}
        features = FeatureSettings(str(setting("feature_type") or "mel"), **keys)
        return Needs(audio=features.needs_audio, words=features.reads_words, training=True)

    def __init__(self, hparams: dict, run_opts=None):
        self.hp, self.run_opts = hparams, run_opts
        self.features = FeatureSettings.from_hparams(hparams)
        self.training = TrainingSettings.from_hparams(hparams)
        self.name = hparams.get("attacker_name") or self.features.feature_type
        self.show_progress = self.training.progress  # bars of feature extraction and embedding
        self.needs = Needs(
            audio=self.features.needs_audio, words=self.features.reads_words, training=True
        )
        self.languages = self.features.languages
        self.brain, self.n_train_utterances, self._extractor = None, None, self.features.extractor()
        self._scored = (
            None  # (plan, its embeddings) of the last score(): embeddings(plan) reuses them
        )
        if hparams.get("num_threads"):
            import torch

            torch.set_num_threads(int(hparams["num_threads"]))

    @classmethod
    def derived_hparams(cls, hp: dict, plan) -> dict:
        """The model's sizes from the data and from ``model_size`` (:mod:`.model_size`)."""
        return {
            "input_size": FeatureSettings.from_hparams(hp).input_size_for(
                _evaluated_language(plan)
            ),
            "n_train_speakers": len(plan.train.speakers()),
            **size_overrides(hp),
        }

    @contextmanager
    def _timed(self, stage: str):
        start = time.perf_counter()
        yield
        self.timings_s[stage] = self.timings_s.get(stage, 0.0) + time.perf_counter() - start

    def _features(self, utterances) -> dict | None:
        if self._extractor is None:
            return None
        with self._timed("features"):
            return self._extractor.corpus(utterances, progress=self.show_progress)

    def prepare(self, plan) -> None:
        """Compute and cache the features of every utterance the attack reads (the recipe runs
        this on the main process only, so that DDP ranks neither recompute nor race on the cache)."""
        if self._extractor is not None:
            self._features(plan.utterances())

    def fit(self, train) -> None:
        from .data import hold_out, make_dataset
        from .ecapa import AttackerBrain, sb

        hp, kind = self.hp, self.features.feature_type
        feats = self._features(train)
        trainable = [u for u in train if feats is None or feats[u.id].shape[0] > 0]
        speakers = train.speakers()  # the classifier's classes, as derived_hparams sized them
        if len({u.speaker for u in trainable}) < 2:
            raise DataError(
                f"only {len(speakers)} training speaker(s)",
                hint="an attacker needs several speakers to learn",
            )
        width = self.features.input_size_for(train.language)
        if hp["n_train_speakers"] != len(speakers) or hp["input_size"] != width:
            raise DataError(
                "hparams were loaded without the data-derived sizes",
                hint="load them with sparc_eval.attack.load_attack, which sets n_train_speakers and input_size",
            )
        index = {s: i for i, s in enumerate(speakers)}
        train_utts, valid_utts = hold_out(
            trainable, fraction=self.training.valid_fraction, seed=self.training.seed
        )
        train_set = make_dataset(
            train_utts,
            feature_type=kind,
            features=feats,
            speaker_index=index,
            chunk=self.training.chunk,
        )
        valid_set = make_dataset(
            valid_utts, feature_type=kind, features=feats, speaker_index=index, sort=True
        )
        fingerprint = fingerprint_of(hp, train)
        # it moves checkpoint folders: one process does, the others wait (DDP)
        sb.utils.distributed.run_on_main(
            check_resume, args=[hp["output_folder"], hp["save_folder"], fingerprint]
        )
        self._install_upstream()
        self._initialise()
        self.brain = AttackerBrain(
            modules=hp["modules"],
            opt_class=hp["opt_class"],
            hparams=hp,
            run_opts=self.run_opts,
            checkpointer=hp["checkpointer"],
        )
        loader = {
            "batch_size": self.training.batch_size,
            "shuffle": True,
            "num_workers": self.training.num_workers,
        }
        with self._timed("training"):
            self.brain.fit(
                hp["epoch_counter"],
                train_set,
                valid_set,
                train_loader_kwargs=loader,
                valid_loader_kwargs={"batch_size": self.training.eval_batch_size},
            )
        self.n_train_speakers, self.n_train_utterances = len(speakers), len(train_utts)

    def _install_upstream(self) -> None:
        """ssl: the upstream, built once (its hparams entry is a ``!name:`` factory, so loading the
        hparams twice does not load the model twice), computes the features and is checkpointed."""
        hp = self.hp
        if self.features.feature_type != "ssl" or "compute_features" in hp["modules"]:
            return
        upstream = hp["ssl_upstream"]
        upstream = (
            upstream() if callable(upstream) and not hasattr(upstream, "forward") else upstream
        )
        hp["modules"]["compute_features"] = upstream
        hp["checkpointer"].add_recoverable("ssl_upstream", upstream)

    def _initialise(self) -> None:
        """``init_from``: the embedding model (and, from one of our own checkpoint folders, the
        ssl layer weights) start from a pretrained model; the folder's own checkpoints, if any,
        take over when the Brain resumes."""
        from .ecapa import load_pretrained

        if not self.hp.get("init_from"):
            return
        load_pretrained(self.hp["embedding_model"], self.hp["init_from"])
        weights = Path(self.hp["init_from"]) / "ssl_upstream.ckpt"
        if self.features.feature_type == "ssl" and weights.is_file():
            self.hp["modules"]["compute_features"].load(weights)

    def _embed(self, utterances) -> dict:
        from .data import make_dataset

        dataset = make_dataset(
            utterances,
            feature_type=self.features.feature_type,
            features=self._features(utterances),
            sort=True,
        )
        with self._timed("embeddings"):
            return self.brain.embed(
                dataset, batch_size=self.training.eval_batch_size, progress=self.show_progress
            )

    def embeddings(self, plan) -> dict:
        """{utterance id: embedding} of the plan's enrollment and trial utterances, by the trained
        model (those score() used, when it scored this plan)."""
        if self._scored is not None and self._scored[0] is plan:
            return self._scored[1]
        if self.brain is None:
            raise DataError("the ECAPA attacker embeds after fit()")
        self.brain.checkpointer.recover_if_possible(min_key="error_rate")
        embeddings = {
            **self._embed(plan.enroll_utterances()),
            **self._embed(plan.trial_utterances()),
        }
        self._scored = (plan, embeddings)
        return embeddings

    def score(self, plan) -> Trials:
        if self.brain is None:
            raise DataError("the ECAPA attacker scores after fit()")
        embeddings = self.embeddings(plan)
        utt2spk = plan.eval_original.utt2spk()
        with self._timed("scoring"):
            pairs = plan.split.trial_pairs(utt2spk)
            return Trials.from_pairs(
                pairs, score_pairs(embeddings, plan.split.enroll, pairs), utt2spk
            )

    def model_files(self) -> list:
        return built_on(self.hp)

    def describe(self) -> dict:
        hp, out = self.hp, {"features": self.features.feature_type}
        out["phone_text"] = None if self.features.from_waveform else self.features.phone_text
        out["model_size"] = size_name(hp)
        if self.features.feature_type == "ssl":
            out.update(
                ssl_source=str(hp["ssl_source"]),
                freeze_upstream=bool(hp.get("freeze_upstream", True)),
                init_from=None if not hp.get("init_from") else str(hp["init_from"]),
            )
        if self.n_train_utterances is not None:
            out.update(
                n_train_speakers=self.n_train_speakers, n_train_utterances=self.n_train_utterances
            )
        return out

    def refusal(self, plan):
        """Phones of one language cannot be read by a model trained on another's (their columns
        are each language's phones)."""
        if self.features.from_waveform or not len(plan.train):
            return None
        trained, evaluated = plan.train.language, _evaluated_language(plan)
        if trained == evaluated:
            return None
        from sparc_eval.data.languages import language_name

        return (
            f"the {self.name} attacker's phones are each language's: it cannot train on "
            f"{language_name(trained)} ({plan.train.name}) and score {language_name(evaluated)} "
            "speech; train it on a corpus of the evaluated language"
        )

    def deviations(self, plan) -> dict:
        if self.features.feature_type == "ssl":
            from .ssl_upstream import vpc2026_deviations

            sizes = vpc2026_deviations(self.hp)  # its reference is VoicePrivacy 2026, not SpAnE
        else:
            sizes = size_deviation(self.hp)
        return {**sizes, **self.features.deviations(plan.utterances())}


def _evaluated_language(plan) -> str:
    """The language of the speech a plan evaluates (English for a plan without a corpus)."""
    evaluated = getattr(plan, "eval_original", None)
    return evaluated.language if evaluated is not None else "en"
