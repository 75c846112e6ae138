"""Scoring a trial set with a text scorer, and what the trials' build departs from the paper:
the blocks the text evaluation and the text attackers share."""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..attack.trials import Trials
from ..errors import DataError
from .protocol import trial_deviations
from .ray_scoring import ScoringRunner
from .trials import TrialConfig, task_labeller


def scored_trials(ts, scores) -> Trials:
    """A trial set's scores as :class:`~sparc_eval.attack.trials.Trials` (enrollment and probe ids and
    speakers, trial types as tags); NaN scores stay unscored."""
    return Trials(
        ts.column("enroll_id").tolist(),
        ts.column("probe_id").tolist(),
        scores,
        ts.labels,
        test_speaker=ts.column("probe_speaker").tolist(),
        enroll_speaker=ts.column("enroll_speaker").tolist(),
        tags={"type": ts.types},
    )


def usable_tasks(tasks, attributes: dict) -> dict:
    """task -> None when at least two speakers have a label for it, else why not."""
    usable = {}
    for task in tasks:
        try:
            labels = task_labeller(task, attributes)
        except DataError as err:
            usable[task] = str(err)
            continue
        n_known = sum(v is not None for v in labels.values())
        usable[task] = (
            None
            if n_known >= 2
            else f"{n_known} speaker(s) have a {task} label; the task needs two"
        )
    return usable


def score_trials(scorer, ts, scoring: Optional[ScoringRunner] = None) -> np.ndarray:
    """Fit ``scorer`` on the trial set's unique texts (here), then score its trials: in this process
    at once, or in batches here or over Ray actors as ``scoring`` says (:mod:`.ray_scoring`)."""
    if not len(ts):
        return np.zeros(0)
    scorer.fit(ts.texts)
    scores = np.asarray(
        scorer.score(ts) if scoring is None else scoring.score(scorer, ts), dtype=float
    )
    if scores.shape != (len(ts),):
        raise DataError(f"scorer {scorer.name} returned {scores.shape} scores for {len(ts)} trials")
    return scores


def trial_build_deviations(
    config: TrialConfig, protocol: str, *, topic_on: bool, topic_metadata: bool, n_cut: int
) -> dict:
    """How the trials were built against the paper's ``protocol``: {name: sentence}."""
    out = trial_deviations(config, protocol, topic_on=topic_on)
    if topic_on and not topic_metadata:
        out["topic_metadata"] = (
            "the topic control is on but no episode has a title, description or category: "
            "every pair falls in one stratum, so it only balances the classes"
        )
    if config.trial_sample is not None:
        out["trial_sample"] = (
            f"only the trials of a seeded sample of probes were scored, at least "
            f"{config.trial_sample} per task and setting (trials.sampled_from: how many "
            "there were); the paper scores every trial"
        )
    if n_cut:
        out["probes_cut"] = (
            f"{n_cut} probes end in an utterance cut at a word boundary to land in P +- "
            f"{config.tolerance} words; the paper accumulates whole utterances (`strict: True` "
            "skips such probes instead)"
        )
    return out
