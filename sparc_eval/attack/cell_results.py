"""A cell's evaluation: what ``cell.json`` keeps of it, and a reused cell evaluated again.

A cell's scores are reused while what makes them is unchanged (:func:`.cells.cell_key`); its
evaluation (metrics, CIs, flags, the panel) is made again from ``scores.txt`` on every run, with
today's code and settings, so one card never mixes versions and a metrics fix never re-scores. This
module is evaluation, not scoring: its code is not in the scores' key (:mod:`.code`).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..atomic import write_json
from ..digest import digest
from .code import evaluation_code
from .evaluation import EvaluationSettings
from .run import evaluate_attack
from .trials import Trials


def cell_summary(evaluation, trials: Trials) -> dict:
    """What cell.json keeps of the cell's one evaluation."""
    left_out = {
        k.split(".", 1)[1]: v
        for k, v in evaluation["not_applicable"].items()
        if k.startswith("segments.") and v.endswith("skipped")
    }
    return {
        "overall": evaluation["overall"],
        "per_speaker": evaluation["per_speaker"],
        "segments": evaluation["segments"],
        "segments_left_out": left_out,
        "n_trial_speakers": trials.scored().n_test_speakers(),
        "n_missing_scores": trials.n_unscored,
        "singling_out": evaluation.get("singling_out"),
        **({"lists": evaluation["lists"]} if evaluation.get("lists") else {}),
    }


def plots_key(settings: EvaluationSettings) -> str:
    """What a cell's plots are drawn with besides its scores: the evaluation settings and code."""
    return digest([settings.digest_parts(), evaluation_code()])


def cell_trials(cell_dir: Path) -> Trials:
    """The scored trials of a finished cell, for comparisons (with their enrolled speakers where
    the cell wrote them: cells before the two-way bootstrap did not)."""
    from ..metrics import read_utt2spk

    enrolled = cell_dir / "enroll2spk"
    return Trials.read(
        cell_dir / "scores.txt",
        read_utt2spk(cell_dir / "utt2spk"),
        enroll2spk=read_utt2spk(enrolled) if enrolled.is_file() else None,
    )


def evaluated_again(cell: dict, cell_dir: Path, attacker, plan, settings, *, plots: bool, speakers):
    """A reused cell evaluated again from its scores.txt; singling out, which reads the
    embeddings, stays as the scores' run computed it (its code is in the scores' key).
    results.json and report.md are rewritten to match, and the plots redrawn when the settings
    or code they were drawn with changed."""
    if cell.get("status") != "ok":
        return cell
    trials = cell_trials(cell_dir)
    evaluation = evaluate_attack(attacker, trials, plan, settings, speakers)
    evaluation["singling_out"] = cell.get("singling_out")
    redraw = plots and cell.get("plots_made_with") != plots_key(settings)
    cell = {
        **cell,
        **cell_summary(evaluation, trials),
        "n_missing_scores": cell.get("n_missing_scores", 0),  # scores.txt holds the scored only
        **({"plots_made_with": plots_key(settings)} if redraw else {}),
    }
    _rewrite_results(cell_dir, evaluation, settings, redraw=redraw)
    write_json(cell_dir / "cell.json", cell)
    return cell


def _rewrite_results(cell_dir: Path, evaluation, settings: EvaluationSettings, *, redraw) -> None:
    """results.json and report.md of a reused cell with its new evaluation, the run record kept;
    the plots drawn again (``redraw``) or kept."""
    from ..metrics import write_report
    from ..provenance import bootstrap_deviation, merge_deviations

    path = cell_dir / "results.json"
    try:
        info = json.loads(path.read_text()).get("run") or {}
    except (OSError, json.JSONDecodeError):
        return
    deviations = {
        k: v
        for k, v in (info.get("deviations") or {}).items()
        if not k.startswith("bootstrap_unit")
    }
    info.pop("bootstrap", None)  # which bootstrap made the CIs: this evaluation's says
    info.update(settings.record())
    info["deviations"] = merge_deviations(deviations, bootstrap_deviation(settings.bootstrap.unit))
    kept = [] if redraw else sorted(str(p) for p in cell_dir.glob("*.png"))
    write_report(cell_dir, evaluation, info, plots=redraw, kept_plots=kept)
