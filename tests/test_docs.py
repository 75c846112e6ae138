"""The docs as written: every Python block of every page runs, page by page, in order, in one
namespace per page, in a folder where the demo corpus lies at ``results/demo/corpus_reading``
(what ``sparc-eval demo`` builds). Shell blocks are shown, not run. Also: the README stays one page
and every figure is on a docs page."""

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
FENCE = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)


def pages() -> list:
    skip = {"_build", "generated"}
    return sorted(p for p in DOCS.rglob("*.md") if not skip & set(p.relative_to(DOCS).parts))


def python_blocks(page: Path) -> list:
    """(line, code) of each ```python block of a page."""
    text = page.read_text()
    return [(text[: m.start()].count("\n") + 2, m.group(1)) for m in FENCE.finditer(text)]


PAGES_WITH_CODE = [p for p in pages() if python_blocks(p)]


def test_every_plugin_guide_has_code_that_runs():
    guides = {p.name for p in PAGES_WITH_CODE if p.parent.name == "plugins"}
    assert guides == {"anonymizer.md", "attacker.md", "utility_metric.md", "corpus_loader.md"}


@pytest.mark.parametrize(
    "page", PAGES_WITH_CODE, ids=[str(p.relative_to(DOCS)) for p in PAGES_WITH_CODE]
)
def test_docs_page_runs(page, demo_dir, tmp_path, monkeypatch):
    (tmp_path / "results/demo").mkdir(parents=True)
    os.symlink(demo_dir, tmp_path / "results/demo/corpus_reading")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"docs_{page.stem}"}
    for line, code in python_blocks(page):
        where = f"{page.relative_to(REPO)}, block at line {line}"
        exec(compile(code, where, "exec"), namespace)


def test_readme_is_one_page_and_figures_are_documented():
    readme = (REPO / "README.md").read_text()
    assert readme.count("\n") <= 200
    for link in re.findall(r"\]\(((?:docs/|CHANGELOG)[^)#]*)\)", readme):
        assert (REPO / link).is_file(), f"README links to a missing file: {link}"
    text = "\n".join(p.read_text() for p in pages())
    for figure in (DOCS / "figures").glob("*.png"):
        assert f"figures/{figure.name}" in text, f"{figure.name} is on no docs page"
