"""SPARC transcript-only evaluation: trials from manifests, shared-text screening, evaluation.

- :mod:`.trials`: probes, enrollments, trial types and conditions, tasks, topic controls;
- :mod:`.shared_text`: the detector of text many speakers say (read passages);
- :mod:`.protocol`: the paper's NaturalVoices and SPoRC protocols (A.1) and a run's departures;
- :mod:`.settings`: a run's hparams read once into :class:`TextRunSettings`;
- :mod:`.evaluate`: scorers over tasks x (P, L) x conditions -> results.json (:mod:`.report`:
  report.md, ROC plots), with ablations and paired scorer comparisons (:mod:`.compare`).

Scorers live in ``attackers.text`` (this package never imports them; the recipe passes one in).
"""

from .settings import TextRunSettings
from .shared_text import SharedTextConfig, SharedTextResult, detect_shared_text
from .trials import (
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
