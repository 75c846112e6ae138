"""``table.csv`` and ``table.tex``: a run's cells in the forms papers take.

The anonymizer card and the leakage comparison both hold a grid of cells (where x attacker x
scenario or condition), each with an ``overall`` metric block. ``table.csv`` is long: one row per
cell and metric, every number the block holds, with its 95% CI and counts. ``table.tex`` is a
booktabs table of the headline numbers (EER with its CI by default), one row per cell, ready to
``\\input`` (preamble: ``\\usepackage{booktabs}``). Both are pure functions of results.json.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from ..atomic import write_text
from ..errors import DataError

# overall keys that are counts or bookkeeping, not metrics (the counts have columns of their own)
NOT_METRICS = frozenset({"ci95", "small_evaluation", "n_target", "n_nontarget", "worst_speakers"})
# rates printed in percent in table.tex; every other metric is printed as a plain number
PERCENT_METRICS = ("eer", "tpr_at_fpr", "fpr_attained", "mean_speaker_eer")
TEX_DEFAULT_METRICS = ("eer",)
VALUE_COLUMNS = ("value", "ci_low", "ci_high")
COUNT_COLUMNS = ("n_speakers", "n_target", "n_nontarget")
STATUS_COLUMNS = ("status", "small_evaluation")
METRIC_TITLES = {
    "eer": "EER",
    "auc": "AUC",
    "min_dcf": "minDCF",
    "min_cllr": "min $C_{llr}$",
    "linkability": "$D_{\\leftrightarrow}^{sys}$",
    "tpr_at_fpr@0.01": "TPR@1\\%FPR",
    "tpr_at_fpr@0.001": "TPR@0.1\\%FPR",
}


@dataclass(frozen=True)
class TableCell:
    """One cell of the grid: its labels (e.g. anonymizer, attacker, scenario) and its record."""

    labels: tuple
    cell: dict


@dataclass(frozen=True)
class TableOptions:
    """Presentation: which metrics (None: every metric in CSV, EER in TeX) and decimals."""

    metrics: tuple | None = None
    decimals: int = 1


DEFAULT_TABLES = TableOptions()


# --- the numbers of a cell --------------------------------------------------------------------


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def cell_metrics(overall: dict) -> dict:
    """{metric: (value, [lo, hi] or None)} of every number (or null) an overall block holds;
    nested blocks (``tpr_at_fpr``) flatten to ``tpr_at_fpr@0.01``."""
    ci95 = overall.get("ci95") or {}
    found = {}
    for key, value in overall.items():
        if key in NOT_METRICS:
            continue
        if isinstance(value, dict):
            ci = ci95.get(key) if isinstance(ci95.get(key), dict) else {}
            for sub, v in value.items():
                if v is None or _is_number(v):
                    found[f"{key}@{sub}"] = (v, ci.get(sub))
        elif value is None or _is_number(value):
            found[key] = (value, ci95.get(key))
    return found


def _n_speakers(cell: dict):
    if cell.get("n_trial_speakers") is not None:
        return cell["n_trial_speakers"]
    per = cell.get("per_speaker")
    return len(per) if per else None


def chosen(available, metrics) -> list:
    """The metrics asked for, in the asked order; ``tpr_at_fpr`` names all of its thresholds."""
    if metrics is None:
        return list(available)
    if not available:  # no cell ran: nothing to check the names against
        return list(metrics)
    picked = []
    for m in metrics:
        matches = [a for a in available if a == m or a.split("@")[0] == m]
        if not matches:
            raise DataError(
                f"no metric {m!r} in these cells; known: {', '.join(sorted(available))}"
            )
        picked += [a for a in matches if a not in picked]
    return picked


def known_metrics(cells: list) -> list:
    """Every metric any finished cell holds, in first-seen order."""
    found = {}
    for tc in cells:
        if tc.cell.get("status") == "ok":
            found.update(dict.fromkeys(cell_metrics(tc.cell.get("overall") or {})))
    return list(found)


def grid_cells(doc: dict) -> list:
    """The cells of results.json's ``cells`` block (where -> attacker -> scenario or condition),
    in its order: the card's original speech first, the leakage comparison's corpora."""
    return [
        TableCell((where, attacker, scenario), cell)
        for where, by in doc["cells"].items()
        for attacker, by_scenario in by.items()
        for scenario, cell in by_scenario.items()
    ]


def served_by_back_end(cell: dict) -> bool:
    """A semi-informed cell served by back-end adaptation (``scenario_label`` "semi-informed
    (back-end)"), never the scenario's full retraining: both reports mark it."""
    return str(cell.get("scenario_label") or "").endswith("(back-end)")


def cell_speakers(doc: dict) -> set:
    """Every speaker with a per-speaker result in any cell."""
    return {s for tc in grid_cells(doc) for s in (tc.cell.get("per_speaker") or {})}


def pseudonyms(speakers) -> dict:
    """S01, S02, ... in the sorted order of the names, for publication."""
    return {s: f"S{i + 1:02d}" for i, s in enumerate(sorted(speakers))}


# --- table.csv --------------------------------------------------------------------------------


def _csv_number(x) -> str:
    return "" if x is None else repr(x) if isinstance(x, float) else str(x)


def csv_rows(cells: list, metrics: list) -> list:
    """One row per finished cell and metric; a cell that did not run is one row with its status."""
    rows = []
    for tc in cells:
        cell = tc.cell
        overall = cell.get("overall") or {}
        counts = [_n_speakers(cell), overall.get("n_target"), overall.get("n_nontarget")]
        small = "yes" if overall.get("small_evaluation") else ""
        if cell.get("status") != "ok":
            rows.append([*tc.labels, "eer", "", "", "", *counts, cell.get("status"), small])
            continue
        found = cell_metrics(overall)
        for m in metrics:
            if m not in found:
                continue
            value, ci = found[m]
            lo, hi = ci if isinstance(ci, (list, tuple)) and len(ci) == 2 else (None, None)
            numbers = [_csv_number(x) for x in (value, lo, hi)]
            rows.append([*tc.labels, m, *numbers, *counts, "ok", small])
    return rows


def render_csv(label_names: tuple, cells: list, options: TableOptions = DEFAULT_TABLES) -> str:
    metrics = chosen(known_metrics(cells), options.metrics)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*label_names, "metric", *VALUE_COLUMNS, *COUNT_COLUMNS, *STATUS_COLUMNS])
    writer.writerows(csv_rows(cells, metrics))
    return out.getvalue()


