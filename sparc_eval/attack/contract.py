"""The attacker contract, and running an attacker end to end: plan, fit, score, evaluate.

An attacker is any object with::

    name: str
    needs: Needs                      # what it reads: audio, words; whether it trains
    fit(train: Manifest) -> None      # learn from the training data (a no-op if it does not train)
    score(plan: DataPlan) -> Trials   # score the plan's trials (or trials of its own protocol)
    describe() -> dict                # plain settings for results.json (``run``) and cache keys
    deviations(plan) -> dict          # {name: sentence} for each departure from the paper it names

Optional members have defaults in :class:`AttackerBase` (subclass it, as the attackers in
``attackers/`` do); the engine reads them through :func:`optional`, which gives the base's
default to an attacker that does not subclass it and lacks the member::

    timings_s: dict                   # seconds per stage of its own (features, embeddings...);
                                      #   default: an empty dict of each instance
    prepare(plan) -> None             # cacheable work (features) done once, on the main process;
                                      #   default: nothing
    scores_are_llrs: bool             # its scores are calibrated LLRs (act Cllr reported as such);
                                      #   default: False
    refusal(plan) -> str | None       # why it cannot run on this plan (e.g. a scenario it does not
                                      #   serve); default: None (it can)
    scenario_label(plan) -> str|None  # the scenario as it serves it, when that differs from the
                                      #   plan's (a pretrained encoder whose PLDA back-end is fitted on
                                      #   anonymized speech: "semi-informed (back-end)"); results.json's
                                      #   run.scenario_label; default: None (not recorded)
    notes: dict                       # plain values it found while scoring (a back-end against
                                      #   cosine on the same trials), copied to results.json's
                                      #   run.attacker_notes; default: an empty dict of each instance
    model_files() -> list             # every file or folder its weights are read from (a
                                      #   pretrained snapshot, an SSL upstream, a checkpoint it starts
                                      #   from); their bytes join the keys of its cells and models, so
                                      #   weights replaced under the same path are never reused;
                                      #   default: []
    embeddings(plan) -> dict | None   # embedding attackers: {utterance id: vector} of the plan's
                                      #   enrollment and trial utterances (for analyses that compare
                                      #   voices, e.g. singling out, linkability or G_VD); default:
                                      #   None (not an embedding attacker)
    show_progress: bool               # progress bars of its long passes (``progress`` in hparams);
                                      #   default: True; ``self.progress(iterable, desc)`` wraps a
                                      #   pass in a bar on stderr when it is set

Attackers live in ``attackers/`` (or any package) and reach the library through hparams: an
``attacker:`` key built by ``!new:package.module.Class`` (an object), or by
``!name:package.module.Class`` for an attacker built from the whole hparams (SpeechBrain's
Brain needs modules, optimiser and checkpointer): the class is then called with the hparams and
SpeechBrain's ``run_opts``. Such a class may define the classmethod
``derived_hparams(hparams, plan)``: keys its definitions take from the data (the number of
training speakers, the input size), set by a second load (default: none); and the classmethod
``declared_needs(setting)``: its needs from its hparams keys (``setting(key)``), before it is
built (default: the class's ``needs``). Registered names (entry-point group
``sparc_eval.attackers``) serve hparams that name an attacker by ``kind``. The library never
imports an attacker.

Whether an attacker applies to the data (an audio attacker on a text-only corpus) is decided
by :func:`sparc_eval.attack.run.not_applicable` before any work.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Optional, Protocol, runtime_checkable

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
    """The members every attacker has (the optional ones: :class:`AttackerBase`)."""

    name: str
    needs: Needs

    def fit(self, train: Manifest) -> None: ...

    def score(self, plan: DataPlan) -> Trials: ...

    def describe(self) -> dict: ...

    def deviations(self, plan: DataPlan) -> dict: ...


class _OwnDict:
    """A class attribute that is an empty dict of each instance, made on first read (so that a
    subclass's ``__init__`` need not call the base's, and no two instances share one)."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return obj.__dict__.setdefault(self.name, {})


