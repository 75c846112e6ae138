"""Attribute-task trials (sex, age, accent and any other attribute; paper A.1.1).

The probe speaker is paired with *other* speakers whose label for the task is known, and a
trial is positive when both labels agree: same-episode partners give easy positives or hard
negatives, cross-episode partners hard positives or easy negatives, and the classes are not
balanced (with the topic control, each cross-episode positive is matched with a negative).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Optional

import numpy as np

from ..data.attributes import accent_region, age_group
from ..errors import DataError
from .pairing import Pool, TrialPairing, int_codes
from .probes import Probe
from .trial_set import EN, EP, HN, HP


def task_labeller(task: str, attributes: dict):
    """speaker -> label for a task (None when unknown). ``speaker`` labels by identity."""
    if task == "speaker":
        return {spk: spk for spk in attributes}
    if task == "sex":
        return {spk: a.get("sex") for spk, a in attributes.items()}
    if task == "age":
        return {spk: age_group(a.get("age")) for spk, a in attributes.items()}
    if task == "accent":
        return {spk: accent_region(a.get("accent")) for spk, a in attributes.items()}
    available = sorted(
        {k for a in attributes.values() for k, v in a.items() if v is not None} - {"speaker"}
    )
    if not any(a.get(task) is not None for a in attributes.values()):
        raise DataError(
            f"task {task!r}: no speaker has a value for attribute {task!r}",
            hint=f"tasks are speaker, sex, age, accent or an attribute among {available}",
        )
    out = {}
    for spk, a in attributes.items():
        value = a.get(task)
        if isinstance(value, float) and math.isnan(value):
            value = None
        out[spk] = (
            None if value is None or (isinstance(value, str) and not value.strip()) else str(value)
        )
    return out


def label_codes(builder: TrialPairing, task: str) -> np.ndarray:
    """Integer code of each appearance's speaker label for a task (-1: unknown)."""
    labels = task_labeller(task, builder.attributes)
    return int_codes([labels.get(a.speaker) for a in builder.apps])


class AttributeTrials:
    """What one attribute task draws from each probe's pool."""

    def __init__(self, builder: TrialPairing, task: str):
        self.builder = builder
        self.task = task
        self.label_codes = label_codes(builder, task)
        self.labelled = np.flatnonzero(self.label_codes >= 0)  # where partners come from

    def probe_plans(self, probe: Probe, pool: Pool, counts: Counter) -> Optional[list]:
        """Other speakers of the episode and of other episodes, labelled by attribute agreement;
        None when the probe speaker's label is unknown (no trials, counted)."""
        b, cfg, codes, a, rng = (
            self.builder,
            self.builder.config,
            self.label_codes,
            probe.app,
            pool.rng,
        )
        mine, spk = codes[a], b.app_spk[a]
        if mine < 0:
            counts["probes_unknown_label"] += 1
            return None
        known_other = lambda c: (codes[c] >= 0) & (b.app_spk[c] != spk)
        same_label = lambda c: bool(codes[c] == mine)
        plans = b.take(
            rng,
            probe,
            pool.same_ep[known_other(pool.same_ep)],
            cfg.attribute_partners["same_episode"],
            "tail",
            same_label,
            counts,
            lambda lab: EP if lab else HN,
        )
        # positives_cross_series is appendix A.4's speaker-task control: attribute tasks keep their positives
        if cfg.negatives_cross_series:
            eligible = lambda c: known_other(c) & ~((codes[c] != mine) & b.same_series(a, c))
        else:
            eligible = known_other
        k = cfg.attribute_partners["cross_episode"]
        if not b.topic_on:
            return plans + b.cross_take(
                rng,
                probe,
                self.labelled,
                eligible,
                k,
                same_label,
                counts,
                lambda lab: HP if lab else EN,
            )
        return plans + b.matched(
            rng,
            probe,
            (self.labelled, lambda c: eligible(c) & (codes[c] == mine)),
            (self.labelled, lambda c: eligible(c) & (codes[c] != mine)),
            max(1, k // 2),
            counts,
        )
