"""SPARC transcript-only evaluation, the job: its trials are built by :mod:`sparc_eval.text_trials`
(probes, trial types and conditions, shared-text screening, the protocols), which it re-exports.

- :mod:`.settings`: a run's hparams read once into :class:`TextRunSettings`;
- :mod:`.evaluate`: scorers over tasks x (P, L) x conditions -> results.json (:mod:`.report`:
  report.md, ROC plots), with ablations and paired scorer comparisons (:mod:`.compare`).

Scorers live in ``attackers.text`` (this package never imports them; the recipe passes one in).
"""

from ...text_trials.shared_text import SharedTextConfig, SharedTextResult, detect_shared_text
from ...text_trials.trials import (
    TRIAL_CONDITIONS,
    TRIAL_TYPES,
    TYPE_CONDITIONS,
    TrialBuilder,
    TrialConfig,
    TrialSet,
    build_trials,
    cut_probes,
    read_trials_jsonl,
)
from .settings import TextRunSettings

CONDITIONS = TRIAL_CONDITIONS  # the old name, kept for code that imports it from here

__all__ = [
    "SharedTextConfig",
    "SharedTextResult",
    "detect_shared_text",
    "TRIAL_CONDITIONS",
    "CONDITIONS",
    "TRIAL_TYPES",
    "TYPE_CONDITIONS",
    "TrialBuilder",
    "TrialConfig",
    "TrialSet",
    "TextRunSettings",
    "build_trials",
    "cut_probes",
    "read_trials_jsonl",
]
