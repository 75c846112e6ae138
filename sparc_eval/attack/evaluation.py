"""One evaluation per result: :func:`~sparc_eval.attack.evaluation.evaluate` turns an attacker's :class:`~sparc_eval.attack.trials.Trials`
into the results.json parts, once, with the run's settings.

The settings are typed and made once from the hparams (:meth:`EvaluationSettings.from_hparams`);
each default lives here. The bootstrap unit is one for the whole run and recorded in
results.json (``run.bootstrap_unit``); a cell, a recipe run and a comparison never compute two
intervals for one thing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Optional

from ..errors import DataError
from ..hparams import bounded, read_fields
from ..metrics.bootstrap import BOOTSTRAP_METHODS, BOOTSTRAP_UNITS, DEFAULT_BOOTSTRAP_UNIT
from ..metrics.core import MetricSettings
from ..metrics.small import MIN_SPEAKERS
from .trials import Trials

# hparams key -> field, for the keys whose field has another name
BOOTSTRAP_KEYS = {
    "n_boot": "n_boot",
    "seed": "seed",
    "bootstrap_unit": "unit",
    "bootstrap_method": "method",
    "bootstrap_bins": "bins",
}
SEGMENT_KEYS = {
    "min_segment_speakers": "min_speakers",
    "segment_attributes": "attributes",
    "accent_grouping": "accent_grouping",
}


@dataclass(frozen=True)
class BootstrapSettings:
    n_boot: int = bounded(1000, minimum=0)  # resamples (0: no CIs)
    seed: int = 0
    # two_way: the speakers on both sides of the trials | speaker: test speakers | trial
    unit: str = bounded(DEFAULT_BOOTSTRAP_UNIT, choices=BOOTSTRAP_UNITS)
    method: str = bounded("auto", choices=BOOTSTRAP_METHODS)  # sparc_eval.metrics.bootstrap
    bins: Optional[int] = bounded(
        None, minimum=2
    )  # score bins of the binned bootstrap (None: the unit's default)

    def __post_init__(self):
        if self.unit not in BOOTSTRAP_UNITS:
            raise DataError(
                f"bootstrap_unit must be one of {', '.join(BOOTSTRAP_UNITS)}, not {self.unit!r}"
            )


@dataclass(frozen=True)
class SegmentSettings:
    min_speakers: int = bounded(
        3, minimum=1
    )  # a segment needs this many trial speakers (both papers)
    attributes: Optional[tuple] = None  # attributes segmented (None: every speaker attribute)
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
    min_verdict_speakers: int = bounded(MIN_SPEAKERS, minimum=1)

    @classmethod
    def from_hparams(cls, hp: dict) -> "EvaluationSettings":
        """The evaluation keys of any recipe's hparams (absent or null keys take the defaults above)."""

        boot = BootstrapSettings(**read_fields(BootstrapSettings, hp, BOOTSTRAP_KEYS))
        segments = SegmentSettings(**read_fields(SegmentSettings, hp, SEGMENT_KEYS))
        verdict = read_fields(cls, hp, {"min_verdict_speakers": "min_verdict_speakers"})
        return cls(bootstrap=boot, segments=segments, **verdict)

    @staticmethod
    def keys() -> set:
        """The hparams keys these settings read (what an attacker's hparams file may leave out)."""
        return {*BOOTSTRAP_KEYS, *SEGMENT_KEYS, "min_verdict_speakers"}

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


def segment_speakers(speakers: Optional[dict], settings: SegmentSettings) -> Optional[dict]:
    """The speaker table segmented: raw attributes when every attribute is segmented (accent
    labels in no segment are then listed), else segment values of the chosen attributes only
    (e.g. sex, age and accent, not a voice name)."""
    from ..data.attributes import SEGMENT_NAMES, segment_table

    if speakers is None or settings.attributes is None:
        return speakers
    table = segment_table(speakers, accent_grouping=settings.accent_grouping)
    keep = {SEGMENT_NAMES.get(a, a) for a in settings.attributes}  # age or age_group alike
    return {s: {k: v for k, v in attrs.items() if k in keep} for s, attrs in table.items()}


def evaluate(
    trials: Trials,
    speakers: Optional[dict] = None,
    settings: EvaluationSettings = EvaluationSettings(),
    llr: bool = False,
):
    """Every metric of the scored trials (overall with CIs over ``settings.bootstrap.unit``,
    per-speaker, segments) as an :class:`~sparc_eval.metrics.Evaluation`; unscored trials are
    counted in ``details["n_unscored"]``. ``llr``: the scores are log-likelihood ratios (an
    attacker's ``scores_are_llrs``), so the actual Cllr is reported as such."""
    from ..metrics import evaluate_trials

    scored = trials.scored()
    boot, seg = settings.bootstrap, settings.segments
    ev = evaluate_trials(
        scored.enroll_speakers,
        scored.test,
        scored.score,
        scored.label,
        utt2spk=scored.utt2spk(),
        enroll2spk=scored.enroll2spk(),
        speakers=segment_speakers(speakers, seg),
        settings=settings.metrics,
        n_boot=boot.n_boot,
        seed=boot.seed,
        bootstrap_unit=boot.unit,
        bootstrap_method=boot.method,
        bootstrap_bins=boot.bins,
        min_segment_speakers=seg.min_speakers,
        accent_grouping=seg.accent_grouping,
        min_verdict_speakers=settings.min_verdict_speakers,
        llr=llr,
    )
    ev.details["n_unscored"] = trials.n_unscored
    return ev
