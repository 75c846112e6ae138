"""The code that makes an attacker's scores, as one digest: a cell's scores are reused only while
that code is unchanged, so an upgrade that fixes a scorer re-scores, and one that fixes a metric
does not (metrics are recomputed from scores.txt on every run).

The code is the attacker's class and its bases, the classes of the objects it holds (a text
attacker's scorer), the cell engine that plans and thins its trials, and every module they import,
at any depth, lazy imports inside functions included, read from the source without importing it,
within the attacker's own top-level package and the library (SPARC's trial building in
``jobs/text`` included); the metrics, the card, the leakage comparison and the CLI are not scoring
code, but for singling out, which reads the embeddings and is kept with the scores.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Optional

from ..digest import digest, file_digest

LIBRARY = "sparc_eval"
CELL_ENGINE = ("sparc_eval.attack.cells", "sparc_eval.attack.run")
KEPT_WITH_SCORES = ("sparc_eval.metrics.singling_out",)  # a reused cell keeps its singling out
NOT_SCORING = (
    "sparc_eval.metrics",
    "sparc_eval.jobs.card",
    "sparc_eval.jobs.leakage",
    "sparc_eval.cli",
    "sparc_eval.attack.evaluation",
    "sparc_eval.attack.subsets",
    "sparc_eval.attack.cell_results",
    "sparc_eval.attack.code",
    "sparc_eval.logs",
)


@lru_cache(maxsize=None)
def _package_folders(top: str) -> tuple:
    try:
        spec = importlib.util.find_spec(top)  # imports nothing below the top-level package
    except (ImportError, ValueError):
        return ()
    return tuple(getattr(spec, "submodule_search_locations", None) or ()) if spec else ()


@lru_cache(maxsize=None)
def module_file(name: str) -> Optional[str]:
    """The source file of module ``name`` in a package on disk, found without importing it (None
    for a name that is no module there)."""
    top, *parts = name.split(".")
    for folder in _package_folders(top):
        base = Path(folder).joinpath(*parts)
        for path in (base.with_suffix(".py") if parts else None, base / "__init__.py"):
            if path is not None and path.is_file():
                return str(path)
    return None


@lru_cache(maxsize=None)
def module_digest(name: str) -> str:
    """The digest of one module's source (a simulated upgrade patches this)."""
    path = module_file(name)
    return file_digest(path) if path else "no source"


def _absolute(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = name.split(".") if is_package else name.split(".")[:-1]
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@lru_cache(maxsize=None)
def imported_modules(name: str) -> tuple:
    """The modules module ``name`` imports anywhere in its source (``from x import y`` gives x,
    and x.y when that is a module)."""
    path = module_file(name)
    if path is None:
        return ()
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=path)
    is_package = path.endswith("__init__.py")
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, name, is_package)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return tuple(sorted(m for m in found if m and module_file(m)))


def _scoring(name: str, packages: tuple) -> bool:
    inside = any(name == p or name.startswith(p + ".") for p in packages)
    return inside and not any(name == p or name.startswith(p + ".") for p in NOT_SCORING)


def module_closure(roots, packages: tuple, *, always: tuple = ()) -> list:
    """``roots`` and every module they import, transitively, within ``packages`` (``always``: roots
    taken even where they are not scoring code)."""
    seen, todo = set(), [r for r in roots if _scoring(r, packages)] + list(always)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(m for m in imported_modules(name) if _scoring(m, packages) and m not in seen)
    return sorted(seen)


def _attacker_roots(attacker, packages: tuple) -> list:
    """The modules of the attacker's class and bases, and of the objects it holds (a text
    attacker's scorer) where they are code of ``packages``: a model loaded later (a third-party
    encoder) is not, so the digest is the same before and after the attacker runs."""
    classes = [c for c in type(attacker).__mro__ if c is not object]
    held = [type(v) for v in vars(attacker).values()] if hasattr(attacker, "__dict__") else []
    held = [c for c in held if c.__module__.split(".")[0] in packages]
    return sorted({c.__module__ for c in classes + held})


def scores_code(attacker) -> str:
    """The digest of the code that makes ``attacker``'s scores (the module docstring)."""
    packages = tuple(sorted({LIBRARY, type(attacker).__module__.split(".")[0]}))
    roots = _attacker_roots(attacker, packages)
    modules = module_closure([*roots, *CELL_ENGINE], packages, always=KEPT_WITH_SCORES)
    return digest([[m, module_digest(m)] for m in modules])


def evaluation_code() -> str:
    """The digest of the metrics' code (``sparc_eval.metrics``), which draws a cell's plots."""
    folder = Path(module_file("sparc_eval.metrics")).parent
    names = sorted(
        f"sparc_eval.metrics.{p.stem}" for p in folder.glob("*.py") if p.stem != "__init__"
    )
    return digest([[m, module_digest(m)] for m in ["sparc_eval.metrics", *names]])
