"""The text evaluation's settings, read from its hparams once (:meth:`TextRunSettings.from_hparams`);
the library (:func:`sparc_eval.jobs.text.evaluate.evaluate_from_settings`) takes these, never the
hparams dict. Each default lives in one place: a field of :class:`TextRunSettings`, of
:class:`~sparc_eval.text_trials.trials.TrialConfig` (the trial keys and ``seed``) or of
:class:`~sparc_eval.text_trials.shared_text.SharedTextConfig` (the ``shared_text_*`` keys). A key that
is absent, null or empty takes its default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional, Union

import numpy as np

from ...data.languages import language_code
from ...data.words import TEXT_CHOICES
from ...digest import text_digest
from ...errors import DataError
from ...hparams import bounded, hparams_keys, keys_in, library_only, read_fields
from ...metrics.bootstrap import BOOTSTRAP_UNITS, DEFAULT_BOOTSTRAP_UNIT
from ...text_trials.config import (  # noqa: F401 (SHARED_TEXT_KEYS: re-exported)
    SHARED_TEXT_KEYS,
    TRIAL_KEYS,
    shared_text_from_hparams,
    trial_config_from_hparams,
)
from ...text_trials.protocol import PROTOCOLS
from ...text_trials.ray_scoring import ScoringRunner
from ...text_trials.trials import TrialConfig
from .compare import BASE_SETTING

__all__ = [
    "BOOTSTRAP_UNITS",
    "SHARED_TEXT_KEYS",
    "TRIAL_KEYS",
    "hparams_digest",
    "TextEvaluationOptions",
    "TextRunSettings",
    "parse_settings",
    "scorer_list",
    "scoring_from_hparams",
    "shared_text_from_hparams",
    "trial_config_from_hparams",
]

REQUIRED = ("data_folder", "output_folder", "scorer")
PLAIN = "plain"  # the group of the run's own keys the one reader reads as they are


def _unset(value) -> bool:
    return value is None or (isinstance(value, (str, list, tuple)) and not value)


def parse_settings(P=None, L=None, settings=None) -> list:
    """[(P, L), ...]: explicit ``settings`` pairs, else every combination of ``P`` x ``L``
    (each defaulting to the base setting's)."""
    if settings:
        out = []
        for s in settings:
            if isinstance(s, str):
                m = re.fullmatch(r"P(\d+)_L(\d+)", s.strip())
                if not m:
                    raise DataError(f"setting {s!r} is not P<P>_L<L>")
                out.append((int(m.group(1)), int(m.group(2))))
            else:
                p, l_ = s
                out.append((int(p), int(l_)))
        return out
    Ps = [int(x) for x in np.atleast_1d(P if P is not None else [BASE_SETTING[0]])]
    Ls = [int(x) for x in np.atleast_1d(L if L is not None else [BASE_SETTING[1]])]
    return [(p, l_) for p in Ps for l_ in Ls]


def scorer_list(scorer) -> list:
    """One scorer or several (a list); names must differ (they key the results)."""
    scorers = list(scorer) if isinstance(scorer, (list, tuple)) else [scorer]
    if not scorers:
        raise DataError("no scorer to evaluate")
    names = [s.name for s in scorers]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DataError(
            f"several scorers are named {repeated}",
            hint="give each its own name (model_name, name)",
        )
    return scorers


# how the trials are scored, not what: left out of hparams_sha256 (the scores are the same)
SCORING_KEYS = tuple(hparams_keys(ScoringRunner))


def hparams_digest(hparams: dict) -> str:
    """What results.json records as ``run.hparams_sha256``: every key but the scorer objects and
    the ``SCORING_KEYS`` (in ``overrides`` too)."""

    def kept(k, v):
        return (
            {o: x for o, x in v.items() if o not in SCORING_KEYS}
            if k == "overrides" and isinstance(v, dict)
            else v
        )

    return text_digest(
        repr(
            sorted(
                (k, repr(kept(k, v)))
                for k, v in hparams.items()
                if k != "scorer" and k not in SCORING_KEYS
            )
        )
    )


def _tasks(key: str, value) -> tuple:
    tasks = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(t, str) and t for t in tasks):
        raise DataError(
            f"hparams: {key} is a list of task names (speaker or attribute names), not {value!r}",
            hint="tasks: [speaker, sex, age, accent]",
        )
    return tasks


def _columns(key: str, value):
    if not isinstance(value, (dict, str, Path)):
        raise DataError(
            f"hparams: {key} is a column mapping (a dict or a YAML file), not {value!r}"
        )
    return value


# hparams key -> reader(key, value) of the TextRunSettings field of that name, for the values the
# one reader (hparams.read_fields) does not check: the plain fields (PLAIN) go through it
_READERS = {
    "columns": _columns,
    "tasks": _tasks,
    "language": lambda _k, v: language_code(v),
    "hparams_file": lambda _k, v: v,
    "overrides": lambda _k, v: v,
}


def scoring_from_hparams(hp: dict) -> ScoringRunner:
    """``runner`` (local | ray), ``ray_address``, ``num_workers`` and ``score_batch_size``
    (:mod:`.ray_scoring`); absent keys keep today's scoring: all trials at once, here."""
    given = {k: v for k, v in hp.items() if k in SCORING_KEYS and not _unset(v)}
    read = read_fields(ScoringRunner, given)
    if "num_workers" in hp and hp["num_workers"] is None:
        read["num_workers"] = None  # null: as many actors as the cluster's CPUs allow
    return ScoringRunner(**read)