class AttackerBase:
    """Base class of attackers: the optional members of the contract (the module doc), with their
    defaults. A subclass sets ``name`` and ``needs`` (a class attribute, or one of the instance
    when the settings decide it) and defines ``fit``, ``score``, ``describe`` and ``deviations``;
    it overrides what else it has.

    A complete attacker::

        from sparc_eval.attack import AttackerBase, Needs

        class BagOfPhones(AttackerBase):
            name = "bag_of_phones"
            needs = Needs(words=True, training=False)
            def fit(self, train): ...
            def score(self, plan): ...      # -> Trials
            def describe(self): return {"features": "bag_of_phones"}
            def deviations(self, plan): return {}
    """

    #: seconds per stage of its own (features, embeddings, ...), in results.json's run.timings_s
    timings_s = _OwnDict()
    #: plain values it found while scoring, in results.json's run.attacker_notes
    notes = _OwnDict()
    #: True when its scores are calibrated LLRs (a PLDA back-end); the actual Cllr is then its own
    scores_are_llrs = False
    #: the ISO 639-1 codes of the languages it serves, or None for every scored language
    languages = None
    #: progress bars over its long passes (:meth:`progress`), set from the hparams' ``progress``
    show_progress = True

    def prepare(self, plan: DataPlan) -> None:
        """Cacheable work (features, embeddings) done once, on the main process, before ``fit``."""

    def refusal(self, plan: DataPlan) -> Optional[str]:
        """Why it cannot run on ``plan`` (a scenario it does not serve); None when it can."""
        return None

    def scenario_label(self, plan: DataPlan) -> Optional[str]:
        """The scenario as it serves it, when it records one (results.json's run.scenario_label)."""
        return None

    def model_files(self) -> list:
        """Every file or folder its weights are read from: their bytes key its cells and models."""
        return []

    def embeddings(self, plan: DataPlan) -> Optional[dict]:
        """{utterance id: vector} of the plan's enrollment and trial utterances; None when it is not
        an embedding attacker (singling out is then not applicable)."""
        return None

    @classmethod
    def derived_hparams(cls, hparams: dict, plan: DataPlan) -> dict:
        """Hparams keys taken from the data (a ``!name:`` class's model sizes): none by default."""
        return {}

    @classmethod
    def declared_needs(cls, setting) -> Optional[Needs]:
        """What it will read, from its hparams keys (``setting(key)``), before it is built: the
        class's ``needs`` (None when only an instance knows them)."""
        return getattr(cls, "needs", None)

    def progress(self, iterable, desc: str, total: Optional[int] = None):
        """``iterable`` in a progress bar on stderr when ``show_progress`` is set, else as it is."""
        if not self.show_progress:
            return iterable
        import sys

        from tqdm import tqdm

        return tqdm(iterable, desc=desc, total=total, leave=False, file=sys.stderr)


# the optional members: what the base defines, but its progress helper
OPTIONAL = tuple(n for n in vars(AttackerBase) if not n.startswith("_") and n != "progress")


def provides(attacker, name: str) -> bool:
    """Whether ``attacker`` (an object or a class) has its own optional member ``name``, not
    :class:`AttackerBase`'s default."""
    if not isinstance(attacker, type) and name in getattr(attacker, "__dict__", {}):
        return getattr(attacker, name) is not None  # set on the instance
    cls = attacker if isinstance(attacker, type) else type(attacker)
    own = inspect.getattr_static(cls, name, None)
    return own is not None and own is not inspect.getattr_static(AttackerBase, name, None)


def optional(attacker, name: str):
    """The optional member ``name`` of ``attacker`` (an object, or a ``!name:`` class): its own,
    else :class:`AttackerBase`'s default (for an attacker that does not subclass it)."""
    if name not in OPTIONAL:
        raise ValueError(f"{name!r} is not an optional attacker member ({', '.join(OPTIONAL)})")
    try:
        return getattr(attacker, name)
    except AttributeError:
        pass
    default = inspect.getattr_static(AttackerBase, name)
    if isinstance(default, _OwnDict):
        return {}  # nothing of its own: an empty dict, not written onto a foreign object
    if hasattr(default, "__get__"):  # a method (bound to the attacker) or a classmethod
        cls = attacker if isinstance(attacker, type) else type(attacker)
        return default.__get__(None if isinstance(attacker, type) else attacker, cls)
    return default


def check_attacker(obj, where: str = "attacker"):
    """``obj`` when it has the contract's required members (it need not subclass
    :class:`AttackerBase`: :func:`optional` gives it the defaults), else a DataError."""
    missing = [
        m for m in ("fit", "score", "describe", "deviations") if not callable(getattr(obj, m, None))
    ]
    if missing or not isinstance(getattr(obj, "needs", None), Needs):
        raise DataError(
            f"{where} ({type(obj).__name__}) is not an attacker: it lacks "
            f"{', '.join(missing) or 'needs (a sparc_eval.attack.Needs)'}",
            hint="see sparc_eval/attack/contract.py for the contract (subclass sparc_eval.attack.AttackerBase)",
        )
    return obj


def attacker_class(kind: str):
    """The attacker class registered under ``kind`` (entry-point group ``sparc_eval.attackers``)."""
    from ..plugins import lookup

    hint = "name one, or build the attacker with !new:package.module.Class"
    return lookup(ATTACKER_GROUP, kind, what="attacker", hint=hint)
