"""Old dotted paths of the modules that moved into sub-packages in 0.4 (issue 27).

``sparc_eval.asr`` is now ``sparc_eval.speech.asr``, ``sparc_eval.card.utility`` is
``sparc_eval.utility.metrics``, and so on: hparams files, scripts and pickles that name the old
path keep working until ``REMOVED_IN``, with a ``FutureWarning`` naming the new one. An old
path imports the very module object of the new one (no copy), so ``isinstance`` checks, monkeypatches
and caches see one module.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

REMOVED_IN = "0.5.0"

MOVED_MODULES = {
    "sparc_eval.anonymize": "sparc_eval.anonymization.runner",
    "sparc_eval.anonymize_cli": "sparc_eval.anonymization.cli",
    "sparc_eval.asr": "sparc_eval.speech.asr",
    "sparc_eval.attributes": "sparc_eval.data.attributes",
    "sparc_eval.audio": "sparc_eval.speech.audio",
    "sparc_eval.backends": "sparc_eval.speech.backends",
    "sparc_eval.card.utility": "sparc_eval.utility.metrics",
    "sparc_eval.data_plan": "sparc_eval.data.plan",
    "sparc_eval.espeak": "sparc_eval.speech.espeak",
    "sparc_eval.evaluation": "sparc_eval.attack.evaluation",
    "sparc_eval.jobs.leakage.compare": "sparc_eval.attack.compare",
    "sparc_eval.jobs.text.attribute_trials": "sparc_eval.text_trials.attribute_trials",
    "sparc_eval.jobs.text.materialise": "sparc_eval.text_trials.materialise",
    "sparc_eval.jobs.text.pairing": "sparc_eval.text_trials.pairing",
    "sparc_eval.jobs.text.probes": "sparc_eval.text_trials.probes",
    "sparc_eval.jobs.text.protocol": "sparc_eval.text_trials.protocol",
    "sparc_eval.jobs.text.ray_scoring": "sparc_eval.text_trials.ray_scoring",
    "sparc_eval.jobs.text.shared_text": "sparc_eval.text_trials.shared_text",
    "sparc_eval.jobs.text.speaker_trials": "sparc_eval.text_trials.speaker_trials",
    "sparc_eval.jobs.text.topic": "sparc_eval.text_trials.topic",
    "sparc_eval.jobs.text.trial_set": "sparc_eval.text_trials.trial_set",
    "sparc_eval.jobs.text.trials": "sparc_eval.text_trials.trials",
    "sparc_eval.leakage.cells": "sparc_eval.attack.cells",
    "sparc_eval.leakage.evaluation_set": "sparc_eval.attack.evaluation_set",
    "sparc_eval.manifest": "sparc_eval.data.manifest",
    "sparc_eval.recipe_cli": "sparc_eval.hparams",
    "sparc_eval.scoring": "sparc_eval.attack.scoring",
    "sparc_eval.splits": "sparc_eval.data.splits",
    "sparc_eval.trials": "sparc_eval.attack.trials",
    "sparc_eval.tts": "sparc_eval.speech.tts",
    "sparc_eval.wer": "sparc_eval.utility.wer",
    "sparc_eval.words": "sparc_eval.data.words",
}
# every module under these packages moved with them
MOVED_PACKAGES = {
    "sparc_eval.card": "sparc_eval.jobs.card",
    "sparc_eval.corpora": "sparc_eval.data.corpora",
    "sparc_eval.leakage": "sparc_eval.jobs.leakage",
    "sparc_eval.text": "sparc_eval.jobs.text",
}


def new_name(old: str):
    """The new dotted name of a moved module (an exact move first, then its package's, followed to
    where it lives now: ``sparc_eval.text.trials`` moved twice), else None."""
    found = _one_move(old)
    while found is not None and _one_move(found) is not None:
        found = _one_move(found)
    return found


def _one_move(old: str):
    if old in MOVED_MODULES:
        return MOVED_MODULES[old]
    for package, target in MOVED_PACKAGES.items():
        if old == package or old.startswith(package + "."):
            return target + old[len(package) :]
    return None


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old path as the module at its new one."""

    def __init__(self):
        self._specs = {}  # old name -> the new module's own spec, restored after the import

    def find_spec(self, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        new = new_name(spec.name)
        warnings.warn(
            f"{spec.name} moved to {new}; the old path works until sparc-eval {REMOVED_IN}",
            FutureWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # the import system set __spec__ to the old name's; the module keeps its own
        module.__spec__ = self._specs.pop(module.__spec__.name, module.__spec__)


def install() -> None:
    """Put the old-path finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _OldPaths) for f in sys.meta_path):
        sys.meta_path.insert(0, _OldPaths())
