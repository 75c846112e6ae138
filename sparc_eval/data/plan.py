"""What an attack runs on: training data, enrollment and trial corpora and their split, by scenario.

Attack scenarios (VoicePrivacy Challenge):

=============== ========================= ===================== =====================
scenario        attacker trained on       enrollment            trials
=============== ========================= ===================== =====================
original        original speech           original              original
ignorant        original speech           original              anonymized
lazy-informed   original speech           anonymized            anonymized
semi-informed   anonymized training data  anonymized            anonymized
=============== ========================= ===================== =====================

Trials are the user's anonymized speech (``anon_eval_folder``); anonymized enrollment and training
speech are the attacker's, made with the same system but its own random draws when the anonymizer
has any (``anon_enroll_folder``, ``anon_train_folders``; the anonymizer card makes them).

:class:`DataSettings` is made once from the hparams; every data default lives in it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields
from typing import Optional

import numpy as np

from ..errors import DataError
from ..hparams import bounded, has_range, keys_in, read_fields
from .corpora.specs import load_spec, load_specs
from .manifest import Manifest
from .planned import MAX_MISSING_SHARE, DataPlan  # noqa: F401 (re-exported: their home before)
from .splits import Split, make_split, speaker_halves, without_utterances  # noqa: F401
from .words import mark_anonymized

SCENARIOS = ("original", "ignorant", "lazy-informed", "semi-informed")
SPLIT, ANONYMIZED = "split", "anonymized"  # the groups of DataSettings' keys


@dataclass(frozen=True)
class DataSettings:
    data_folder: Optional[str] = (
        "demo:reading"  # any path `sparc-eval corpus info` accepts, or demo:MODE
    )
    cache_folder: str = "results/cache"
    # the split (group "split"): which utterances every attacker trains on, enrolls and tests
    train_folders: Optional[list] = bounded(None, group=SPLIT)  # train on these, not data_folder
    eval_folder: Optional[str] = bounded(None, group=SPLIT)  # None: data_folder's held out
    eval_speaker_fraction: float = bounded(0.5, group=SPLIT, minimum=0.0, maximum=1.0)
    split_seed: int = bounded(0, group=SPLIT, minimum=0)
    allow_speaker_overlap: bool = False
    # the anonymized speech (group "anonymized"), by scenario
    scenario: str = bounded("original", group=ANONYMIZED)
    # anonymized training corpus (semi-informed)
    anon_train_folders: Optional[list] = bounded(None, group=ANONYMIZED)
    # anonymized evaluation corpus (other scenarios)
    anon_eval_folder: Optional[str] = bounded(None, group=ANONYMIZED)
    # enrollment speech the attacker anonymized with its own draws (lazy-/semi-informed);
    # None: anon_eval_folder
    anon_enroll_folder: Optional[str] = bounded(None, group=ANONYMIZED)
    anonymizer_name: Optional[str] = bounded(None, group=ANONYMIZED)
    # corpora anonymized by other tools
    anon_keeps_words: Optional[bool] = bounded(None, group=ANONYMIZED)
    # enrollment/trial split: VoicePrivacy lists, else id lists, else seeded (paper section 5)
    enrolls_dir: Optional[str] = bounded(None, group=SPLIT)
    trials_dirs: list = field(default_factory=list, metadata={"group": SPLIT})
    enroll_list: Optional[str] = bounded(None, group=SPLIT)
    trial_list: Optional[str] = bounded(None, group=SPLIT)
    n_enroll: int = bounded(20, group=SPLIT, minimum=1)
    max_per_speaker: int = bounded(60, group=SPLIT, minimum=1)
    min_duration: Optional[float] = bounded(2.0, group=SPLIT, minimum=0.0)
    max_duration: Optional[float] = bounded(30.0, group=SPLIT, minimum=0.0)
    train_speaker_fraction: float = bounded(
        1.0, above=0.0, maximum=1.0
    )  # train on a seeded share of the training speakers
    # (learning curves; the shares are nested)
    # VoicePrivacy data folders as they are (sparc_eval/data/vpc.py): data_folder is the challenge's
    # data folder, each trial list scored on its own, anonymized copies found by their suffix
    vpc_preset: Optional[str] = None  # vpc2024 | vpc2026 | vpc2026_track2
    anon_data_suffix: Optional[str] = (
        None  # _mcadams: libri_test_trials_f_mcadams (None: the one found)
    )
    vpc_regenerate_mixed: bool = (
        False  # build the 2026 mixed lists here (seeded; a named deviation)
    )
    vpc_train_speakers: Optional[int] = (
        None  # a seeded subset of the training speakers (a named deviation)
    )
    # where relative wav.scp paths resolve (None: each Kaldi folder; vpc2026_track2: the data
    # folder's parent, the challenge root its lists are written against)
    wav_root: Optional[str] = None
    # the language the evaluated speech is spoken in (ISO 639-1, sparc_eval.data.languages), over
    # what its manifests say; None: as read (English when they say nothing)
    language: Optional[str] = None

    def __post_init__(self):
        if self.scenario not in SCENARIOS:
            raise DataError(f"scenario {self.scenario!r} is not one of {', '.join(SCENARIOS)}")
        if self.language is not None:  # an unknown language fails before any work
            from .languages import language_code

            object.__setattr__(self, "language", language_code(self.language))
        if not 0 < float(self.train_speaker_fraction) <= 1:
            raise DataError(
                f"train_speaker_fraction must be in (0, 1], not {self.train_speaker_fraction!r}"
            )

    @classmethod
    def keys(cls) -> set:
        return {f.name for f in fields(cls)}

    @classmethod
    def split_keys(cls) -> tuple:
        """The keys that decide which utterances an attacker trains on, enrolls and tests."""
        return keys_in(cls, SPLIT)

    @classmethod
    def anonymized_keys(cls) -> tuple:
        """The keys that name the anonymized speech and the scenario it serves."""
        return keys_in(cls, ANONYMIZED)

    @classmethod
    def from_hparams(cls, hp: dict) -> "DataSettings":
        """The data keys of the hparams (absent or null keys with a default take it)."""
        defaults = cls()
        given = {
            k: hp[k]
            for k in cls.keys()
            if k in hp and (hp[k] is not None or getattr(defaults, k) is None)
        }
        if given.get("trials_dirs") is None:
            given.pop("trials_dirs", None)
        # the fields with a range: cast and checked by the one reader, naming the key
        given.update(read_fields(cls, hp, {f.name: f.name for f in fields(cls) if has_range(f)}))
        return cls(**given)

    def changed(self) -> dict:
        """The fields that differ from the library's defaults, by name."""
        default = DataSettings()
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if getattr(self, f.name) != getattr(default, f.name)
        }

    def held_out(self, manifest: Manifest) -> tuple:
        """(training, evaluation) speakers of one corpus, as every attacker holds them out."""
        return speaker_halves(
            manifest, eval_fraction=self.eval_speaker_fraction, seed=self.split_seed
        )

    def evaluation_corpus(self) -> Manifest:
        """The evaluation corpus alone (its held-out speakers when there is no eval_folder)."""
        if self.eval_folder:
            return load_spec(self.eval_folder, cache_folder=self.cache_folder)
        return self.held_out(load_specs(self.data_folder, cache_folder=self.cache_folder))[1]


