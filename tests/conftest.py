"""Shared fixtures. Real data comes from $SPARC_EVAL_DATA (default ../shared/data beside the repo);
tests that need it skip only when it is absent."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SPARC_EVAL_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.skip(f"real data not found at {DATA} (set SPARC_EVAL_DATA)")
    return DATA
