"""docs/architecture.md: imports run one way. The library (sparc_eval/) never imports attackers/,
anonymizers/ or recipes/, not even inside a function; plug-ins reach it through hparams and entry
points. The metrics code imports neither torch nor SpeechBrain."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLUGIN_PACKAGES = ("attackers", "anonymizers", "recipes")


def imported_modules(source: str) -> list:
    """(line, module) of every import statement in the source, at any depth (functions, classes,
    try blocks); relative imports are left out (they stay inside their package)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def violations(root: Path, forbidden) -> list:
    out = []
    for path in sorted(root.rglob("*.py")):
        for line, module in imported_modules(path.read_text(encoding="utf-8")):
            if module.split(".")[0] in forbidden:
                out.append(f"{path.relative_to(root.parent)}:{line} imports {module}")
    return out


def test_the_library_imports_no_plugin_package():
    assert violations(REPO / "sparc_eval", PLUGIN_PACKAGES) == []


def test_the_metrics_code_imports_no_torch():
    assert violations(REPO / "sparc_eval" / "metrics", ("torch", "speechbrain", "torchaudio")) == []


def test_a_planted_lazy_import_is_caught(tmp_path):
    module = tmp_path / "sparc_eval" / "planted.py"
    module.parent.mkdir()
    module.write_text(
        "def f():\n    try:\n        from attackers.ecapa_attacker import EcapaAttacker\n"
        "    except ImportError:\n        import recipes.train_attacker\n"
    )
    assert violations(module.parent, PLUGIN_PACKAGES) == [
        "sparc_eval/planted.py:3 imports attackers.ecapa_attacker",
        "sparc_eval/planted.py:5 imports recipes.train_attacker",
    ]


