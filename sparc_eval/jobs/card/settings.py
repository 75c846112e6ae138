"""The anonymizer card's settings, read from its hparams once (``CardSettings.from_hparams``).
Each default lives here or in the settings it reuses (DataSettings, EvaluationSettings, the
leakage comparison's attacker specs)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ...anonymization.options import RunnerOptions
from ...attack.cells import CellContext
from ...attack.evaluation import EvaluationSettings
from ...attack.specs import CommonAttackerKeys, attacker_specs
from ...data.plan import SCENARIOS, DataSettings
from ...errors import DataError
from ...hparams import bounded, keys_in, read_fields

ANONYMIZED_SCENARIOS = tuple(s for s in SCENARIOS if s != "original")
DEFAULT_SCENARIOS = ("ignorant", "lazy-informed")
WEAK_ATTACKER_EER = (
    0.40  # an attacker at least this close to chance on original speech certifies nothing
)
MAX_CI_WIDTH = 0.25  # a 95% CI wider than this (half of the 0-50% EER range) supports no verdict
# whose random draws anonymize the attacker's enrollment and training speech: its own (VoicePrivacy:
# the attacker has the system, not the user's secret choices), or the user's (a stronger, named variant)
ATTACKER_DRAWS = ("own", "user")
LEARNING_FRACTIONS = (0.25, 0.5)  # of the training speakers, beside the main cell's 100%
PLAIN = "plain"  # the group of the card's own keys the one reader reads as they are


@dataclass(frozen=True)
class AnonymizerSpec:
    name: str  # how the card names it
    anonymizer: object  # a registered name / dotted path, or an anonymizer object
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class CardSettings:
    output_folder: Path
    anonymizers: tuple  # AnonymizerSpec
    data: DataSettings  # the original corpora and split (scenario original)
    attackers: tuple  # leakage.cells.AttackerSpec
    scenarios: tuple
    content_attacker: Optional[str]
    utility: dict  # name -> utility metric object (sparc_eval.utility.metrics)
    evaluation: EvaluationSettings
    common: dict = field(default_factory=dict)  # keys set on every attacker recipe that has them
    runner: RunnerOptions = RunnerOptions()  # how the anonymizers run (runner, batch_size, ...)
    weak_attacker_eer: float = bounded(WEAK_ATTACKER_EER, group=PLAIN, minimum=0.0, maximum=0.5)
    max_ci_width: float = bounded(MAX_CI_WIDTH, group=PLAIN, minimum=0.0, maximum=1.0)
    pseudonymise: bool = bounded(False, group=PLAIN)
    # trained attackers again on nested shares of their training speakers
    learning_curve: bool = bounded(False, group=PLAIN)
    learning_fractions: tuple = LEARNING_FRACTIONS
    attacker_draws: str = bounded("own", group=PLAIN, choices=ATTACKER_DRAWS)
    # None: derived from each anonymizer's own seed
    attacker_seed: Optional[int] = bounded(None, group=PLAIN)
    plots: bool = bounded(True, group=PLAIN)
    progress: bool = bounded(True, group=PLAIN)
    num_threads: Optional[int] = bounded(None, group=PLAIN)
    original_content: Optional[str] = (
        None  # content digest of the original training speech (set by the run)
    )

    @property
    def seed(self) -> int:
        return self.evaluation.bootstrap.seed

    @property
    def cache_folder(self) -> str:
        return self.data.cache_folder

    @classmethod
    def from_hparams(cls, hp: dict) -> "CardSettings":
        data = DataSettings.from_hparams({**hp, "scenario": "original"})
        attackers = tuple(attacker_specs(hp))
        content = hp.get("content_attacker")
        if content is not None and content not in [a.name for a in attackers]:
            raise DataError(
                f"content_attacker {content!r} is not an enabled attacker ({[a.name for a in attackers]})",
                hint="enable it in attackers_enabled, or set content_attacker: null",
            )
        if content is not None:
            check_content_attacker(next(a for a in attackers if a.name == content))
        check_split_keys(data, attackers)
        return cls(
            output_folder=Path(hp["output_folder"]),
            anonymizers=given_anonymizer(data) if data.vpc_preset else anonymizer_specs(hp),
            data=data,
            attackers=attackers,
            scenarios=scenarios_of(hp),
            content_attacker=content,
            utility=utility_metrics(hp),
            evaluation=EvaluationSettings.from_hparams(hp),
            common=CommonAttackerKeys.given(hp),
            runner=RunnerOptions(**read_fields(RunnerOptions, hp)),
            learning_fractions=learning_fractions(hp.get("learning_fractions")),
            **read_fields(cls, hp, {k: k for k in cls.plain_keys()}),
        )

    @classmethod
    def plain_keys(cls) -> tuple:
        """The card's own keys read as they are (an hparams file may leave them out)."""
        return keys_in(cls, PLAIN)

    def cell_context(self) -> CellContext:
        return CellContext(
            settings=self.evaluation,
            common=self.common,
            cache_folder=self.cache_folder,
            plots=self.plots,
            prefix="card",
        )


