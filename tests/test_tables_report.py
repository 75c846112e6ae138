"""table.csv and table.tex of the card and the leakage comparison, and ``sparc-eval report``:
the run's files again from results.json alone, byte for byte, nothing retrained or rescored."""

import csv
import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

from sparc_eval.cli import main as cli
from sparc_eval.jobs.tables import TableCell, TableOptions, render_tex, tex_escape

REPO = Path(__file__).resolve().parents[1]

CARD = """seed: 0
anonymizer: identity
anonymizer_options: {{}}
output_folder: {out}
cache_folder: {out}/cache
progress: False
plots: True
num_threads: 1
pseudonymise: False
data_folder: {data}
scenarios: [ignorant, lazy-informed]
attackers:
    bag:
        hparams: {repo}/hparams/bag_of_phones.yaml
content_attacker: bag
utility: {{}}
n_boot: 50
"""

LEAKAGE = """seed: 0
output_folder: {out}
cache_folder: {out}/cache
progress: False
plots: True
num_threads: 1
n_boot: 50
conditions: [all, no_shared]
corpora:
    reading:
        data_folder: {data}
attackers:
    tfidf:
        kind: text
        P: 20
        L: 2
        scorer: !new:attackers.text.tfidf.TfidfScorer
"""


def _load_recipe(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "recipes" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(tmp_path_factory, small_demo, name, template, recipe, *extra) -> Path:
    out = tmp_path_factory.mktemp(name)
    hparams = out.parent / f"{out.name}.yaml"
    hparams.write_text(template.format(out=out, data=small_demo, repo=REPO))
    assert _load_recipe(recipe).main([str(hparams), *extra]) == 0
    return out


@pytest.fixture(scope="module")
def card_folder(tmp_path_factory, small_demo) -> Path:
    """A finished card: the identity anonymizer against the bag-of-phones attacker (seconds)."""
    return _run(tmp_path_factory, small_demo, "card", CARD, "evaluate_anonymizer", "--n_enroll=3")


@pytest.fixture(scope="module")
def leakage_folder(tmp_path_factory, small_demo) -> Path:
    """A finished leakage comparison: TF-IDF on the demo corpus, both conditions (seconds)."""
    return _run(tmp_path_factory, small_demo, "leakage", LEAKAGE, "compare_leakage")


def _copy(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / folder.name))


def _cells(doc: dict):
    for where, by in doc["cells"].items():
        for attacker, by_sc in by.items():
            for scenario, cell in by_sc.items():
                yield (where, attacker, scenario), cell


def _overall_numbers(overall: dict) -> dict:
    """What the test expects table.csv to hold: every number (or null) of the block, nested
    blocks flattened, counts and CIs aside."""
    skip = {"ci95", "small_evaluation", "n_target", "n_nontarget", "worst_speakers"}
    found = {}
    for key, value in overall.items():
        if key in skip:
            continue
        if isinstance(value, dict):
            found.update({f"{key}@{k}": v for k, v in value.items() if not isinstance(v, str)})
        elif value is None or isinstance(value, (int, float)) and not isinstance(value, bool):
            found[key] = value
    return found


def _number(text: str):
    return None if text == "" else float(text)


def _check_csv(folder: Path, label_names: tuple) -> None:
    doc = json.loads((folder / "results.json").read_text())
    rows = list(csv.DictReader((folder / "table.csv").open()))
    by_cell = {}
    for row in rows:
        by_cell.setdefault(tuple(row[n] for n in label_names), {})[row["metric"]] = row
    cells = dict(_cells(doc))
    assert set(by_cell) == set(cells)
    for labels, cell in cells.items():
        assert cell["status"] == "ok"
        overall, got = cell["overall"], by_cell[labels]
        expected = _overall_numbers(overall)
        assert set(got) == set(expected) and "eer" in got
        for metric, value in expected.items():
            assert _number(got[metric]["value"]) == value, (labels, metric)
        ci = overall["ci95"]["eer"]
        assert [_number(got["eer"]["ci_low"]), _number(got["eer"]["ci_high"])] == ci
        assert int(got["eer"]["n_target"]) == overall["n_target"]
        assert int(got["eer"]["n_nontarget"]) == overall["n_nontarget"]
        assert int(got["eer"]["n_speakers"]) == cell["n_trial_speakers"]