def _pl_settings(hp: dict, config: TrialConfig) -> tuple:
    """The (P, L) settings, each checked against the trial settings (``tolerance`` < P)."""
    try:
        pairs = tuple(parse_settings(hp.get("P"), hp.get("L"), hp.get("settings")))
    except (TypeError, ValueError) as err:
        raise DataError(f"hparams: P, L and settings are (lists of) integers ({err})") from None
    if not pairs:
        raise DataError("hparams: no (P, L) settings to evaluate", hint="P: [200, 50], L: [20, 5]")
    for P, L in pairs:
        try:
            replace(config, P=P, L=L)
        except ValueError as err:
            raise DataError(f"hparams: setting P{P}_L{L}: {err}") from None
    return pairs


@dataclass(frozen=True)
class TextEvaluationOptions:
    """How one text evaluation is resampled, named and written: the options of
    :func:`~sparc_eval.jobs.text.evaluate.evaluate_text`, read from the hparams keys of the same
    names (:class:`TextRunSettings` nests them)."""

    dataset: Optional[str] = None  # name in reports; None: the corpus's (the recipe: data_folder)
    n_boot: int = bounded(1000, minimum=0)
    # the bootstrap's; None: the trial config's seed (the recipe: always, from the seed key)
    seed: Optional[int] = library_only(None)
    bootstrap_unit: str = bounded(DEFAULT_BOOTSTRAP_UNIT, choices=BOOTSTRAP_UNITS)
    protocol: str = bounded("naturalvoices", choices=tuple(PROTOCOLS))
    plots: bool = True
    panel_ci: bool = False  # CIs for the panel beyond EER (min Cllr, D_ECE, D<->sys) too
    save_trials: bool = True
    trials_with_text: bool = False


@dataclass(frozen=True)
class TextRunSettings:
    """Everything one text evaluation (``recipes/evaluate_text.py``) reads from its hparams."""

    data_folder: Union[str, Path]
    output_folder: Path
    scorers: tuple  # scorer objects (attackers.text), names distinct
    trial_config: TrialConfig  # trial keys, seed, shared_text*
    pl_settings: tuple = (BASE_SETTING,)  # ((P, L), ...) from P x L or settings
    tasks: tuple = ("speaker",)
    columns: object = None  # SPARC export column mapping: dict or YAML file
    # sparc_eval.data.words: spoken | reference | asr
    words: str = bounded("spoken", group=PLAIN, choices=TEXT_CHOICES)
    anonymized: bool = bounded(False, group=PLAIN)  # a corpus anonymized by another tool
    anon_keeps_words: Optional[bool] = bounded(None, group=PLAIN)
    language: Optional[str] = None  # ISO 639-1 over what the corpus says (None: as read)
    options: TextEvaluationOptions = TextEvaluationOptions()
    hparams_file: Optional[str] = None
    overrides: Optional[dict] = None
    hparams_sha256: Optional[str] = None
    scoring: ScoringRunner = ScoringRunner()  # runner, ray_address, num_workers, score_batch_size

    @property
    def seed(self) -> int:
        return self.trial_config.seed

    @property
    def dataset_name(self) -> str:
        return self.options.dataset or str(self.data_folder)

    def evaluation_options(self) -> TextEvaluationOptions:
        """The options as :func:`~sparc_eval.jobs.text.evaluate.evaluate_text` takes them: the
        report names the corpus by ``data_folder`` unless ``dataset`` says otherwise, and the
        bootstrap is seeded by the trial config's seed."""
        return replace(self.options, dataset=self.dataset_name, seed=self.seed)

    @classmethod
    def from_hparams(cls, hp: dict) -> "TextRunSettings":
        """Read and check every key once; a bad value is a DataError naming its key."""
        for need in REQUIRED:
            if hp.get(need) in (None, ""):
                raise DataError(f"hparams: {need!r} is required")
        config = trial_config_from_hparams(hp)
        values = {
            key: read(key, hp[key]) for key, read in _READERS.items() if not _unset(hp.get(key))
        }
        return cls(
            options=TextEvaluationOptions(**read_fields(TextEvaluationOptions, hp)),
            data_folder=hp["data_folder"],
            output_folder=Path(hp["output_folder"]),
            scorers=tuple(scorer_list(hp["scorer"])),
            trial_config=config,
            pl_settings=_pl_settings(hp, config),
            hparams_sha256=hparams_digest(hp),
            scoring=scoring_from_hparams(hp),
            **values,
            **read_fields(cls, hp, {k: k for k in keys_in(cls, PLAIN)}),
        )

    def run_info(self, deviations: dict) -> dict:
        """What results.json's ``run`` records of the hparams (and the words' ``deviations``)."""
        info = {
            "hparams_file": self.hparams_file,
            "overrides": self.overrides,
            "hparams_sha256": self.hparams_sha256,
            "words": self.words,
            "deviations": deviations,
        }
        if self.scoring.runner != "local":
            info["scoring"] = self.scoring.settings()
        return info