# the split keys every attacker must share with the card (their group in DataSettings)
SPLIT_KEYS = DataSettings.split_keys()


def attacker_settings(spec) -> dict:
    """The plain top-level keys of an hparams attacker as it will load: its file's plain values
    (:attr:`~sparc_eval.hparams.HparamsFile.plain`), its card overrides on top."""
    return {**spec.file.plain, **spec.overrides}


def declared_needs(spec) -> dict:
    """What an attacker reads (audio, words, the card's split), known before any work: an object's
    ``needs``, else the class its hparams file names: its ``declared_needs(setting)`` when the
    needs depend on the hparams (ECAPA: the feature type), else its ``needs``."""
    from ...attack.contract import Needs, optional

    needs = None if spec.attacker is None else spec.attacker.needs
    if needs is None:
        cls = spec.file.named_class("attacker")
        if cls is not None:
            needs = optional(cls, "declared_needs")(attacker_settings(spec).get)
    needs = needs or Needs()  # unknown: no audio, no words, the card's split
    return {"audio": needs.audio, "words": needs.words, "split": needs.split}


def check_content_attacker(spec) -> None:
    """The content rows need an attacker that reads the words and not the sound, on the card's trials."""
    needs = declared_needs(spec)
    if not needs["words"] or needs["audio"] or not needs["split"]:
        reads = (
            "the audio"
            if needs["audio"]
            else ("trials of its own" if not needs["split"] else "no words")
        )
        raise DataError(
            f"content_attacker {spec.name!r} reads {reads}: the content rows need a words-only attacker "
            "on the card's utterance trials",
            hint="content_attacker: phones (phone-only ECAPA on G2P), tfidf_utterances, or null",
        )


def check_split_keys(data: DataSettings, specs) -> None:
    """Every hparams attacker evaluates the card's utterances: a split key its file (or its card
    overrides) sets to another value than the card's, where the card leaves it at the default and so
    does not pass it on, is an error naming the keys."""
    default = DataSettings()
    for spec in specs:
        if not spec.hparams:
            continue
        differ, settings = {}, attacker_settings(spec)
        for key in SPLIT_KEYS:
            if getattr(data, key) != getattr(default, key):
                continue  # the card passes its own value on: the file's is overridden
            value = settings.get(key)
            if value not in (None, []) and value != getattr(data, key):
                differ[key] = (value, getattr(data, key))
        if differ:
            said = ", ".join(f"{k}: {v[0]!r} (card: {v[1]!r})" for k, v in differ.items())
            raise DataError(
                f"attacker {spec.name!r} ({spec.hparams}) sets split keys the card does not share: {said}",
                hint="set them on the card (--key=value) so every attacker scores the same utterances, "
                "or remove them from the attacker's hparams",
            )


def learning_fractions(value) -> tuple:
    fractions = tuple(float(f) for f in (value or LEARNING_FRACTIONS))
    if any(not 0 < f < 1 for f in fractions) or 0.5 not in fractions:
        raise DataError(
            f"learning_fractions {list(fractions)} must lie in (0, 1) and include 0.5",
            hint="100% is the attacker's main cell; the 50% point decides the warning",
        )
    return tuple(sorted(set(fractions)))


def scenarios_of(hp: dict) -> tuple:
    given = hp.get("scenarios") or list(DEFAULT_SCENARIOS)
    given = [given] if isinstance(given, str) else list(given)
    bad = [s for s in given if s not in ANONYMIZED_SCENARIOS]
    if bad:
        raise DataError(
            f"scenarios {bad} are not among {list(ANONYMIZED_SCENARIOS)}",
            hint="original speech is always evaluated (attacker strength, the content bound)",
        )
    return tuple(dict.fromkeys(given))


def _anonymizer_name(value) -> str:
    """How the card names an anonymizer: its declared ``name`` (what ``sparc-eval anonymize`` and
    the manifest use), else its class name; a registered name is its own name."""
    from ...anonymization.runner import name_of
    from ...plugins import anonymizer_class

    if not isinstance(value, str):
        return name_of(value)
    if "." not in value and ":" not in value:
        return value
    declared = getattr(anonymizer_class(value), "name", None)
    return declared if isinstance(declared, str) and declared else _path_name(value)


def _path_name(dotted: str) -> str:
    """The last part of a dotted path (``package.module.Name`` or ``package.module:Name``)."""
    return dotted.replace(":", ".").rsplit(".", 1)[-1]


def _options_for(value, name: str, options: dict) -> tuple:
    """(key, options) of ``anonymizer_options`` for one anonymizer: keyed by its card name, its
    class name or its dotted path."""
    if not isinstance(value, str):
        return None, {}
    for key in (name, value, _path_name(value)):
        if key in options:
            return key, options[key] or {}
    return None, {}