def _tex_rows(tex: str) -> list:
    """The body rows of the one tabular: between the header's \\midrule and \\bottomrule."""
    body = tex.split("\\bottomrule")[0].split("\\toprule")[1]
    lines = [line for line in body.splitlines() if line.endswith("\\\\")]
    return [line[: -len("\\\\")].strip().split(" & ") for line in lines[1:]]


def _check_tex(folder: Path) -> None:
    doc = json.loads((folder / "results.json").read_text())
    tex = (folder / "table.tex").read_text()
    opened = re.findall(r"\\begin\{(\w+)\}", tex)
    closed = re.findall(r"\\end\{(\w+)\}", tex)
    assert opened == ["table", "tabular"] and closed == ["tabular", "table"]
    assert tex.index("\\toprule") < tex.index("\\midrule") < tex.index("\\bottomrule")
    rows = _tex_rows(tex)
    cells = list(_cells(doc))
    assert len(rows) == len(cells)
    for row, (labels, cell) in zip(rows, cells):
        assert row[:3] == [tex_escape(x) for x in labels]
        eer, (lo, hi) = cell["overall"]["eer"], cell["overall"]["ci95"]["eer"]
        assert row[3].startswith(f"{100 * eer:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]")
        for name in row[:3]:
            assert not re.search(r"(?<!\\)[_%&]", name), name


def test_a_card_writes_table_csv_with_every_cell_and_metric(card_folder):
    _check_csv(card_folder, ("anonymizer", "attacker", "scenario"))


def test_a_card_writes_a_booktabs_table_of_its_eers(card_folder):
    _check_tex(card_folder)
    doc = json.loads((card_folder / "results.json").read_text())
    assert doc["run"]["kind"] == "anonymizer_card" and doc["run"]["plots"] is True


def test_a_leakage_comparison_writes_both_tables(leakage_folder):
    _check_csv(leakage_folder, ("corpus", "attacker", "condition"))
    _check_tex(leakage_folder)
    tex = (leakage_folder / "table.tex").read_text()
    assert "no\\_shared" in tex and "no_shared" not in tex.replace("no\\_shared", "")


def test_names_are_latex_escaped_and_metrics_chosen():
    overall = {"eer": 0.25, "auc": 0.8125, "ci95": {"eer": [0.125, 0.375], "auc": [0.75, 0.875]}}
    cells = [
        TableCell(("my_anon & co", "50% bag", "ignorant"), {"status": "ok", "overall": overall}),
        TableCell(("x", "y", "z"), {"status": "not_applicable", "reason": "text-only"}),
    ]
    tex = render_tex(
        ("anonymizer", "attacker", "scenario"), cells, "C.", TableOptions(("eer", "auc"), 2)
    )
    rows = _tex_rows(tex)
    assert rows[0] == [
        "my\\_anon \\& co",
        "50\\% bag",
        "ignorant",
        "25.00 [12.50, 37.50]",
        "0.8125 [0.7500, 0.8750]",
    ]
    assert rows[1][3:] == ["n/a", "n/a"]
    assert (
        tex_escape("a\\b{c}~^#$")
        == "a\\textbackslash{}b\\{c\\}\\textasciitilde{}\\textasciicircum{}\\#\\$"
    )


