"""Sphinx configuration: MyST pages, the API from docstrings, no network (no intersphinx)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from api_pages import write_api_pages  # noqa: E402
from page_rules import page_problems  # noqa: E402

from sparc_eval import __version__  # noqa: E402

# The API reference, written afresh at every build: one page per package, every module on it.
write_api_pages(ROOT, Path(__file__).parent / "api" / "generated")

project = "sparc-eval"
author = "the sparc-eval developers"
copyright = "2026, the sparc-eval developers"
release = version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
exclude_patterns = ["_build"]
html_theme = "furo"
html_title = f"sparc-eval {release}"

autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
# API objects stay out of the navigation (module headings are enough), which keeps it cheap.
toc_object_entries = False
autodoc_typehints = "description"
# Heavy optional backends that are not installed by default: documented without being imported.
autodoc_mock_imports = ["nemo", "whisper", "llama_cpp"]

# Every reference to the project's own objects must resolve; other libraries' names cannot (no
# intersphinx without the network), so they are listed here by prefix.
nitpicky = True
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(numpy|np|torch|speechbrain|sklearn|scipy|pandas|pyarrow|ray|httpx|matplotlib)\b.*",
    ),
    (
        r"py:.*",
        r"(pathlib|os|typing|collections|dataclasses|concurrent|argparse|io|json|logging)\b.*",
    ),
    (
        r"py:.*",
        r"(NDArray|ArrayLike|Path|PathLike|Callable|Iterable|Iterator|Mapping|Sequence)\b.*",
    ),
    (r"py:.*", r"(optional|callable|array-like|array|ndarray|Tensor|module)$"),
    # The standard library's abstract base class, named by show-inheritance.
    (r"py:class", r"abc\.ABC"),
    # The project's private base classes (a leading underscore, e.g. _PocketsphinxBase) are not
    # documented by design; show-inheritance still names them. Classes only, never functions.
    (r"py:class", r"(sparc_eval|anonymizers|attackers)(\.\w+)*\._[A-Za-z]\w*"),
]


def _check_page(app, docname, source):
    """A page that breaks :mod:`page_rules` warns, which ``-W`` makes an error."""
    from sphinx.util import logging

    if docname.startswith("api/"):
        return
    for problem in page_problems(docname, source[0]):
        logging.getLogger(__name__).warning(f"{problem}", location=docname)


def setup(app):
    app.connect("source-read", _check_page)