def _named_entry(value: dict) -> tuple:
    """(card name, registered name or dotted path, options) of ``{name: {kind: ..., option: ...}}``
    (or ``{name: kind}``): one class under a name of its own, so that it can be listed at
    several settings (``[{noise_20db: {kind: white_noise, snr_db: 20}}, ...]``); its options are
    given inline or under its name in ``anonymizer_options``."""
    spec = next(iter(value.values())) if len(value) == 1 else None
    spec = {"kind": spec} if isinstance(spec, str) else spec
    if not isinstance(spec, dict) or not isinstance(spec.get("kind"), str):
        raise DataError(
            f"anonymizer entry {value!r} is not {{name: {{kind: <registered name or dotted path>, "
            "<option>: <value>...}}",
            hint="e.g. --anonymizer=[mcadams,{noise_20db: {kind: white_noise, snr_db: 20}}]",
        )
    name = str(next(iter(value)))
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]*", name):
        raise DataError(
            f"anonymizer name {name!r} cannot name a folder",
            hint="letters, digits, '_', '-' and '.', starting with a letter or digit",
        )
    options = dict(spec)
    return name, options.pop("kind"), options


def anonymizer_specs(hp: dict) -> tuple:
    """``anonymizer``: one or a list of registered names, dotted paths, objects (``!new:``) or
    named entries (``{name: {kind: ..., option: ...}}``);
    ``anonymizer_options`` maps a name (the card's, the class's or the dotted path) to its keyword
    arguments."""
    given = hp.get("anonymizer")
    if given in (None, "", []):
        raise DataError(
            "no anonymizer to evaluate",
            hint="--anonymizer=mcadams (or a list: --anonymizer=[mcadams,stt_tts])",
        )
    given = given if isinstance(given, (list, tuple)) else [given]
    options = hp.get("anonymizer_options") or {}
    out, seen, used = [], set(), set()
    for value in given:
        if isinstance(value, dict):
            name, value, inline = _named_entry(value)
            key, opts = (name, options[name] or {}) if name in options else (None, {})
        else:
            name, inline = _anonymizer_name(value), {}
            if name in seen and isinstance(value, str) and "." in value:
                name = _path_name(value)  # one class at two settings: its path's name
            key, opts = _options_for(value, name, options)
        if name in seen:
            raise DataError(f"anonymizer {name!r} is listed twice")
        seen.add(name)
        used.add(key)
        out.append(AnonymizerSpec(name, value, {**inline, **opts}))
    unknown = set(options) - used
    if unknown:
        raise DataError(
            f"anonymizer_options names {sorted(unknown)}, which are not evaluated ({sorted(seen)})"
        )
    return tuple(out)


def given_anonymizer(data: DataSettings) -> tuple:
    """The anonymizer of a VoicePrivacy data folder's copies, named by their suffix
    (``_mcadams``: mcadams); its source is where the copies are."""
    from ...data.vpc import layout_of

    layout = layout_of(data)
    if layout.suffix is None:
        raise DataError(
            f"no anonymized copies under {layout.root} (folders such as {layout.lists[0].name}_NAME)",
            path=layout.root,
            hint="the card evaluates anonymized copies: give --anon_data_suffix=_NAME",
        )
    name = layout.suffix.lstrip("_") or layout.suffix
    return (AnonymizerSpec(name, f"given: {layout.root}/*{layout.suffix}"),)


def utility_metrics(hp: dict) -> dict:
    """name -> metric object for the enabled ``utility:`` entries: an object (``!new:...``), or
    ``{kind: <registered name>, <option>: <value>...}`` built here (only when enabled). A name
    enabled (``utility_enabled``, or ``naturalness: True`` for the naturalness predictors) but not
    under ``utility`` is the metric registered under that name, with its default options."""
    from ...utility.metrics import utility_metric_from_spec

    metrics = dict(hp.get("utility") or {})
    names = _enabled_utility(hp, metrics)
    built = {}
    for name in names:
        metric = metrics[name] if name in metrics else {"kind": name}
        built[name] = (
            utility_metric_from_spec(f"utility.{name}", metric)
            if isinstance(metric, dict)
            else metric
        )
    for name, metric in built.items():
        if not callable(getattr(metric, "compute", None)):
            raise DataError(
                f"utility.{name} ({type(metric).__name__}) is not a utility metric: it lacks compute()",
                hint="see sparc_eval/utility/metrics.py for the contract",
            )
    return built


def _enabled_utility(hp: dict, metrics: dict) -> list:
    """The utility names a card runs: ``utility_enabled`` (None: every entry under ``utility``),
    then the naturalness predictors when ``naturalness`` is true."""
    from ...plugins import entry_points
    from ...utility.metrics import UTILITY_METRIC_GROUP
    from ...utility.naturalness import PREDICTORS

    enabled = hp.get("utility_enabled")
    names = (
        list(metrics)
        if enabled is None
        else [enabled]
        if isinstance(enabled, str)
        else list(enabled)
    )
    if hp.get("naturalness"):
        names += [n for n in PREDICTORS if n not in names]
    missing = [n for n in names if n not in metrics]
    registered = entry_points(UTILITY_METRIC_GROUP) if missing else {}
    unknown = [n for n in missing if n not in registered]
    if unknown:
        raise DataError(
            f"utility_enabled names {unknown}, which are neither in utility: {list(metrics)} nor "
            f"registered metrics ({', '.join(sorted(registered))})"
        )
    return names
