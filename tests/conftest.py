"""Shared fixtures and the suite's rules. Real data comes from $SPARC_EVAL_DATA (default
../shared/data beside the repo); tests that need it skip only when it is absent, and in CI a skip
fails."""

import importlib.util
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SPARC_EVAL_DATA", REPO.parent / "shared" / "data"))
# CI (.ci/run sets CI=true) has every package `make test` installs and the real data: a skip there
# hides a broken install or a missing file, so it fails. Opt-in tests are deselected by marker.
IN_CI = os.environ.get("CI", "").lower() == "true"


UNEXPLAINED_SLOW = (
    '@pytest.mark.slow needs its reason, e.g. @pytest.mark.slow("trains ECAPA on the demo corpus: '
    'about 10 s")'
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """A slow test says why: ``@pytest.mark.slow("trains ECAPA on the demo corpus: about 10 s")``
    (make test leaves slow tests out; make test-all runs them). Checked before deselection: an
    error at once when run serially; a pytest-xdist worker cannot stop the run cleanly, so there
    the test fails instead."""
    for item in items:
        for mark in item.iter_markers("slow"):
            why = mark.args[0] if mark.args else mark.kwargs.get("reason")
            if not (isinstance(why, str) and why.strip()):
                if "PYTEST_XDIST_WORKER" not in os.environ:
                    raise pytest.UsageError(f"{item.nodeid}: {UNEXPLAINED_SLOW}")
                item.add_marker(pytest.mark.unexplained_slow)


def pytest_runtest_setup(item):
    if item.get_closest_marker("unexplained_slow"):
        pytest.fail(UNEXPLAINED_SLOW)


def _reason(report) -> str:
    return report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where nothing may skip: {_reason(report)}"


def pytest_sessionfinish(session, exitstatus):
    """A module skipped whole (an importorskip at its top) has no test to fail: in CI the run
    fails instead, naming it, after every other test has run."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if IN_CI and skipped:
        for report in skipped:
            reporter.write_line(
                f"skipped in CI, where nothing may skip: {report.nodeid}: {_reason(report)}"
            )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
def tiny_demo(tmp_path_factory) -> Path:
    """The folder of a smaller reading-mode demo corpus (12 speakers x 6 utterances, seed 0), for
    the re-run tests that run a card several times; tests read it and write nothing into it."""
    from sparc_eval.demo import build_demo_corpus

    folder = tmp_path_factory.mktemp("tiny_demo")
    build_demo_corpus(folder, mode="reading", n_speakers=12, utts_per_speaker=6, progress=False)
    return folder


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
