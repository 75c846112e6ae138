"""The comparison's settings, read from its hparams once (``LeakageSettings.from_hparams``); the
library below takes these, never the hparams dict. Each default lives here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ...attack.cells import CellContext, CorpusSpec
from ...attack.evaluation import EvaluationSettings
from ...attack.evaluation_set import SHARED_TEXT_CONDITIONS, balanced_count
from ...attack.specs import CommonAttackerKeys, attackers_of, enabled_names
from ...attack.specs import attacker_specs as specs_of
from ...data.plan import DataSettings
from ...errors import DataError

# what a corpus entry may set beside data_folder and train_folders: its split and anonymized speech
# (the data settings' groups; eval_folder is data_folder itself there) and the phone text it reads
CORPUS_SETTINGS = (
    set(DataSettings.split_keys()) - {"eval_folder", "train_folders"}
    | set(DataSettings.anonymized_keys())
    | {"phone_text"}
)
# grid: quick runs quick_attackers with quick_overrides (a first run to wait for, its departures named
# in results.json); full (also the default of a file without the key) runs every attacker as given
GRIDS = ("quick", "full")


@dataclass(frozen=True)
class LeakageSettings:
    output_folder: Path
    corpora: tuple  # CorpusSpec
    attackers: tuple  # AttackerSpec
    evaluation: EvaluationSettings
    cache_folder: str = "results/cache"
    conditions: tuple = SHARED_TEXT_CONDITIONS
    balance_speakers: object = (
        None  # None: every evaluation speaker (the papers); auto: the smallest corpus's; N
    )
    balance_trial_utterances: Optional[int] = None
    vocabulary_sample_tokens: object = "auto"
    shared_text: object = None  # the detector's SharedTextConfig
    plots: bool = True
    num_threads: Optional[int] = None
    common: dict = field(default_factory=dict)
    grid: str = "full"  # quick: quick_attackers with quick_overrides; full: as given
    grid_deviations: dict = field(
        default_factory=dict
    )  # what the quick grid departs from (results.json)

    @property
    def seed(self) -> int:
        return self.evaluation.bootstrap.seed

    @classmethod
    def from_hparams(cls, hp: dict) -> "LeakageSettings":
        balanced_count(
            hp.get("balance_speakers"), {"": 2}, "balance_speakers"
        )  # a bad value fails now
        cap = hp.get("balance_trial_utterances")
        attackers = attacker_specs(hp)
        return cls(
            output_folder=Path(hp["output_folder"]),
            corpora=tuple(corpus_specs(hp, str(hp.get("cache_folder", "results/cache")))),
            attackers=tuple(attackers),
            cache_folder=str(hp.get("cache_folder", "results/cache")),
            evaluation=EvaluationSettings.from_hparams({"segment_attributes": None, **hp}),
            conditions=conditions_of(hp),
            balance_speakers=hp.get("balance_speakers"),
            balance_trial_utterances=None if cap in (None, "null") else int(cap),
            vocabulary_sample_tokens=hp.get("vocabulary_sample_tokens", "auto"),
            shared_text=shared_config(hp),
            plots=bool(hp.get("plots", True)),
            num_threads=hp.get("num_threads"),
            common=CommonAttackerKeys.given(hp),
            grid=grid_of(hp),
            grid_deviations=grid_deviations(hp, attackers),
        )

    def cell_context(self) -> CellContext:
        return CellContext(
            settings=self.evaluation,
            common=self.common,
            cache_folder=self.cache_folder,
            trials_per_speaker=self.balance_trial_utterances,
            plots=self.plots,
        )


def conditions_of(hp: dict) -> tuple:
    conditions = hp.get("conditions") or list(SHARED_TEXT_CONDITIONS)
    conditions = [conditions] if isinstance(conditions, str) else list(conditions)
    bad = [c for c in conditions if c not in SHARED_TEXT_CONDITIONS]
    if bad:
        raise DataError(f"conditions {bad} are not among {list(SHARED_TEXT_CONDITIONS)}")
    return tuple(conditions)


def shared_config(hp: dict):
    """The shared-text detector's settings, read as the text evaluation reads them."""
    from ...text_trials.config import trial_config_from_hparams

    keys = {k: v for k, v in hp.items() if k.startswith("shared_text_")}
    return trial_config_from_hparams(
        {**keys, "shared_text": True}
    ).shared_text  # its own condition: always on