def load_anonymized(specs, data: DataSettings) -> Manifest:
    """An anonymized corpus, each utterance marked as such (what its words are follows
    :mod:`sparc_eval.data.words`; ``anon_keeps_words`` declares it for corpora made by other tools)."""
    return mark_anonymized(
        load_specs(specs, cache_folder=data.cache_folder),
        name=data.anonymizer_name,
        keeps_words=data.anon_keeps_words,
    )


def _train_and_evaluation(data: DataSettings) -> tuple:
    train = load_specs(data.train_folders or data.data_folder, cache_folder=data.cache_folder)
    if data.eval_folder:
        evaluation = load_spec(data.eval_folder, cache_folder=data.cache_folder)
    else:
        train, evaluation = data.held_out(train)
    if data.train_speaker_fraction < 1:
        train = _training_share(train, data.train_speaker_fraction, data.split_seed)
    overlap = set(train.speakers()) & set(evaluation.speakers())
    if overlap and not data.allow_speaker_overlap:
        raise DataError(
            f"{len(overlap)} speakers are in both training and evaluation data, e.g. {sorted(overlap)[:3]}",
            hint="attackers are evaluated on unseen speakers; set allow_speaker_overlap: True to override",
        )
    return train, evaluation


def _training_share(train: Manifest, fraction: float, seed: int) -> Manifest:
    """A seeded share of the training speakers (at least 2); a smaller share is a subset of a
    larger one, so that learning-curve points differ only in how many speakers were added."""
    speakers = sorted(train.speakers())
    order = np.random.default_rng(seed).permutation(len(speakers))
    keep = {speakers[i] for i in order[: max(2, int(round(fraction * len(speakers))))]}
    return train.subset(lambda u: u.speaker in keep)


