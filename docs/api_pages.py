"""Writes the API reference pages: one Markdown page per package, an ``automodule`` per module.

One page per package rather than per module keeps the site small enough that the theme's
navigation (computed for every page) stays cheap: about 15 pages instead of 130."""

from __future__ import annotations

import pkgutil
from pathlib import Path

PACKAGES = ("sparc_eval", "anonymizers", "attackers")


def modules_under(root: Path, package: str) -> list:
    """Dotted names of a package's modules and subpackages (recursively), sorted."""
    path = root / package.replace(".", "/")
    found = [f"{package}.{m.name}" for m in pkgutil.iter_modules([str(path)])]
    return sorted(found)


def groups(root: Path) -> dict:
    """Page name -> modules on it: each package's own modules on its page, each subpackage on its own."""
    pages, todo = {}, list(PACKAGES)
    while todo:
        package = todo.pop(0)
        members = modules_under(root, package)
        subpackages = [m for m in members if (root / m.replace(".", "/")).is_dir()]
        pages[package] = [package, *(m for m in members if m not in subpackages)]
        todo.extend(subpackages)
    return pages


def page(package: str, modules: list) -> str:
    lines = [f"# `{package}`", ""]
    for module in modules:
        # autodoc writes reStructuredText, so its directive runs inside eval-rst (MyST's rule)
        lines += [f"## `{module}`", "", "```{eval-rst}", f".. automodule:: {module}", "```", ""]
    return "\n".join(lines)


def write_api_pages(root: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.md"):
        old.unlink()
    for package, modules in groups(root).items():
        (out / f"{package}.md").write_text(page(package, modules))
