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


def _page_rules():
    import importlib.util

    spec = importlib.util.spec_from_file_location("page_rules", DOCS / "page_rules.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_rules_catch_issue_numbers_and_long_paragraphs():
    rules = _page_rules()
    assert rules.page_problems("results/x", "As issue 31 made it.") != []
    assert rules.page_problems("changelog", "As issue 31 made it.") == []
    long = "\n".join(["word"] * 9)
    assert rules.page_problems("jobs/x", long) == ["line 1: a paragraph of 9 lines (at most 8)"]
    assert rules.page_problems("results/x", long) == []  # the rule is the job and plug-in pages'
    fenced = "```bash\n" + long + "\n```\n\n- item\n  one\n- item two"
    assert rules.paragraphs(fenced) == [(13, 2), (15, 1)]


def test_docs_pages_keep_history_out_and_stay_short():
    """Issue numbers only in the changelog, job and plug-in paragraphs of at most 8 lines (the
    docs build warns on both), no results page over 300 lines and the scale page at most 250."""
    rules = _page_rules()
    problems = []
    for page in pages():
        name = str(page.relative_to(DOCS).with_suffix(""))
        text = page.read_text()
        problems += [f"{name}: {p}" for p in rules.page_problems(name, text)]
        limit = 250 if name == "results/scale" else 300
        if name.startswith("results/") and text.count("\n") > limit:
            problems.append(f"{name}: {text.count(chr(10))} lines (at most {limit})")
    assert problems == []