def _anonymized_evaluation(data: DataSettings, split: Split) -> tuple:
    """(anonymized trial corpus, anonymized enrollment corpus, ids of the split the anonymizer
    failed on). Only the utterances the split reads need to be anonymized (the anonymizer card
    anonymizes just those). Enrollment comes from ``anon_enroll_folder`` when it is given (the
    attacker's own draws of a randomized anonymizer), else from ``anon_eval_folder``."""
    if not data.anon_eval_folder:
        raise DataError(
            f"scenario {data.scenario} needs anon_eval_folder (the anonymized evaluation corpus)"
        )
    enroll_ids = {u for ids in split.enroll.values() for u in ids}
    trials = load_anonymized(data.anon_eval_folder, data)
    if not data.anon_enroll_folder:
        return (
            trials,
            trials,
            _missing(trials, enroll_ids | set(split.trial_ids), data.anon_eval_folder),
        )
    enroll = load_anonymized(data.anon_enroll_folder, data)
    missing = _missing(trials, set(split.trial_ids), data.anon_eval_folder)
    return (
        trials,
        enroll,
        sorted({*missing, *_missing(enroll, enroll_ids, data.anon_enroll_folder)}),
    )


def _missing(anonymized: Manifest, needed: set, folder) -> list:
    """The ids of ``needed`` that ``anonymized`` lacks: a few anonymizer failures are left out
    with a warning, more is an error."""
    missing = sorted(needed - set(anonymized.by_id()))
    if len(missing) > MAX_MISSING_SHARE * len(needed):
        raise DataError(
            f"{len(missing)} of the {len(needed)} enrollment and trial utterances are missing from the "
            f"anonymized corpus, e.g. {missing[:3]}",
            path=folder,
            hint="anonymize the whole evaluation corpus (failures are listed in its failures.jsonl)",
        )
    if missing:  # a few failures of the anonymizer: evaluate without them, and say so
        warnings.warn(
            f"{len(missing)} enrollment and trial utterances are missing from the anonymized corpus "
            f"(e.g. {missing[:3]}); they are left out of the evaluation",
            stacklevel=4,
        )
    return missing


def plan_data(data: DataSettings) -> DataPlan:
    """Load the corpora a scenario needs and split the evaluation speakers."""
    if data.vpc_preset:
        from .vpc import plan_vpc

        return plan_vpc(data)
    train, evaluation = _train_and_evaluation(data)
    split = make_split(
        evaluation,
        enrolls_dir=data.enrolls_dir,
        trials_dirs=data.trials_dirs,
        enroll_list=data.enroll_list,
        trial_list=data.trial_list,
        seed=data.split_seed,
        n_enroll=data.n_enroll,
        max_per_speaker=data.max_per_speaker,
        min_duration=data.min_duration,
        max_duration=data.max_duration,
    )
    anonymized = anon_enroll = None
    missing = []
    if data.scenario != "original":
        anonymized, anon_enroll, missing = _anonymized_evaluation(data, split)
    if data.scenario == "semi-informed":
        if not data.anon_train_folders:
            raise DataError(
                "scenario semi-informed needs anon_train_folders (the anonymized training corpus)"
            )
        keep = set(train.speakers())
        train = load_anonymized(data.anon_train_folders, data).subset(lambda u: u.speaker in keep)
    enroll = anon_enroll if data.scenario in ("lazy-informed", "semi-informed") else evaluation
    trials = anonymized if data.scenario != "original" else evaluation
    if (
        missing
    ):  # the split is made on the full corpus (fixed lists name every utterance), then thinned
        split = without_utterances(split, set(missing))
    # --language names the evaluated speech's language; the training corpora keep what they say
    # (an attacker trained on English may be run on German, as VoicePrivacy 2026's lazy-informed one)
    enroll, trials, evaluation = (
        m.with_language(data.language) for m in (enroll, trials, evaluation)
    )
    if not (data.eval_folder or data.train_folders):  # held out from the evaluated corpus itself
        train = train.with_language(data.language)
    return DataPlan(train, enroll, trials, split, evaluation, data.scenario)


class Plans:
    """Data plans by their settings: each distinct :class:`DataSettings` is planned once per run
    (the card and the leakage comparison hand one to every cell). Plans are shared, so a cell that
    narrows its split makes a new plan (``dataclasses.replace``) rather than changing this one."""

    def __init__(self):
        self._plans = {}
        self.planned = 0  # how many times plan_data ran

    def get(self, data: DataSettings) -> DataPlan:
        key = repr(data)
        if key not in self._plans:
            self._plans[key] = plan_data(data)
            self.planned += 1
        return self._plans[key]
