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