def absolute_imports(path: Path, root: Path) -> list:
    """(line, module) of every import in a library file, relative ones resolved to dotted names."""
    # the package a relative import starts from: the folder of a module or of an __init__
    package = list(path.relative_to(root.parent).with_suffix("").parts)[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            found.append((node.lineno, ".".join(base + ([node.module] if node.module else []))))
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


def test_the_library_parts_below_the_jobs_never_import_them():
    """docs/architecture.md: data, speech, anonymization, attack, utility, metrics and phones (and
    the root modules) serve the jobs; a job's module imported by them would turn the layers round."""
    root = REPO / "sparc_eval"
    found = []
    for path in sorted(root.rglob("*.py")):
        part = path.relative_to(root).parts[0]
        if part in (
            "jobs",
            "cli.py",
            "moved.py",
        ):  # cli dispatches to jobs by name; moved maps old names
            continue
        for line, module in absolute_imports(path, root):
            if module == "sparc_eval.jobs" or module.startswith("sparc_eval.jobs."):
                found.append(f"{path.relative_to(REPO)}:{line} imports {module}")
    assert found == []


def test_a_planted_upward_import_is_caught(tmp_path):
    module = tmp_path / "sparc_eval" / "data" / "planted.py"
    module.parent.mkdir(parents=True)
    module.write_text("from ..jobs.card.run import corpus_spec\n")
    assert absolute_imports(module, tmp_path / "sparc_eval") == [(1, "sparc_eval.jobs.card.run")]


def _imports_under(folder: Path) -> list:
    """(file, line, module) of every import in the Python files under ``folder``, at any depth,
    relative ones resolved (for the library) to dotted names."""
    root = REPO / "sparc_eval"
    found = []
    for path in sorted(folder.rglob("*.py")):
        pairs = (
            absolute_imports(path, root)
            if root in path.parents
            else imported_modules(path.read_text(encoding="utf-8"))
        )
        found += [(path.relative_to(REPO), line, module) for line, module in pairs]
    return found


JOBS = sorted(
    p.name for p in (REPO / "sparc_eval" / "jobs").iterdir() if (p / "__init__.py").is_file()
)


def _job_of(module: str):
    """The job a dotted module belongs to (a package of sparc_eval/jobs: card, leakage, text),
    else None (the modules beside them, such as ``jobs.tables``, serve every job)."""
    parts = module.split(".")
    return (
        parts[2]
        if parts[:2] == ["sparc_eval", "jobs"] and parts[2:3] and parts[2] in JOBS
        else None
    )


def test_no_job_imports_another_job():
    """Issue 64: what two jobs share lives below them (sparc_eval.attack, sparc_eval.text_trials)."""
    jobs = REPO / "sparc_eval" / "jobs"
    found = []
    for path, line, module in _imports_under(jobs):
        own = path.parts[2] if len(path.parts) > 3 else None  # sparc_eval/jobs/<job>/x.py
        other = _job_of(module)
        if own and other and other != own:
            found.append(f"{path}:{line} imports {module}")
    assert found == []


def test_no_plugin_imports_a_job():
    """Plug-ins build on the library (sparc_eval.text_trials for the text attackers), never on a
    job; recipes are the jobs' entry points and may."""
    found = [
        f"{path}:{line} imports {module}"
        for folder in ("attackers", "anonymizers")
        for path, line, module in _imports_under(REPO / folder)
        if module == "sparc_eval.jobs" or module.startswith("sparc_eval.jobs.")
    ]
    assert found == []


# a namedtuple's public methods start with "_"
NAMEDTUPLE_API = {"_asdict", "_replace", "_make"}
# another package's private method, on purpose: faster-whisper's segment splitter, which the
# batched transcription (transcribe_many) reuses so its transcripts equal transcribe()'s
THIRD_PARTY_PRIVATE = {"_split_segments_by_timestamps"}


def _private_calls(path: Path) -> list:
    """``name._private(...)`` calls whose receiver is not ``self``/``cls``, whose method this file
    does not define, and whose receiver is not a module from outside the library (``os._exit``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    outside = {
        alias.asname or alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if not alias.name.startswith("sparc_eval")
    }
    return [
        (node.lineno, f"{node.func.value.id}.{node.func.attr}")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr.startswith("_")
        and not node.func.attr.startswith("__")
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id not in {"self", "cls", *outside}
        and node.func.attr not in defined | NAMEDTUPLE_API | THIRD_PARTY_PRIVATE
    ]


def test_no_call_of_another_modules_private_function():
    """A private name (``_x``) belongs to its module: no module of the library calls another's."""
    found = [
        f"{path.relative_to(REPO)}:{line} calls {call}"
        for path in sorted((REPO / "sparc_eval").rglob("*.py"))
        for line, call in _private_calls(path)
    ]
    assert found == []


def test_a_planted_private_call_is_caught(tmp_path):
    module = tmp_path / "planted.py"
    module.write_text(
        "import os\nfrom . import pairing\n\n\ndef f(p):\n    os._exit(0)\n"
        "    pairing._record(1)\n    return p._json_lines()\n"
    )
    assert _private_calls(module) == [(7, "pairing._record"), (8, "p._json_lines")]


# --- floors and circles --------------------------------------------------------------------------

# docs/architecture.md's table, lowest floor first: a part imports only the floors below it
FLOORS = (
    ("root",),
    ("speech",),
    ("data",),
    ("phones", "metrics"),
    ("utility",),
    ("anonymization",),
    ("attack",),
    ("text_trials",),
    ("jobs",),
    ("demo", "llm_server"),
)
LIBRARY = REPO / "sparc_eval"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_lines(tree) -> set:
    """Lines under ``if TYPE_CHECKING:``: imports for annotations, never run."""
    return {
        inner.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
        for inner in ast.walk(node)
        if hasattr(inner, "lineno")
    }


def _module_imports(path: Path, modules: set) -> set:
    """The library modules one file imports, at any depth (``from . import x`` as module x)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = list(path.relative_to(REPO).with_suffix("").parts)[:-1]
    skip, found = _type_checking_lines(tree), set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package[: len(package) - (node.level - 1)] + ([base] if base else [])
                )
            found |= {
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
            }
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m in modules} - {_module_name(path)}


def _import_graph() -> dict:
    paths = {_module_name(p): p for p in LIBRARY.rglob("*.py")}
    return {name: _module_imports(path, set(paths)) for name, path in paths.items()}


def _floor(module: str) -> int:
    part = module.split(".")[1] if module.count(".") else "root"
    part = part if (LIBRARY / part).is_dir() else "root"
    return next(i for i, names in enumerate(FLOORS) if part in names)


def test_no_import_runs_up_a_floor():
    found = [
        f"{a} imports {b}"
        for a, imported in sorted(_import_graph().items())
        if a not in ("sparc_eval.cli", "sparc_eval.moved")  # the dispatcher and the old names
        for b in sorted(imported)
        if _floor(b) > _floor(a)
    ]
    assert found == []


def _circles(graph: dict) -> list:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start), on.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None and child not in index:
                index[child] = low[child] = len(index)
                stack.append(child), on.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child is not None:
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        out.append(sorted(group))
    return out


def test_no_import_circle():
    """Imports at any depth count (a lazy import is still a dependency); ``if TYPE_CHECKING``
    ones do not run."""
    assert _circles(_import_graph()) == []


def test_a_planted_circle_is_found():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_of_another_modules_private_name():
    """``from .module import _name``: a private name stays in its module (aliases such as
    ``import x as _x`` are the importer's own and allowed)."""
    found = []
    for path in sorted(LIBRARY.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (
                node.level or (node.module or "").startswith("sparc_eval")
            ):
                found += [
                    f"{path.relative_to(REPO)}:{node.lineno} imports {alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
    assert found == []
