"""The evaluation's settings, typed: what the bootstrap resamples, which segments are formed, when
an evaluation is too small for a verdict, and what the metrics compute
(:class:`~sparc_eval.metrics.core.MetricSettings`).

Each default is written once, on its field; a field's hparams key is its name unless the field
says otherwise (``bounded(key=...)``), and :meth:`EvaluationSettings.from_hparams` reads and checks
every key through :func:`sparc_eval.hparams.read_fields` before any work. The library functions
(:func:`~sparc_eval.metrics.evaluate_trials`, :mod:`~sparc_eval.metrics.bootstrap`) take these
objects; :func:`trial_settings` builds them from hparams-style keywords for a bare trial list.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Optional

from ..errors import DataError
from ..hparams import bounded, hparams_keys, library_only, read_fields
from .breakdown import MIN_SEGMENT_SPEAKERS
from .core import MetricSettings
from .small import MIN_VERDICT_SPEAKERS

# the bootstrap units (sparc_eval.metrics.bootstrap's docstring): the one definition
BOOTSTRAP_UNITS = ("two_way", "speaker", "trial")
DEFAULT_BOOTSTRAP_UNIT = "two_way"  # where enrolled speakers are known (jobs, hparams, the CLI)
BARE_TRIALS_UNIT = "trial"  # a bare trial list (a library call) names no speakers to resample
BOOTSTRAP_METHODS = ("auto", "exact", "binned")
DEFAULT_CHUNK_ELEMENTS = 1 << 18  # drawn values (or trial weights) held at once per chunk


@dataclass(frozen=True)
class BootstrapSettings:
    n_boot: int = bounded(1000, minimum=0)  # resamples (0: no CIs)
    seed: int = 0
    # two_way: the speakers on both sides of the trials | speaker: test speakers | trial
    unit: str = bounded(DEFAULT_BOOTSTRAP_UNIT, key="bootstrap_unit", choices=BOOTSTRAP_UNITS)
    method: str = bounded("auto", key="bootstrap_method", choices=BOOTSTRAP_METHODS)
    # score bins of the binned bootstrap (None: the unit's default)
    bins: Optional[int] = bounded(None, key="bootstrap_bins", minimum=2)
    stratify: bool = library_only(True)  # trial unit: targets and non-targets drawn apart
    level: float = library_only(0.95)  # of the percentile intervals
    chunk_elements: int = library_only(DEFAULT_CHUNK_ELEMENTS)  # the exact draws' memory bound

    def __post_init__(self):
        if self.unit not in BOOTSTRAP_UNITS:
            raise DataError(
                f"bootstrap_unit must be one of {', '.join(BOOTSTRAP_UNITS)}, not {self.unit!r}"
            )


TRIAL_BOOTSTRAP = BootstrapSettings(unit=BARE_TRIALS_UNIT)


@dataclass(frozen=True)
class SegmentSettings:
    # a segment needs this many trial speakers (both papers)
    min_speakers: int = bounded(MIN_SEGMENT_SPEAKERS, key="min_segment_speakers", minimum=1)
    # attributes segmented (None: every speaker attribute)
    attributes: Optional[tuple] = bounded(None, key="segment_attributes")
    accent_grouping: str = "coarse"  # coarse | fine (sparc_eval.data.attributes)

    def __post_init__(self):
        from ..data.attributes import check_accent_grouping

        check_accent_grouping(self.accent_grouping)  # a bad grouping fails before any work


@dataclass(frozen=True)
class EvaluationSettings:
    metrics: MetricSettings = field(default_factory=MetricSettings)
    bootstrap: BootstrapSettings = field(default_factory=BootstrapSettings)
    segments: SegmentSettings = field(default_factory=SegmentSettings)
    # fewer test speakers than this, or a degenerate interval: no verdict (sparc_eval.metrics.small)
    min_verdict_speakers: int = bounded(MIN_VERDICT_SPEAKERS, minimum=1)

    @classmethod
    def from_hparams(cls, hp: dict) -> "EvaluationSettings":
        """The evaluation keys of any recipe's hparams (absent or null keys take the defaults above)."""
        boot = BootstrapSettings(**read_fields(BootstrapSettings, hp))
        segments = SegmentSettings(**read_fields(SegmentSettings, hp))
        return cls(bootstrap=boot, segments=segments, **read_fields(cls, hp))

    @staticmethod
    def keys() -> set:
        """The hparams keys these settings read (what an attacker's hparams file may leave out)."""
        parts = (BootstrapSettings, SegmentSettings, EvaluationSettings)
        return {key for part in parts for key in hparams_keys(part)}

    def record(self) -> dict:
        """What results.json keeps of these settings (``run``)."""
        return {
            "bootstrap_unit": self.bootstrap.unit,
            "n_boot": self.bootstrap.n_boot,
            "accent_grouping": self.segments.accent_grouping,
            "min_segment_speakers": self.segments.min_speakers,
            "min_verdict_speakers": self.min_verdict_speakers,
        }

    def digest_parts(self) -> dict:
        return asdict(self)


def evaluation_settings(metrics: Optional[MetricSettings] = None, **hparams) -> EvaluationSettings:
    """Settings from hparams-style keywords (``n_boot``, ``bootstrap_unit``,
    ``min_verdict_speakers``, ...), read and checked as a recipe's hparams are; an unknown key is
    a TypeError naming it."""
    unknown = set(hparams) - EvaluationSettings.keys()
    if unknown:
        raise TypeError(f"unknown evaluation settings {sorted(unknown)}")
    read = EvaluationSettings.from_hparams(hparams)
    return replace(read, metrics=metrics or MetricSettings())


def trial_settings(metrics: Optional[MetricSettings] = None, **hparams) -> EvaluationSettings:
    """:func:`evaluation_settings` for a bare trial list (a library call): the trial unit
    (``BARE_TRIALS_UNIT``) unless ``bootstrap_unit`` says otherwise."""
    return evaluation_settings(metrics, **{"bootstrap_unit": BARE_TRIALS_UNIT, **hparams})
