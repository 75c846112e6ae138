"""A transcript scorer on the attacker recipe's utterance trials: the words alone, on the same
trials as the audio attackers.

SPARC's text attackers (:mod:`attackers.text.attacker`) score probes of P words against L
enrollment utterances, a trial design of their own. This one scores the split the ECAPA and
Resemblyzer attackers score: each trial utterance's words (one utterance) against all of the
claimed speaker's enrollment utterances' words (speaker-level enrollment, as the audio attackers
average their embeddings), so a words-only EER and an audio EER are two readings of the same
trials and can be compared pair by pair (the card's content reference, issue 25). Words are what
the speech says (:mod:`sparc_eval.data.words`: an STT-TTS anonymizer's own transcript, the reference
for one that keeps the words). Any :mod:`attackers.text.base` scorer fits: TF-IDF by default.
"""

from __future__ import annotations

import numpy as np

from sparc_eval.attack import AttackerBase, Needs
from sparc_eval.attack.trials import Trials
from sparc_eval.data.words import reference_text_deviation, spoken_text
from sparc_eval.text_trials.scoring import score_trials
from sparc_eval.text_trials.trials import TrialSet


def utterance_trialset(words: dict, enroll: dict, pairs: list) -> TrialSet:
    """``pairs`` of (enroll speaker, trial id, is_target) as a TrialSet: one side per trial
    utterance (its words) and one per enrollment speaker (the words of its enrollment utterances)."""
    texts = list(dict.fromkeys(words.values()))
    index = {t: i for i, t in enumerate(texts)}
    speakers = sorted(enroll)
    trial_ids = list(dict.fromkeys(t for _, t, _ in pairs))
    sides = [[index[words[u]] for u in enroll[s]] for s in speakers] + [
        [index[words[t]]] for t in trial_ids
    ]
    speaker_side = {s: i for i, s in enumerate(speakers)}
    trial_side = {t: len(speakers) + i for i, t in enumerate(trial_ids)}
    records = [
        {
            "id": f"{s}~{t}",
            "type": "utterance",
            "label": bool(y),
            "enroll": {"id": s, "speaker": s},
            "probe": {"id": t},
        }
        for s, t, y in pairs
    ]
    return TrialSet(
        texts,
        sides,
        [trial_side[t] for _, t, _ in pairs],
        [speaker_side[s] for s, _, _ in pairs],
        [bool(y) for _, _, y in pairs],
        records,
    )


class UtteranceText(AttackerBase):
    name = "text_utterances"
    needs = Needs(words=True, training=False)  # the plan's split: the audio attackers' trials

    def __init__(self, scorer, phone_text: str = "spoken", name: str | None = None):
        self.scorer, self.text = scorer, phone_text
        self.name = name or f"{getattr(scorer, 'name', type(scorer).__name__)}_utterances"
        self.languages = getattr(scorer, "languages", None)  # a scorer need not subclass TextScorer

    def fit(self, train) -> None:
        """Nothing to learn from other speakers: the scorer fits on the trial texts (SPARC)."""

    def score(self, plan) -> Trials:
        self.scorer.preflight()
        words = {
            u.id: spoken_text(u, self.text)
            for u in [*plan.enroll_utterances(), *plan.trial_utterances()]
        }
        utt2spk = plan.eval_original.utt2spk()
        pairs = plan.split.trial_pairs(utt2spk)
        scores = score_trials(self.scorer, utterance_trialset(words, plan.split.enroll, pairs))
        return Trials.from_pairs(pairs, np.asarray(scores, dtype=float), utt2spk)

    def model_files(self) -> list:
        files = getattr(self.scorer, "model_files", None)
        return list(files()) if callable(files) else []

    def describe(self) -> dict:
        return {
            "features": "text_utterances",
            "scorer": getattr(self.scorer, "name", type(self.scorer).__name__),
            "scorer_settings": self.scorer.settings(),
            "phone_text": self.text,
            "trials": "the split's: one trial utterance against the speaker's enrollment utterances",
        }

    def deviations(self, plan) -> dict:
        return {
            **reference_text_deviation(plan.utterances(), self.text),
            **self.scorer.deviations(),
            "utterance_trials": "a SPARC text scorer on single-utterance probes against speaker-level "
            "enrollment (the audio attackers' trials), not P-word probes against L "
            "utterances (SPARC A.1)",
        }
