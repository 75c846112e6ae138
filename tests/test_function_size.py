"""Functions that fit on a screen and settings passed as objects (issue 64): in the product code
(sparc_eval/, attackers/, anonymizers/, recipes/) no function runs over 80 lines, its docstring
included, and none takes more than 12 parameters, except the constructors an hparams file builds
with ``!new:`` (their keywords are that file's keys)."""

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRODUCT = ("sparc_eval", "attackers", "anonymizers", "recipes")
MAX_LINES, MAX_PARAMETERS = 80, 12


def _new_classes() -> set:
    """Class names built by ``!new:`` in the shipped hparams files."""
    found = set()
    for path in (REPO / "hparams").rglob("*.yaml"):
        found |= set(re.findall(r"!new:[\w.]+\.(\w+)", path.read_text(encoding="utf-8")))
    return found


def _functions():
    for folder in PRODUCT:
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    for item in node.body:
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            item.owner = node.name
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield path.relative_to(REPO), node


def _parameters(node) -> int:
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    return len([n for n in names if n not in ("self", "cls")])


def test_no_function_runs_over_80_lines_or_takes_more_than_12_parameters():
    built_by_hparams = _new_classes()
    long, wide = [], []
    for path, node in _functions():
        lines = node.end_lineno - node.lineno + 1
        if lines > MAX_LINES:
            long.append(f"{path}:{node.lineno} {node.name} ({lines} lines)")
        exempt = node.name == "__init__" and getattr(node, "owner", None) in built_by_hparams
        if _parameters(node) > MAX_PARAMETERS and not exempt:
            wide.append(f"{path}:{node.lineno} {node.name} ({_parameters(node)} parameters)")
    assert long == [] and wide == []


def test_the_rule_sees_a_planted_case():
    planted = ast.parse("def f(" + ", ".join(f"a{i}" for i in range(13)) + "):\n    pass\n")
    assert _parameters(planted.body[0]) == 13
    assert "LLMScorer" in _new_classes()
