"""report.md, table.csv, table.tex and figures of a leakage comparison (see
:mod:`~sparc_eval.jobs.leakage.run` for results.json, :mod:`sparc_eval.jobs.tables` for the tables)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...atomic import atomic_open
from ...attack.evaluation_set import CONDITION_TITLES
from ...metrics.bootstrap import UNIT_WORDS
from ...metrics.plots import pyplot, save_figure
from ...metrics.small import small_label
from ...provenance import report_lines
from ..tables import (
    DEFAULT_TABLES,
    TableOptions,
    cell_speakers,
    grid_cells,
    pseudonyms,
    served_by_back_end,
    write_tables,
)


def _pct(x, d=1) -> str:
    return "n/a" if x is None else f"{100 * x:.{d}f}"


def _ci(pair) -> str:
    if not pair or pair[0] is None:
        return ""
    return f" [{100 * pair[0]:.1f}, {100 * pair[1]:.1f}]"


def _r(corr) -> str:
    if not corr or corr.get("pearson_r") is None:
        return "n/a"
    return f"{corr['pearson_r']:+.2f} (p={corr['pearson_p']:.2g}, n={corr['n']})"


def _cells(doc):
    for corpus, by_attacker in doc["cells"].items():
        for attacker, by_cond in by_attacker.items():
            for cond, cell in by_cond.items():
                yield corpus, attacker, cond, cell


# --- figures -------------------------------------------------------------------------------------


def plot_eer_grid(path, doc) -> Path:
    """EER per corpus (groups) and attacker (bars) with 95% CIs, one panel per condition."""
    plt = pyplot()
    conditions = doc["run"]["conditions"]
    corpora = list(doc["cells"])
    attackers = doc["run"]["features"]
    fig, axes = plt.subplots(
        1,
        len(conditions),
        figsize=(max(5, 1.6 * len(corpora) * len(conditions) + 2), 4),
        squeeze=False,
        sharey=True,
    )
    width = 0.8 / max(1, len(attackers))
    for ax, cond in zip(axes[0], conditions):
        for k, attacker in enumerate(attackers):
            vals, lo, hi = [], [], []
            for corpus in corpora:
                cell = doc["cells"][corpus][attacker][cond]
                ov = cell.get("overall") if cell["status"] == "ok" else None
                e = None if not ov else ov["eer"]
                ci = (ov or {}).get("ci95") or {}
                pair = ci.get("eer") or [None, None]
                vals.append(np.nan if e is None else 100 * e)
                lo.append(0 if e is None or pair[0] is None else max(0.0, 100 * (e - pair[0])))
                hi.append(0 if e is None or pair[1] is None else max(0.0, 100 * (pair[1] - e)))
            x = np.arange(len(corpora)) + (k - (len(attackers) - 1) / 2) * width
            ax.bar(x, vals, width, yerr=[lo, hi], capsize=2, label=attacker)
        ax.axhline(50, ls=":", c="grey", lw=1)
        ax.set_xticks(np.arange(len(corpora)), corpora, fontsize=8, rotation=15)
        ax.set_title(CONDITION_TITLES.get(cond, cond), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].set_ylabel("EER (%)  (lower = more leakage)")
    axes[0, -1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    try:
        return save_figure(fig, path)
    finally:
        plt.close(fig)


def plot_distinctiveness(path, doc, cond) -> Path | None:
    """Per-speaker EER against phone-frequency distinctiveness, a panel per corpus, one colour
    per attacker, Pearson r in the legend."""
    corpora = [c for c in doc["cells"] if doc["correlations"].get(c, {}).get(cond)]
    if not corpora:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(corpora), figsize=(4.2 * len(corpora), 3.8), squeeze=False)
    for ax, corpus in zip(axes[0], corpora):
        distinct = doc["corpora"][corpus]["conditions"][cond]["distinctiveness"]["speakers"]
        for k, (attacker, corr) in enumerate(doc["correlations"][corpus][cond].items()):
            per = doc["cells"][corpus][attacker][cond]["per_speaker"]
            pts = [
                (distinct[s]["distinctiveness"], v["eer"])
                for s, v in per.items()
                if v["eer"] is not None and s in distinct
            ]
            if not pts:
                continue
            x, y = np.array(pts).T
            r = corr["distinctiveness"].get("pearson_r")
            ax.scatter(
                x,
                100 * y,
                s=14,
                color=f"C{k}",
                alpha=0.8,
                label=f"{attacker} (r={'n/a' if r is None else f'{r:+.2f}'})",
            )
            if r is not None and len(x) > 2 and np.ptp(x) > 0:
                slope, icpt = np.polyfit(x, 100 * y, 1)
                xs = np.linspace(x.min(), x.max(), 2)
                ax.plot(xs, slope * xs + icpt, color=f"C{k}", lw=1)
        ax.set_title(corpus, fontsize=10)
        ax.set_xlabel("phone-frequency distinctiveness")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0, 0].set_ylabel("per-speaker EER (%)")
    fig.tight_layout()
    try:
        return save_figure(fig, path)
    finally:
        plt.close(fig)


def plot_segments(path, doc, cond) -> Path | None:
    """Intra- against inter-segment EER, one point per (attacker, segment value), a panel per
    corpus. Above the diagonal, the segment's speakers are harder to tell apart among themselves
    than from everybody: what they say is alike."""
    rows = {}
    for corpus, attacker, c, cell in _cells(doc):
        if c != cond or cell["status"] != "ok":
            continue
        for values in (cell.get("segments") or {}).values():
            for value, seg in values.items():
                if seg["intra_eer"] is not None and seg["inter_eer"] is not None:
                    rows.setdefault(corpus, []).append(
                        (attacker, f"{value}", seg["inter_eer"], seg["intra_eer"])
                    )
    if not rows:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(rows), figsize=(4.4 * len(rows), 4.2), squeeze=False)
    attackers = doc["run"]["features"]
    for ax, (corpus, pts) in zip(axes[0], rows.items()):
        for attacker in attackers:
            mine = [p for p in pts if p[0] == attacker]
            if not mine:
                continue
            k = attackers.index(attacker)
            ax.scatter(
                [100 * p[2] for p in mine],
                [100 * p[3] for p in mine],
                s=16,
                color=f"C{k}",
                label=attacker,
            )
            for p in mine:
                ax.annotate(p[1], (100 * p[2], 100 * p[3]), fontsize=6, alpha=0.7)
        lims = [min(ax.get_xlim()[0], ax.get_ylim()[0]), max(ax.get_xlim()[1], ax.get_ylim()[1])]
        ax.plot(lims, lims, ls=":", c="grey", lw=1)
        ax.set_xlabel("inter-segment EER (%)")
        ax.set_ylabel("intra-segment EER (%)")
        ax.set_title(corpus, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    try:
        return save_figure(fig, path)
    finally:
        plt.close(fig)


# --- report.md ------------------------------------------------------------------------------------


def render_leakage_report(doc: dict, plots: dict, pseudonyms: dict | None = None) -> str:
    """report.md of a leakage comparison: one section renderer after another (``pseudonyms``:
    speaker names to print instead of the corpus's)."""
    lines = _intro(doc)
    lines += _fairness(doc)
    lines += _eer_tables(doc, plots)
    lines += _panel_tables(doc)
    lines += _comparisons(doc)
    lines += _shared_text_changes(doc)
    lines += _vocabulary(doc)
    lines += _shared_text(doc)
    lines += _distinctiveness(doc, plots, pseudonyms or {})
    lines += _segments(doc, plots)
    lines += _closing(doc)
    return "\n".join(lines) + "\n"


def _intro(doc: dict) -> list:
    run, conditions = doc["run"], doc["run"]["conditions"]
    attackers = run["features"]
    lines = ["# Content leakage comparison", ""]
    lines += [
        f"Corpora: {', '.join(doc['cells'])}. Attackers: {', '.join(attackers)}. "
        f"Conditions: {', '.join(CONDITION_TITLES[c] for c in conditions)}. Seed {run['seed']}; "
        + (
            f"95% CIs from {run['n_boot']} bootstrap resamples of "
            f"{UNIT_WORDS.get(run['bootstrap_unit'], run['bootstrap_unit'])}. "
            if run["n_boot"]
            else "no CIs and no comparisons (n_boot = 0). "
        )
        + "Lower EER = the attacker recognises speakers better = more leakage.",
        "",
    ]
    return lines


def _fairness(doc: dict) -> list:
    f = doc["fairness"]
    lines = ["## How the comparison is made fair", ""]
    spk = ", ".join(
        f"{n} {k} of {f['speakers_available'][n]}" for n, k in f["speakers_per_corpus"].items()
    )
    per = f["balance_trial_utterances"]
    lines += [
        f"- Speakers evaluated per corpus: {spk} (balance_speakers: {f['balance_speakers']}).",
        f"- Trial utterances per speaker (ECAPA): {'all' if per is None else 'at most ' + str(per)}; "
        f"text attackers: {f['text_attackers']}.",
        f"- Differences are bootstrapped over {UNIT_WORDS.get(f['bootstrap_unit'], f['bootstrap_unit'])}: "
        "paired on trials when two cells share "
        "their trials, on speakers when they share only their test speakers (text vs ECAPA, with vs without "
        "shared text), independent otherwise (different corpora).",
        "- ECAPA attackers trained on: "
        + "; ".join(f"{c}: {t}" for c, t in f["ecapa_training"].items())
        + ".",
    ]
    counts = sorted(
        {
            n
            for by_a in f["trial_speakers_per_cell"].values()
            for by_c in by_a.values()
            for n in by_c.values()
            if n is not None
        }
    )
    if counts:
        more = (
            f" to {counts[-1]} (splits and probes can leave some speakers without trials)"
            if len(counts) > 1
            else ""
        )
        lines.append(f"- Trial speakers per cell: {counts[0]}{more}.")
    lines.append("")
    return lines


def _eer_cell(cell: dict) -> str:
    if cell["status"] != "ok":
        return "failed" if cell["status"] == "failed" else "n/a"
    ov = cell["overall"]
    same = " (no shared text: = all)" if cell.get("same_as") else ""
    small = ov.get(
        "small_evaluation"
    )  # a degenerate or few-speaker interval: the counted bound beside it
    bound = f" ({small_label(small)})" if small else ""
    back_end = " (back-end)" if served_by_back_end(cell) else ""
    return f"{_pct(ov['eer'])}%{_ci((ov.get('ci95') or {}).get('eer'))}{bound}{same}{back_end}"


def _grid(doc: dict, cond: str, cell_text, head: list) -> list:
    """One corpus x attacker table of a condition: ``head`` lines, then a row per corpus."""
    attackers = doc["run"]["features"]
    lines = [
        *head,
        "| corpus | " + " | ".join(attackers) + " |",
        "|---|" + "---|" * len(attackers),
    ]
    for corpus, by_attacker in doc["cells"].items():
        row = [cell_text(by_attacker[attacker][cond]) for attacker in attackers]
        lines.append(f"| {corpus} | " + " | ".join(row) + " |")
    return lines + [""]


def _eer_tables(doc: dict, plots: dict) -> list:
    lines = []
    for cond in doc["run"]["conditions"]:
        title = f"## EER per corpus and attacker: {CONDITION_TITLES[cond]}"
        lines += _grid(doc, cond, _eer_cell, [title, ""])
    if plots.get("eer"):
        lines += [f"![EER per corpus and attacker]({plots['eer'].name})", ""]
    return lines


def _panel_cell(cell: dict) -> str:
    """min Cllr, D<->sys linkability and TPR at 1% FPR of a cell (the panel beyond EER)."""
    ov = cell.get("overall") or {}
    if cell["status"] != "ok" or "min_cllr" not in ov:
        return "n/a"

    def num(x):
        return "n/a" if x is None else f"{x:.3f}"

    tpr = (ov.get("tpr_at_fpr") or {}).get("0.01")
    return f"{num(ov['min_cllr'])} / {num(ov.get('linkability'))} / " + (
        "n/a" if tpr is None else f"{_pct(tpr)}%"
    )


def _panel_tables(doc: dict) -> list:
    lines = []
    for cond in doc["run"]["conditions"]:
        head = [
            f"## Beyond EER: {CONDITION_TITLES[cond]}",
            "",
            "min Cllr (bits) / linkability D<->sys / TPR at 1% FPR, per cell (definitions: "
            "sparc_eval.metrics.panel; n/a where too few trials support a value).",
            "",
        ]
        lines += _grid(doc, cond, _panel_cell, head)
    return lines


def _diff_ci(r: dict) -> tuple:
    """The row's EER difference CI (" [lo, hi]" in points, or "") and its p value."""
    ci = r["eer_diff_ci95"]
    ci_s = "" if not ci or ci[0] is None else f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"
    p = "n/a" if r["eer_p_value"] is None else f"{r['eer_p_value']:.3f}"
    return ci_s, p


def _comparisons(doc: dict) -> list:
    lines = []
    for kind, title in (
        ("corpora", "Which corpus leaks more"),
        ("attackers", "Which attacker finds more"),
    ):
        rows = doc["comparisons"].get(kind) or []
        if not rows:
            continue
        lines += [
            f"## {title}",
            "",
            "EER difference b - a in points, 95% CI, bootstrap p.",
            "",
            "| condition | "
            + ("attacker" if kind == "corpora" else "corpus")
            + " | a | b | EER a | EER b | b - a [95% CI] | p | paired | verdict |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            who = r["attacker"] if kind == "corpora" else r["corpus"]
            diff = "n/a" if r["eer_diff"] is None else f"{100 * r['eer_diff']:+.1f}"
            ci_s, p = _diff_ci(r)
            lines.append(
                f"| {r['condition']} | {who} | {r['a']} | {r['b']} | {_pct(r['eer_a'])} | {_pct(r['eer_b'])} "
                f"| {diff}{ci_s} | {p} | {_paired(r)} | {r['verdict']} |"
            )
        lines.append("")
    return lines


def _shared_text_changes(doc: dict) -> list:
    rows = doc["comparisons"].get("shared_text") or []
    if not rows:
        return []
    lines = [
        "## What shared text changes",
        "",
        "EER without shared text minus EER with it, in points (the same speakers resampled for "
        "both, where they are the same).",
        "",
        "| corpus | attacker | EER all | EER without shared | difference [95% CI] | p | paired | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ci_s, p = _diff_ci(r)
        lines.append(
            f"| {r['corpus']} | {r['attacker']} | {_pct(r['eer_a'])} | {_pct(r['eer_b'])} | "
            f"{100 * r['eer_diff']:+.1f}{ci_s} | {p} | {_paired(r)} | {r['verdict']} |"
        )
    lines.append("")
    return lines


def _vocabulary(doc: dict) -> list:
    lines = [
        "## Vocabulary",
        "",
        "Type/token ratio of the corpus and per speaker on equal-length samples; the share of a speaker's "
        "tokens (and word types) that no other speaker of the corpus uses.",
        "",
        "| corpus | condition | speakers | utterances | tokens | types | TTR | speaker TTR (first N tokens) "
        "| unique-token share | unique-type share |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for corpus, block in doc["corpora"].items():
        for cond, c in block["conditions"].items():
            v = c["vocabulary"]
            st = v["speaker_ttr"]
            sttr = (
                "n/a"
                if st["mean"] is None
                else (f"{st['mean']:.3f} (N={st['sample_tokens']}, {st['n_speakers']} spk)")
            )
            ttr = "n/a" if v["type_token_ratio"] is None else f"{v['type_token_ratio']:.3f}"
            lines.append(
                f"| {corpus} | {cond} | {v['n_speakers']} | {v['n_utterances']} | {v['n_tokens']} | "
                f"{v['n_types']} | {ttr} | {sttr} | "
                f"{_pct(v['unique_token_share']['mean'])}% | {_pct(v['unique_type_share']['mean'])}% |"
            )
    lines.append("")
    return lines


def _shared_text(doc: dict) -> list:
    lines = ["## Shared (scripted) text", ""]
    for corpus, block in doc["corpora"].items():
        s = block["shared_text"]
        line = (
            f"- {corpus}: {s['n_removed']} of {s['n_utterances']} utterances ({_pct(s.get('fraction_removed'))}%) "
            f"are shared text ({s['n_words_removed']} of {s['n_words']} words)"
        )
        flags = s.get("scripted_flags")
        if flags:
            line += (
                f"; against the corpus's own scripted flags: recall {_pct(flags['recall'])}%, "
                f"precision {_pct(flags['precision'])}% ({flags['n_scripted']} flagged)"
            )
        lines.append(line + ".")
    lines.append("")
    return lines


def _distinctiveness(doc: dict, plots: dict, pseudonyms: dict) -> list:
    conditions = doc["run"]["conditions"]
    lines = [
        "## Distinctiveness and per-speaker EER",
        "",
        "Signed Pearson r between a speaker's phone-frequency distinctiveness (or unique-token share) "
        "and their per-speaker EER; negative = distinctive speakers are easier to recognise "
        "(content-leakage paper section 4.1: |r| = 0.59 on LibriSpeech).",
        "",
        "| corpus | condition | attacker | r (distinctiveness) | r (unique-token share) |",
        "|---|---|---|---|---|",
    ]
    for corpus, by_cond in doc["correlations"].items():
        for cond, by_attacker in by_cond.items():
            for attacker, corr in by_attacker.items():
                lines.append(
                    f"| {corpus} | {cond} | {attacker} | {_r(corr['distinctiveness'])} | "
                    f"{_r(corr['unique_token_share'])} |"
                )
    lines.append("")
    for corpus, block in doc["corpora"].items():
        d = block["conditions"][conditions[0]]["distinctiveness"]
        if d.get("not_applicable"):
            lines.append(f"- {corpus}: no distinctiveness ({d['not_applicable']}).")
        else:
            most, least = ([pseudonyms.get(s, s) for s in d[k]] for k in ("most", "least"))
            lines.append(
                f"- {corpus}: most distinctive {', '.join(most)}; least {', '.join(least)}."
            )
    lines.append("")
    for cond in conditions:
        if plots.get(f"distinct_{cond}"):
            lines += [
                f"![per-speaker EER vs distinctiveness, {cond}]({plots[f'distinct_{cond}'].name})",
                "",
            ]
    return lines


def _segments(doc: dict, plots: dict) -> list:
    run, conditions = doc["run"], doc["run"]["conditions"]
    lines = [
        "## Population segments (intra / inter EER, %)",
        "",
        "Intra: only the segment's speakers, as enrollment and trial speakers; inter: the segment's "
        f"speakers as trial speakers against every enrollment speaker. Only values with at least "
        f"{run['min_segment_speakers']} trial speakers; accents are grouped "
        f"{run.get('accent_grouping', 'coarse')} (accent_grouping; the tables are in sparc_eval/data/attributes.py).",
        "",
    ]
    for corpus in doc["cells"]:
        for cond in conditions:
            lines += _segment_table(doc, corpus, cond)
    for corpus, block in doc["corpora"].items():
        lines += _accent_groups(corpus, block)
    for cond in conditions:
        if plots.get(f"segments_{cond}"):
            lines += [
                f"![intra vs inter segment EER, {cond}]({plots[f'segments_{cond}'].name})",
                "",
            ]
    return lines


def _segment_table(doc: dict, corpus: str, cond: str) -> list:
    """Intra / inter EER per segment value and attacker of one corpus and condition ([] when none)."""
    run, attackers = doc["run"], doc["run"]["features"]
    rows = {}
    left = {}
    for attacker in attackers:
        cell = doc["cells"][corpus][attacker][cond]
        if cell["status"] != "ok":
            continue
        for attr, values in (cell.get("segments") or {}).items():
            for value, seg in values.items():
                rows.setdefault((attr, value, seg["n_speakers"]), {})[attacker] = seg
        left.update(cell.get("segments_left_out") or {})
    if not rows:
        return []
    shown = [a for a in attackers if any(a in r for r in rows.values())]
    lines = [
        f"### {corpus}, {CONDITION_TITLES[cond]}",
        "",
        "| segment | speakers | " + " | ".join(shown) + " |",
        "|---|---|" + "---|" * len(shown),
    ]
    for (attr, value, n), by_attacker in sorted(rows.items()):
        cells_s = [
            f"{_pct(by_attacker[a]['intra_eer'])} / {_pct(by_attacker[a]['inter_eer'])}"
            if a in by_attacker
            else ""
            for a in shown
        ]
        lines.append(f"| {attr}={value} | {n} | " + " | ".join(cells_s) + " |")
    if left:
        lines += [
            "",
            f"Left out (fewer than {run['min_segment_speakers']} trial speakers): "
            + ", ".join(
                f"{k.replace('.', '=', 1)} ({v.split(' ')[0]})" for k, v in sorted(left.items())
            )
            + ".",
        ]
    lines.append("")
    return lines


def _accent_groups(corpus: str, block: dict) -> list:
    """Which self-reported accents make up each accent group of a corpus, and which are in none."""
    grouping = block.get("accent_grouping") or {}
    if not grouping:
        return []
    lines = [
        f"Accent groups of {corpus} (self-reported accent: speakers): "
        + "; ".join(
            f"**{g}** ← " + ", ".join(f"{raw} ({n})" for raw, n in raws.items())
            for g, raws in grouping.items()
        ),
        "",
    ]
    by_reason = {}  # labels in no accent segment, whatever their number of speakers
    for label, v in (block.get("accent_left_out") or {}).items():
        by_reason.setdefault(v["reason"], []).append(f"{label} ({v['n_speakers']})")
    if by_reason:
        lines += [
            f"In no accent segment of {corpus}: "
            + "; ".join(f"{', '.join(labels)}: {why}" for why, labels in by_reason.items())
            + ".",
            "",
        ]
    return lines


def _closing(doc: dict) -> list:
    run = doc["run"]
    lines = []
    na = {k: v for k, v in doc["not_applicable"].items() if k.startswith("cells.")}
    if na:
        lines += ["## Not applicable", ""] + [f"- `{k[6:]}`: {v}" for k, v in na.items()] + [""]
    lines += [
        "Each cell's own results.json, report.md, scores and plots are under "
        "`cells/<corpus>/<attacker>/<condition>/` (a corpus without shared text has none for its second "
        "condition). The tables here resample "
        + f"{UNIT_WORDS.get(run['bootstrap_unit'], run['bootstrap_unit'])}; each cell's own report "
        "names the unit of its CIs.",
        "",
    ]
    lines += report_lines(run)
    return lines


LEAKAGE_LABELS = ("corpus", "attacker", "condition")
LEAKAGE_CAPTION = (
    "Content leakage: EER per corpus, attacker and condition (lower: the attacker recognises "
    "speakers better, more leakage)."
)


def write_leakage_report(
    out_dir,
    doc: dict,
    *,
    plots: bool = True,
    pseudonymise: bool = False,
    tables: TableOptions = DEFAULT_TABLES,
) -> Path:
    """report.md, table.csv, table.tex and the figures from results.json's document: what a run
    writes, and what ``sparc-eval report`` rewrites."""
    out_dir = Path(out_dir)
    # the tables first: an unknown metric stops before any file is written
    write_tables(out_dir, LEAKAGE_LABELS, grid_cells(doc), LEAKAGE_CAPTION, tables)
    files = {}
    if plots:
        files["eer"] = plot_eer_grid(out_dir / "eer_by_corpus.png", doc)
        for cond in doc["run"]["conditions"]:
            files[f"distinct_{cond}"] = plot_distinctiveness(
                out_dir / f"distinctiveness_{cond}.png", doc, cond
            )
            files[f"segments_{cond}"] = plot_segments(out_dir / f"segments_{cond}.png", doc, cond)
    pseudonyms = leakage_pseudonyms(doc) if pseudonymise else {}
    path = out_dir / "report.md"
    with atomic_open(path, "w", encoding="utf-8") as handle:
        handle.write(render_leakage_report(doc, files, pseudonyms))
    return path


def leakage_pseudonyms(doc: dict) -> dict:
    """S01, S02, ... for every speaker the report could name: the cells' and the most and least
    distinctive of each corpus."""
    named = {
        s
        for block in doc["corpora"].values()
        for c in block["conditions"].values()
        for s in (c["distinctiveness"].get("most") or [])
        + (c["distinctiveness"].get("least") or [])
    }
    return pseudonyms(cell_speakers(doc) | named)


def _paired(row: dict) -> str:
    """The pairing column, and a fallback to test speakers where a cell had no enrolled ones."""
    held = "; enrolled side held fixed" if row.get("enrollment_side") else ""
    return f"{row['paired'] or 'no'}{held}"
