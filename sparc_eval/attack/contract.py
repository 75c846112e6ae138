"""The attacker contract, and running an attacker end to end: plan, fit, score, evaluate.

An attacker is any object with::

    name: str
    needs: Needs                      # what it reads: audio, words; whether it trains
    fit(train: Manifest) -> None      # learn from the training data (a no-op if it does not train)
    score(plan: DataPlan) -> Trials   # score the plan's trials (or trials of its own protocol)
    describe() -> dict                # plain settings for results.json (``run``) and cache keys
    deviations(plan) -> dict          # {name: sentence} for each departure from the paper it names
    timings_s: dict                   # optional: seconds per stage of its own (features, embeddings...)
    prepare(plan) -> None             # optional: cacheable work (features) done once, on the main process
    scores_are_llrs: bool             # optional: its scores are calibrated LLRs (act Cllr reported as such)
    refusal(plan) -> str | None       # optional: why it cannot run on this plan (e.g. a scenario it does not serve)
    scenario_label(plan) -> str       # optional: the scenario as it serves it, when that differs from the
                                      #   plan's (a pretrained encoder whose PLDA back-end is fitted on
                                      #   anonymized speech: "semi-informed (back-end)"); results.json's
                                      #   run.scenario_label
    notes: dict                       # optional: plain values it found while scoring (a back-end against
                                      #   cosine on the same trials), copied to results.json's
                                      #   run.attacker_notes
    model_files() -> list             # optional: every file or folder its weights are read from (a
                                      #   pretrained snapshot, an SSL upstream, a checkpoint it starts
                                      #   from); their bytes join the keys of its cells and models, so
                                      #   weights replaced under the same path are never reused
    embeddings(plan) -> dict          # optional, embedding attackers: {utterance id: vector} of the
                                      #   plan's enrollment and trial utterances (for analyses that
                                      #   compare voices, e.g. linkability or G_VD)

Attackers live in ``attackers/`` (or any package) and reach the library through hparams: an
``attacker:`` key built by ``!new:package.module.Class`` (an object), or by
``!name:package.module.Class`` for an attacker built from the whole hparams (SpeechBrain's
Brain needs modules, optimiser and checkpointer): the class is then called with the hparams and
SpeechBrain's ``run_opts``. Such a class may define ``derived_hparams(hparams, plan)``: keys its
definitions take from the data (the number of training speakers, the input size), set by a
second load. Registered names (entry-point group ``sparc_eval.attackers``) serve hparams that
name an attacker by ``kind``. The library never imports an attacker.

Whether an attacker applies to the data (an audio attacker on a text-only corpus) is decided
by :func:`sparc_eval.attack.run.not_applicable` before any work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..data.manifest import Manifest
from ..data.plan import DataPlan
from ..errors import DataError
from .trials import Trials

ATTACKER_GROUP = "sparc_eval.attackers"


@dataclass(frozen=True)
class Needs:
    audio: bool = False  # its features come from audio
    words: bool = False  # it reads what the utterances say
    training: bool = True  # fit() learns from the plan's training data
    split: bool = (
        True  # it scores the plan's enrollment/trial split (False: trials of its own protocol)
    )


@runtime_checkable
class Attacker(Protocol):
    name: str
    needs: Needs

    def fit(self, train: Manifest) -> None: ...

    def score(self, plan: DataPlan) -> Trials: ...

    def describe(self) -> dict: ...

    def deviations(self, plan: DataPlan) -> dict: ...


def check_attacker(obj, where: str = "attacker"):
    missing = [
        m for m in ("fit", "score", "describe", "deviations") if not callable(getattr(obj, m, None))
    ]
    if missing or not isinstance(getattr(obj, "needs", None), Needs):
        raise DataError(
            f"{where} ({type(obj).__name__}) is not an attacker: it lacks "
            f"{', '.join(missing) or 'needs (a sparc_eval.attack.Needs)'}",
            hint="see sparc_eval/attack/ for the contract",
        )
    return obj


def attacker_class(kind: str):
    """The attacker class registered under ``kind`` (entry-point group ``sparc_eval.attackers``)."""
    from ..plugins import entry_points

    registered = entry_points(ATTACKER_GROUP)
    if kind not in registered:
        raise DataError(
            f"no attacker is registered as {kind!r}; registered: {', '.join(sorted(registered)) or 'none'}",
            hint="name one, or build the attacker with !new:package.module.Class",
        )
    return registered[kind].load()