def corpus_specs(hp: dict, cache_folder: str = "results/cache") -> list:
    corpora = hp.get("corpora") or {}
    if not isinstance(corpora, dict) or not corpora:
        raise DataError("hparams: corpora must map names to {data_folder: ...}")
    out = []
    for name in enabled_names(corpora, hp.get("corpora_enabled"), "corpora"):
        spec = dict(corpora[name] or {})
        if not spec.get("data_folder"):
            raise DataError(f"corpora.{name}: data_folder is required")
        unknown = set(spec) - CORPUS_SETTINGS - {"data_folder", "train_folders"}
        if unknown:
            raise DataError(
                f"corpora.{name}: unknown keys {sorted(unknown)}",
                hint=f"allowed: data_folder, train_folders, {', '.join(sorted(CORPUS_SETTINGS))}",
            )
        extra = {k: v for k, v in spec.items() if k not in DataSettings.keys()}
        extra.pop("data_folder", None)
        out.append(CorpusSpec(name, corpus_data(spec, cache_folder), extra))
    return out


def corpus_data(spec: dict, cache_folder: str) -> DataSettings:
    """A corpus entry's data settings: with ``train_folders`` its ``data_folder`` is the
    evaluation corpus; without, the attackers hold out part of its speakers."""
    keys = dict(spec)
    train = keys.pop("train_folders", None)
    train = [str(x) for x in ([train] if isinstance(train, str) else train or [])] or None
    folder = str(keys.pop("data_folder"))
    where = {"train_folders": train, "eval_folder": folder} if train else {"data_folder": folder}
    return DataSettings.from_hparams({**keys, **where, "cache_folder": cache_folder})


def grid_of(hp: dict) -> str:
    grid = hp.get("grid") or "full"
    if grid not in GRIDS:
        raise DataError(
            f"grid {grid!r} is not one of {list(GRIDS)}",
            hint="quick: quick_attackers with quick_overrides; full: every attacker as given",
        )
    return grid


def quick_settings(hp: dict, attackers: dict) -> tuple:
    """(enabled attacker names or None, {attacker: overrides}) of ``grid: quick``; (None, {}) for full."""
    if grid_of(hp) != "quick":
        return None, {}
    names = hp.get("quick_attackers")
    names = [names] if isinstance(names, str) else names
    overrides = hp.get("quick_overrides") or {}
    if not isinstance(overrides, dict) or any(not isinstance(v, dict) for v in overrides.values()):
        raise DataError("quick_overrides must map attacker names to {key: value} overrides")
    unknown = [n for n in [*(names or []), *overrides] if n not in attackers]
    if unknown:
        raise DataError(
            f"quick_attackers / quick_overrides name {unknown}, which are not in attackers: "
            f"{list(attackers)}"
        )
    return names, {n: dict(v) for n, v in overrides.items()}


def grid_deviations(hp: dict, specs: list) -> dict:
    """The named departures of ``grid: quick``: the grid itself (which attackers it leaves out) and
    each quick override of an enabled attacker (``<attacker>: <key>_<value>``)."""
    attackers = hp.get("attackers") or {}
    _, overrides = quick_settings(hp, attackers)
    if grid_of(hp) != "quick":
        return {}
    enabled = [a.name for a in specs]
    left_out = [n for n in attackers if n not in enabled]
    found = {
        "grid_quick": (
            f"the quick comparison (grid: quick), a first run to wait for: attackers {', '.join(enabled)}"
            + (f"; left out: {', '.join(left_out)}" if left_out else "")
            + (
                "; ECAPA attackers trained less than their recipes (below)"
                if any(n in overrides for n in enabled)
                else ""
            )
            + ". The full grid (--grid=full) runs every attacker with its recipe's settings"
        )
    }
    for a in specs:
        given = (attackers[a.name] or {}).get(
            "overrides"
        ) or {}  # the attacker's own, before the quick ones
        for key, value in overrides.get(a.name, {}).items():
            before = given.get(key, a.file.written.get(key))
            found[f"{a.name}: {key}_{value}"] = (
                f"{key} {value} in the quick grid (quick_overrides); {a.hparams} sets {before} (grid: full)"
                + (
                    ": fewer epochs can leave the attacker weaker (a higher EER)"
                    if key == "number_of_epochs"
                    else ""
                )
            )
    return found


def attacker_specs(hp: dict) -> list:
    """The comparison's attackers, ``grid: quick`` applied (:func:`quick_settings`)."""
    return specs_of(hp, quick_settings(hp, attackers_of(hp)))
