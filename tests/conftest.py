"""Shared fixtures. Real data comes from $SPARC_EVAL_DATA (default ../shared/data beside the repo);
tests that need it skip only when it is absent."""

import importlib.util
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


def _load_recipe(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "recipes" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def recipe():
    """``recipe("train_attacker")``: a recipe script loaded as a module (its ``main(argv)``)."""
    return _load_recipe
