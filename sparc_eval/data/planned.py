"""A data plan as the attack reads it: what an attacker trains on, its enrollment and trial
utterances and their split, for one scenario (:func:`sparc_eval.data.plan.plan_data` makes one,
:func:`sparc_eval.data.vpc.plan_vpc` one per VoicePrivacy preset)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .manifest import Manifest
from .splits import Split

# a few anonymizer failures are left out (and listed); more than this share is an error
MAX_MISSING_SHARE = 0.05


@dataclass
class DataPlan:
    train: Manifest  # what the attacker trains on
    enroll: Manifest  # where enrollment utterances come from
    trials: Manifest  # where trial utterances come from
    split: Optional[Split]  # enrollment and trial ids (None: the attacker makes its own trials)
    eval_original: Manifest  # the original evaluation corpus: speakers, attributes, utt2spk
    scenario: str = "original"
    lists: Optional[object] = None  # VoicePrivacy trial lists scored one by one (vpc.PlannedLists)

    def enroll_utterances(self) -> list:
        ids = {u for ids in self.split.enroll.values() for u in ids}
        return [u for u in self.enroll if u.id in ids]

    def trial_utterances(self) -> list:
        ids = set(self.split.trial_ids)
        return [u for u in self.trials if u.id in ids]

    def utterances(self) -> list:
        """Every utterance the attack reads."""
        if self.split is None:
            return [*self.train, *self.trials]
        return [*self.train, *self.enroll_utterances(), *self.trial_utterances()]
