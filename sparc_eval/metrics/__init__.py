"""Verification metrics: EER, AUC, TPR@FPR, minDCF, bootstrap CIs, per-speaker and segment EERs.

One numeric core (:mod:`.core`: sort once, cumulative sums), vectorised bootstrap
(:mod:`.bootstrap`), breakdowns (:mod:`.breakdown`), file formats (:mod:`.scores`),
results.json / report.md (:mod:`.results`) and plots (:mod:`.plots`, imported lazily).
Imports numpy only: never torch or SpeechBrain.

Main entry points::

    evaluate_trials(enroll_ids, test_ids, scores, labels, *, utt2spk=None, speakers=None, ...)
    write_report(out_dir, results, run_info, plots=True)
"""

from .bootstrap import (
    BootstrapResult,
    PairedResult,
    bootstrap_metrics,
    paired_bootstrap,
    percentile_ci,
    speaker_paired_bootstrap,
    unpaired_bootstrap,
)
from .breakdown import MIN_SEGMENT_SPEAKERS, per_speaker_eer, segment_eers
from .core import (
    DEFAULT_FPR_TARGETS,
    DEFAULT_P_TARGET,
    Counts,
    EERResult,
    MetricSettings,
    PointMetrics,
    auc,
    check_trials,
    compute_metrics,
    counts,
    det_curve,
    eer,
    fpr_key,
    metrics_from_counts,
    min_dcf,
    roc_curve,
    sort_trials,
    tpr_at_fpr,
)
from .results import (
    Evaluation,
    build_results,
    evaluate_trials,
    json_safe,
    render_report,
    write_report,
)
from .scores import (
    ScoreTrials,
    align_trials,
    read_scores,
    read_speakers,
    read_utt2spk,
    write_scores,
)

__all__ = [
    "BootstrapResult",
    "PairedResult",
    "bootstrap_metrics",
    "paired_bootstrap",
    "percentile_ci",
    "speaker_paired_bootstrap",
    "unpaired_bootstrap",
    "MIN_SEGMENT_SPEAKERS",
    "per_speaker_eer",
    "segment_eers",
    "DEFAULT_FPR_TARGETS",
    "DEFAULT_P_TARGET",
    "Counts",
    "EERResult",
    "MetricSettings",
    "PointMetrics",
    "auc",
    "check_trials",
    "compute_metrics",
    "counts",
    "det_curve",
    "eer",
    "fpr_key",
    "metrics_from_counts",
    "min_dcf",
    "roc_curve",
    "sort_trials",
    "tpr_at_fpr",
    "Evaluation",
    "build_results",
    "evaluate_trials",
    "json_safe",
    "render_report",
    "write_report",
    "ScoreTrials",
    "align_trials",
    "read_scores",
    "read_speakers",
    "read_utt2spk",
    "write_scores",
]
