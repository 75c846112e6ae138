"""Folders that show the architecture (issue 27): the library's root keeps what every part uses,
and every dotted path a user could copy from 0.3's hparams, docs or code still imports (the same
module object, with a FutureWarning naming the new path) until 0.5.0."""

import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from sparc_eval.moved import MOVED_MODULES, MOVED_PACKAGES, REMOVED_IN, new_name

REPO = Path(__file__).resolve().parents[1]


def test_the_root_keeps_a_dozen_modules_at_most():
    root = sorted(p.stem for p in (REPO / "sparc_eval").glob("*.py") if p.stem != "__init__")
    assert len(root) <= 12, root
    packages = {p.name for p in (REPO / "sparc_eval").iterdir() if (p / "__init__.py").is_file()}
    assert {"data", "speech", "anonymization", "attack", "utility", "jobs"} <= packages


def _old_paths():
    """Every moved module, and one module under every moved package."""
    yield from MOVED_MODULES
    for package, target in MOVED_PACKAGES.items():
        yield package
        folder = REPO / target.replace(".", "/")
        first = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")[0]
        yield f"{package}.{first}"


@pytest.mark.parametrize("old", sorted(set(_old_paths())))
def test_an_old_dotted_path_imports_the_moved_module(old):
    for name in [n for n in sys.modules if n == old or n.startswith(old + ".")]:
        del sys.modules[name]  # a fresh import of the old name, whatever ran before
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module is importlib.import_module(new_name(old))
    assert module.__spec__.name == new_name(old)  # the module keeps its own identity
    said = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
    assert (
        f"{old} moved to {new_name(old)}; the old path works until sparc-eval {REMOVED_IN}" in said
    )


def test_dotted_paths_from_the_shipped_hparams_and_docs_of_0_3_still_build(tmp_path):
    """hyperpyyaml (pydoc.locate) through old paths; the attacker contract's one-module names."""
    from hyperpyyaml import load_hyperpyyaml

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        hp = load_hyperpyyaml(
            "wer: !new:sparc_eval.card.utility.WordErrorRate\n"
            "    asr: !new:sparc_eval.asr.FasterWhisperASR\n"
            "        model: tiny.en\n"
            "rho: !new:sparc_eval.card.utility.PitchCorrelation {}\n"
        )
        from sparc_eval.attack import Attacker, Needs, check_attacker, load_attack, run_attack
        from sparc_eval.data_plan import DataSettings, plan_data
        from sparc_eval.manifest import Manifest
    from anonymizers.base import Anonymizer
    from sparc_eval.data.manifest import Manifest as NewManifest
    from sparc_eval.speech.asr import FasterWhisperASR
    from sparc_eval.utility.metrics import PitchCorrelation, WordErrorRate

    assert isinstance(hp["wer"], WordErrorRate) and isinstance(hp["wer"].asr, FasterWhisperASR)
    assert isinstance(hp["rho"], PitchCorrelation)
    assert Manifest is NewManifest and callable(plan_data) and DataSettings().scenario == "original"
    assert all(callable(x) for x in (check_attacker, load_attack, run_attack, Anonymizer))
    assert Needs().training and Attacker.__module__ == "sparc_eval.attack.contract"


def test_sparc_eval_train_runs_the_attacker_recipe():
    """sparc-eval train is the attacker recipe's subcommand: the same implementation."""
    import recipes.train_attacker as recipe
    from sparc_eval import cli
    from sparc_eval.attack import train

    assert "train" in cli.COMMANDS and recipe.main is train.main
    help_text = subprocess.run(
        [sys.executable, "-m", "sparc_eval.cli", "--help"], capture_output=True, text=True
    ).stdout
    assert "train" in help_text and "anonymize" in help_text
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "sparc_eval.cli",
            "train",
            str(REPO / "hparams" / "phones.yaml"),
            "--no_such_key=1",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert bad.returncode == 2 and "sparc-eval train: error: " in bad.stderr
    assert "no_such_key" in bad.stderr
