"""One evaluation per result: :func:`~sparc_eval.attack.evaluation.evaluate` turns an attacker's :class:`~sparc_eval.attack.trials.Trials`
into the results.json parts, once, with the run's settings.

The settings are typed and made once from the hparams
(:meth:`~sparc_eval.metrics.settings.EvaluationSettings.from_hparams`); each default lives in
:mod:`sparc_eval.metrics.settings`. The bootstrap unit is one for the whole run and recorded in
results.json (``run.bootstrap_unit``); a cell, a recipe run and a comparison never compute two
intervals for one thing.
"""

from __future__ import annotations

from typing import Optional

from ..metrics.settings import (  # noqa: F401 (their home before: sparc_eval.attack.evaluation)
    BootstrapSettings,
    EvaluationSettings,
    SegmentSettings,
)
from .trials import Trials


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
    ev = evaluate_trials(
        scored.enroll_speakers,
        scored.test,
        scored.score,
        scored.label,
        utt2spk=scored.utt2spk(),
        enroll2spk=scored.enroll2spk(),
        speakers=segment_speakers(speakers, settings.segments),
        settings=settings,
        llr=llr,
    )
    ev.details["n_unscored"] = trials.n_unscored
    return ev