# --- table.tex --------------------------------------------------------------------------------

TEX_SPECIALS = {
    "\\": "\\textbackslash{}",
    "&": "\\&",
    "%": "\\%",
    "$": "\\$",
    "#": "\\#",
    "_": "\\_",
    "{": "\\{",
    "}": "\\}",
    "~": "\\textasciitilde{}",
    "^": "\\textasciicircum{}",
    "†": "\\dag{}",
    "‡": "\\ddag{}",
    "§": "\\S{}",
}


def tex_escape(text) -> str:
    return "".join(TEX_SPECIALS.get(ch, ch) for ch in str(text))


def is_percent(metric: str) -> bool:
    return metric.split("@")[0] in PERCENT_METRICS


def tex_number(x, metric: str, decimals: int) -> str:
    """A rate in percent with ``decimals`` decimals; any other metric with two more."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{100 * x:.{decimals}f}" if is_percent(metric) else f"{x:.{decimals + 2}f}"


def tex_value(cell: dict, metric: str, decimals: int) -> str:
    """value [lo, hi] of one metric of one cell; a small evaluation is starred (no verdict)."""
    if cell.get("status") != "ok":
        return "n/a" if cell.get("status") == "not_applicable" else "failed"
    overall = cell.get("overall") or {}
    value, ci = cell_metrics(overall).get(metric, (None, None))
    text = tex_number(value, metric, decimals)
    if value is not None and isinstance(ci, (list, tuple)) and ci[0] is not None:
        text += f" [{tex_number(ci[0], metric, decimals)}, {tex_number(ci[1], metric, decimals)}]"
    return text + ("$^{*}$" if value is not None and overall.get("small_evaluation") else "")


def metric_title(metric: str) -> str:
    title = METRIC_TITLES.get(metric, tex_escape(metric))
    return title + (" (\\%)" if is_percent(metric) else "")


def _tex_rows(cells: list, metrics: list, decimals: int) -> list:
    """One row per cell, a ``\\midrule`` where the first label (anonymizer, corpus) changes."""
    lines, previous = [], None
    for tc in cells:
        if previous is not None and tc.labels[0] != previous:
            lines.append("\\midrule")
        previous = tc.labels[0]
        parts = [tex_escape(x) for x in tc.labels]
        parts += [tex_value(tc.cell, m, decimals) for m in metrics]
        lines.append(" & ".join(parts) + " \\\\")
    return lines


def render_tex(
    label_names: tuple, cells: list, caption: str, options: TableOptions = DEFAULT_TABLES
) -> str:
    asked = options.metrics if options.metrics is not None else TEX_DEFAULT_METRICS
    metrics = chosen(known_metrics(cells), asked)
    head = [tex_escape(n.capitalize()) for n in label_names] + [metric_title(m) for m in metrics]
    small = any((tc.cell.get("overall") or {}).get("small_evaluation") for tc in cells)
    note = (
        " $^{*}$: too few test speakers (or a degenerate bootstrap) for a verdict." if small else ""
    )
    lines = [
        "% written by sparc-eval; needs \\usepackage{booktabs}",
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{caption} Values [95\\% CI].{note}}}",
        "\\begin{tabular}{" + "l" * len(label_names) + "r" * len(metrics) + "}",
        "\\toprule",
        " & ".join(head) + " \\\\",
        "\\midrule",
        *_tex_rows(cells, metrics, options.decimals),
        "\\bottomrule",
        "\\end{tabular}",
        "\\end{table}",
    ]
    return "\n".join(lines) + "\n"


def write_tables(
    out_dir, label_names: tuple, cells: list, caption: str, options: TableOptions = DEFAULT_TABLES
) -> list:
    """Writes table.csv and table.tex atomically; returns their paths."""
    out_dir = Path(out_dir)
    texts = {  # both rendered first: an unknown metric writes nothing
        out_dir / "table.csv": render_csv(label_names, cells, options),
        out_dir / "table.tex": render_tex(label_names, cells, caption, options),
    }
    for path, text in texts.items():
        write_text(path, text)
    return list(texts)
