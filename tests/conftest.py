"""Shared fixtures. Real data comes from $SPARC_EVAL_DATA (default ../shared/data beside the repo);
tests that need it skip only when it is absent."""

import importlib.util
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SPARC_EVAL_DATA", REPO.parent / "shared" / "data"))
# CI (.ci/run sets CI=true) has every package `make test` installs and the real data: a skip there
# hides a broken install or a missing file, so it fails. Opt-in tests are deselected by marker.
IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """A slow test says why: ``@pytest.mark.slow("trains ECAPA on the demo corpus: about 10 s")``
    (make test leaves slow tests out; make test-all runs them)."""
    for item in items:
        for mark in item.iter_markers("slow"):
            why = mark.args[0] if mark.args else mark.kwargs.get("reason")
            if not (isinstance(why, str) and why.strip()):
                raise pytest.UsageError(
                    f"{item.nodeid}: @pytest.mark.slow needs its reason, e.g. "
                    '@pytest.mark.slow("trains ECAPA on the demo corpus: about 10 s")'
                )


def _fail_a_skip_in_ci(report) -> None:
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where nothing may skip: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    _fail_a_skip_in_ci((yield).get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    _fail_a_skip_in_ci((yield).get_result())  # a module-level importorskip


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.skip(f"real data not found at {DATA} (set SPARC_EVAL_DATA)")
    return DATA


# --- the built-in demo corpus (built once per session; tests/test_demo.py) -----------------------


@pytest.fixture(scope="session")
def demo_reading_corpus(tmp_path_factory):
    """The default demo corpus in reading mode (48 speakers x 20 utterances, seed 0): its Manifest,
    whose ``name`` is the path of its manifest.jsonl."""
    from sparc_eval.demo import build_demo_corpus

    return build_demo_corpus(
        tmp_path_factory.mktemp("demo_reading"), mode="reading", progress=False
    )


@pytest.fixture(scope="session")
def demo_conversation_corpus(tmp_path_factory):
    """The default demo corpus in conversation mode (48 speakers x 20 utterances, seed 0)."""
    from sparc_eval.demo import build_demo_corpus

    return build_demo_corpus(
        tmp_path_factory.mktemp("demo_conversation"), mode="conversation", progress=False
    )


@pytest.fixture(scope="session")
def demo_dir(demo_reading_corpus) -> Path:
    """The folder of the reading-mode demo corpus (what --data_folder takes)."""
    return Path(demo_reading_corpus.name).parent


@pytest.fixture(scope="session")
def small_demo_corpus(tmp_path_factory):
    """A small reading-mode demo corpus (12 speakers x 8 utterances, seed 0), built once for the
    cards, the tables and the VoicePrivacy tree; tests read it and write nothing into it."""
    from sparc_eval.demo import build_demo_corpus

    return build_demo_corpus(
        tmp_path_factory.mktemp("small_demo"),
        mode="reading",
        n_speakers=12,
        utts_per_speaker=8,
        progress=False,
    )


@pytest.fixture(scope="session")
def small_demo(small_demo_corpus) -> Path:
    """The folder of the small demo corpus."""
    return Path(small_demo_corpus.name).parent


def _load_recipe(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "recipes" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def recipe():
    """``recipe("train_attacker")``: a recipe script loaded as a module (its ``main(argv)``)."""
    return _load_recipe
