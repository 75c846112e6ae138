"""A SPARC transcript scorer as an attacker (sparc_eval/attack/): speaker-task trials of probes
of P words against L enrollment utterances, built from what the plan's trial corpus says.

This is how the leakage comparison runs TF-IDF, stylometric, embedding and LLM scorers beside
the ECAPA attackers. The full SPARC evaluation (four tasks, every P x L, conditions, ablations)
is ``recipes/evaluate_text.py``, which uses the same trial builder and scorers.
"""

from __future__ import annotations

from dataclasses import replace

from sparc_eval.attack import AttackerBase, Needs
from sparc_eval.attack.trials import Trials  # noqa: F401  (what score() returns)
from sparc_eval.errors import DataError
from sparc_eval.text_trials.config import TRIAL_KEYS, trial_config_from_hparams
from sparc_eval.text_trials.scoring import (
    score_trials,
    scored_trials,
    trial_build_deviations,
    usable_tasks,
)
from sparc_eval.text_trials.trials import TrialBuilder, has_topic_metadata


class TextAttacker(AttackerBase):
    needs = Needs(words=True, training=False, split=False)

    def __init__(
        self,
        scorer,
        P: int = 200,
        L: int = 20,
        seed: int = 0,
        name: str | None = None,
        protocol: str = "naturalvoices",
        **trial_settings,
    ):
        unknown = set(trial_settings) - set(TRIAL_KEYS)
        if unknown:
            raise DataError(
                f"unknown trial settings {sorted(unknown)}",
                hint=f"known: {', '.join(sorted(TRIAL_KEYS))}",
            )
        self.scorer, self.P, self.L, self.seed = scorer, int(P), int(L), int(seed)
        self.trial_settings, self.protocol = dict(trial_settings), protocol
        self._built = {
            "topic_on": False,
            "topic_metadata": False,
            "n_cut": 0,
        }  # how the last trials were built
        self.name = name or getattr(scorer, "name", type(scorer).__name__)
        self.languages = getattr(scorer, "languages", None)  # a scorer need not subclass TextScorer

    def fit(self, train) -> None:
        """Nothing to learn from other speakers: the scorer fits on the trial texts (SPARC)."""

    def score(self, plan) -> Trials:
        manifest = plan.trials
        why = usable_tasks(["speaker"], manifest.speaker_attributes())["speaker"]
        if why:
            raise DataError(f"{self.name}: {why}")
        self.scorer.preflight()  # a missing API key or model fails here, before any work
        builder = TrialBuilder(manifest, self._config(), L_max=self.L)
        self._built = {
            "topic_on": builder.topic_on,
            "topic_metadata": has_topic_metadata(manifest),
            "n_cut": builder.n_cut,
        }
        ts = builder.build("speaker", [self.L])[self.L]
        return scored_trials(ts, score_trials(self.scorer, ts))

    def _config(self):
        config = trial_config_from_hparams(
            {**self.trial_settings, "seed": self.seed, "shared_text": False}
        )
        return replace(config, P=self.P, L=self.L)

    def model_files(self) -> list:
        files = getattr(self.scorer, "model_files", None)
        return list(files()) if callable(files) else []

    def describe(self) -> dict:
        return {
            "features": "text",
            "scorer": self.name,
            "scorer_settings": self.scorer.settings(),
            "P": self.P,
            "L": self.L,
            "trial_settings": self.trial_settings,
        }

    def deviations(self, plan) -> dict:
        return {
            **trial_build_deviations(self._config(), self.protocol, **self._built),
            **self.scorer.deviations(),
        }
