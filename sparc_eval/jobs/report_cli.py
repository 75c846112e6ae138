"""``sparc-eval report``: re-render a finished card or leakage comparison, nothing recomputed.

    sparc-eval report OUTPUT_FOLDER [--pseudonymise] [--metrics=eer,auc] [--decimals=2]

Reads the folder's results.json (and, for the DET curves, its cells' scores) and rewrites
card.md (or report.md), table.csv, table.tex and the figures. Without options it writes what
the run wrote: the settings the rendering reads (``pseudonymise``, ``plots``) come from
``run`` in results.json. Nothing is trained or scored.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import DataError
from .tables import DEFAULT_TABLES, TableOptions

KINDS = ("anonymizer_card", "leakage_comparison")


def read_results(folder) -> dict:
    path = Path(folder) / "results.json"
    if not path.is_file():
        raise DataError(
            f"no results.json in {folder}: give the output folder of a finished anonymizer card "
            "or leakage comparison"
        )
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataError(f"{path} is not valid JSON ({err})") from None


def run_kind(doc: dict) -> str:
    """``run.kind``; a leakage comparison from before it recorded one is told by its blocks."""
    run = doc.get("run") if isinstance(doc.get("run"), dict) else {}
    kind = run.get("kind")
    if kind is None and {"fairness", "correlations", "cells"} <= set(doc):
        kind = "leakage_comparison"
    if kind not in KINDS:
        raise DataError(
            f"results.json of kind {kind!r}: sparc-eval report re-renders only "
            f"{' and '.join(KINDS)} folders"
        )
    return kind


def _made_plots(doc: dict, folder: Path, figure: str) -> bool:
    """Whether the run drew figures: ``run.plots``, or for a run from before it was recorded,
    whether its first figure is there."""
    plots = doc["run"].get("plots")
    return (folder / figure).is_file() if plots is None else bool(plots)


def rerender(folder, *, pseudonymise: bool | None = None, tables=DEFAULT_TABLES) -> Path:
    """Rewrites the folder's report, tables and figures; returns the report's path."""
    folder = Path(folder)
    doc = read_results(folder)
    kind = run_kind(doc)
    if pseudonymise is None:
        pseudonymise = bool(doc["run"].get("pseudonymise", False))
    if kind == "anonymizer_card":
        from .card.report import render_card_folder

        plots = _made_plots(doc, folder, "eer_by_attacker.png")
        return render_card_folder(
            folder, doc, pseudonymise=pseudonymise, plots=plots, tables=tables
        )
    from .leakage.report import write_leakage_report

    plots = _made_plots(doc, folder, "eer_by_corpus.png")
    return write_leakage_report(folder, doc, plots=plots, pseudonymise=pseudonymise, tables=tables)


def _metrics(text: str) -> tuple:
    names = tuple(m.strip() for m in text.split(",") if m.strip())
    if not names:
        raise argparse.ArgumentTypeError("name at least one metric, e.g. eer,auc")
    return names


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "report",
        help="re-render a card or leakage comparison from its results.json (nothing recomputed)",
        description="Rewrite card.md (or report.md), table.csv, table.tex and the figures of a "
        "finished anonymizer card or leakage comparison from its results.json and its cells' "
        "scores; nothing is retrained or rescored. Without options the files are the run's.",
    )
    p.add_argument("folder", metavar="OUTPUT_FOLDER", help="the run's output folder")
    p.add_argument(
        "--pseudonymise",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="name speakers S01, S02, ... (default: as the run did)",
    )
    p.add_argument(
        "--metrics",
        type=_metrics,
        default=None,
        help="comma-separated metrics of table.csv and table.tex, e.g. eer,auc,tpr_at_fpr "
        "(default: every metric in table.csv, EER in table.tex)",
    )
    p.add_argument(
        "--decimals",
        type=int,
        default=1,
        help="decimals of the percentages in table.tex (other metrics get two more; default 1)",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    if args.decimals < 0:
        raise DataError(f"--decimals must be 0 or more, not {args.decimals}")
    tables = TableOptions(metrics=args.metrics, decimals=args.decimals)
    path = rerender(args.folder, pseudonymise=args.pseudonymise, tables=tables)
    print(path)
    return 0