@pytest.fixture
def nothing_recomputed(monkeypatch):
    """Any attack or cell run fails the test."""
    import sparc_eval.attack as attack
    import sparc_eval.attack.cells as cells

    def refuse(*args, **kwargs):
        raise AssertionError("sparc-eval report must not train or score")

    monkeypatch.setattr(cells, "run_cell", refuse)
    monkeypatch.setattr(cells, "run_attack", refuse)
    monkeypatch.setattr(attack, "run_attack", refuse)


def _snapshot(folder: Path, names: tuple) -> dict:
    return {n: (folder / n).read_bytes() for n in names}


def _cell_mtimes(folder: Path) -> dict:
    return {p: p.stat().st_mtime_ns for p in (folder / "cells").rglob("*") if p.is_file()}


def test_report_rewrites_the_card_byte_for_byte(card_folder, tmp_path, capsys, nothing_recomputed):
    folder = _copy(card_folder, tmp_path)
    files = ("card.md", "table.csv", "table.tex")
    before, mtimes = _snapshot(folder, files), _cell_mtimes(folder)
    for name in (*files, "det.png", "per_speaker.png"):
        (folder / name).unlink()
    assert cli(["report", str(folder)]) == 0
    assert capsys.readouterr().out.strip() == str(folder / "card.md")
    assert _snapshot(folder, files) == before
    assert (folder / "det.png").is_file() and (folder / "per_speaker.png").is_file()
    assert _cell_mtimes(folder) == mtimes


def test_report_pseudonymises_speaker_names_only(card_folder, tmp_path, capsys, nothing_recomputed):
    from sparc_eval.jobs.card.report import pseudonyms_of

    folder = _copy(card_folder, tmp_path)
    original = (folder / "card.md").read_text()
    assert cli(["report", str(folder), "--pseudonymise"]) == 0
    renamed = (folder / "card.md").read_text()
    names = pseudonyms_of(json.loads((folder / "results.json").read_text()))
    changed = [(a, b) for a, b in zip(original.splitlines(), renamed.splitlines()) if a != b]
    assert len(original.splitlines()) == len(renamed.splitlines()) and changed
    for old, new in changed:
        for speaker, pseudonym in names.items():
            new = re.sub(rf"\b{pseudonym}\b", speaker, new)
        assert new == old
    assert cli(["report", str(folder)]) == 0  # the run's setting again: the run's card
    assert (folder / "card.md").read_text() == original


def test_report_rewrites_the_leakage_comparison(
    leakage_folder, tmp_path, capsys, nothing_recomputed
):
    folder = _copy(leakage_folder, tmp_path)
    files = ("report.md", "table.csv", "table.tex")
    before = _snapshot(folder, files)
    assert json.loads((folder / "results.json").read_text())["run"]["kind"] == "leakage_comparison"
    assert cli(["report", str(folder)]) == 0
    assert _snapshot(folder, files) == before
    assert cli(["report", str(folder), "--metrics=eer,auc", "--decimals=2"]) == 0
    rows = list(csv.DictReader((folder / "table.csv").open()))
    assert {r["metric"] for r in rows} == {"eer", "auc"}
    tex = (folder / "table.tex").read_text()
    assert "AUC" in tex and re.search(r"& \d+\.\d\d \[\d+\.\d\d, \d+\.\d\d\]", tex)


def test_report_refuses_what_it_cannot_render(tmp_path, capsys):
    assert cli(["report", str(tmp_path)]) == 2
    assert "no results.json in" in capsys.readouterr().err
    (tmp_path / "results.json").write_text(json.dumps({"run": {"kind": "attacker"}, "overall": {}}))
    assert cli(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "kind 'attacker'" in err and "anonymizer_card" in err
    (tmp_path / "results.json").write_text("{not json")
    assert cli(["report", str(tmp_path)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_report_names_an_unknown_metric(card_folder, tmp_path, capsys):
    folder = _copy(card_folder, tmp_path)
    assert cli(["report", str(folder), "--metrics=eer,bogus"]) == 2
    assert "no metric 'bogus'" in capsys.readouterr().err
