"""The suite's own rules (tests/conftest.py), run on throwaway test files: in CI a skip fails, and
a slow test says why."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).with_name("conftest.py")


def _pytest(tmp_path, test_code: str, *args, ci: bool) -> subprocess.CompletedProcess:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    slow(reason): says why\n    unexplained_slow: a slow mark without its reason\n"
    )
    (tmp_path / "test_throwaway.py").write_text(test_code)
    (tmp_path / "test_other.py").write_text("def test_other():\n    pass\n")
    # not this run's: a pytest-xdist worker passes on PYTEST_XDIST_WORKER, and CI its CI
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith("PYTEST_")}
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )


MISSING_PACKAGE = """
import pytest

def test_needs_a_package():
    pytest.importorskip("a_package_nobody_installed")

def test_plain():
    pass
"""


def test_a_skip_fails_in_ci_and_stays_a_skip_elsewhere(tmp_path):
    local = _pytest(tmp_path, MISSING_PACKAGE, ci=False)
    assert local.returncode == 0 and "2 passed, 1 skipped" in local.stdout
    ci = _pytest(tmp_path, MISSING_PACKAGE, ci=True)
    assert ci.returncode == 1 and "1 failed, 2 passed" in ci.stdout
    assert "skipped in CI, where nothing may skip" in ci.stdout
    assert "a_package_nobody_installed" in ci.stdout


SKIPPED_MODULE = 'import pytest\n\npytest.importorskip("a_package_nobody_installed")\n'
SKIPPED_MODULE += "\n\ndef test_x():\n    pass\n"


def test_a_module_skipped_whole_fails_the_run_in_ci_after_the_other_tests(tmp_path):
    local = _pytest(tmp_path, SKIPPED_MODULE, ci=False)
    assert local.returncode == 0 and "1 passed, 1 skipped" in local.stdout
    for workers in ([], ["-n", "2"]):  # serially, and with pytest-xdist as make test runs
        ci = _pytest(tmp_path, SKIPPED_MODULE, *workers, ci=True)
        assert ci.returncode == 1, (workers, ci.stdout)
        assert "1 passed, 1 skipped" in ci.stdout  # the other file ran
        assert "skipped in CI, where nothing may skip: test_throwaway.py" in ci.stdout


def test_a_slow_test_must_say_why(tmp_path):
    unexplained = "import pytest\n\n@pytest.mark.slow\ndef test_x():\n    pass\n"
    run = _pytest(tmp_path, unexplained, ci=False)
    assert run.returncode != 0 and "@pytest.mark.slow needs its reason" in run.stderr
    workers = _pytest(tmp_path, unexplained, "-n", "2", ci=False)
    assert workers.returncode == 1 and "@pytest.mark.slow needs its reason" in workers.stdout
    explained = 'import pytest\n\n@pytest.mark.slow("sleeps: about 9 s")\ndef test_x():\n    pass\n'
    assert _pytest(tmp_path, explained, ci=False).returncode == 0
