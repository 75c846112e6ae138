"""Outputs of a text evaluation: results.json, report.md, ROC plots (:func:`~sparc_eval.jobs.text.report.write_outputs`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from ...atomic import write_json, write_text
from ...metrics.small import small_label
from ...provenance import report_lines
from ...text_trials.protocol import PROTOCOLS
from ...text_trials.trials import TRIAL_CONDITIONS

UNIT_WORDS = {
    "two_way": "speakers on both sides of the trials (the probes' and the enrollments' speakers, "
    "one draw: a non-target score depends on both)",
    "speaker": "test speakers (the probes' speakers: trials that share a probe or a speaker are "
    "resampled together; the enrolled side is held fixed, so the intervals are too narrow)",
    "trial": "trials (trials that share a probe or a speaker are treated as independent, so the "
    "intervals are too narrow)",
}


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "scorer"


def scorer_results(doc: dict) -> dict:
    """{scorer: tasks}: every scorer's results (``doc["tasks"]`` is the first scorer's)."""
    if doc.get("scorers"):
        return {name: block["tasks"] for name, block in doc["scorers"].items()}
    return {doc["run"].get("scorer"): doc.get("tasks") or {}}


def write_outputs(out_dir, doc: dict, curves: dict, *, plots: bool = True, removed_ids=()) -> dict:
    """``curves``: {scorer: {task: {setting: {condition: curve}}}}; the first scorer's plots are
    ``roc_<task>.png``, the others' ``roc_<scorer>_<task>.png``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    if removed_ids:
        write_text(out_dir / "shared_text_removed.txt", "\n".join(removed_ids) + "\n")
    plot_files = {}
    for i, (name, by_task) in enumerate(curves.items() if plots else ()):
        for task, by_setting in by_task.items():
            if any(by_setting.values()):
                path = out_dir / (
                    f"roc_{safe_name(task)}.png"
                    if i == 0
                    else f"roc_{safe_name(name)}_{safe_name(task)}.png"
                )
                plot_roc_grid(path, by_setting, title=f"{name}: {task}")
                plot_files[(name, task)] = path.name
                written[path.name] = path
    write_json(out_dir / "results.json", doc)
    written["results.json"] = out_dir / "results.json"
    write_text(out_dir / "report.md", render_report(doc, plot_files))
    written["report.md"] = out_dir / "report.md"
    return written


def plot_roc_grid(path, by_setting: dict, *, title: str = "") -> Path:
    """One panel per (P, L) setting, one ROC line per condition (matplotlib, Agg)."""
    import io

    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from ...atomic import atomic_open

    keys = [k for k, v in by_setting.items() if v]
    n = len(keys)
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 4.4 * rows), squeeze=False)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    for ax, key in zip(axes.ravel(), keys):
        for i, cond in enumerate(TRIAL_CONDITIONS):
            c = by_setting[key].get(cond)
            if not c:
                continue
            ax.plot(c["fpr"], c["tpr"], lw=1.4, color=f"C{i}", label=f"{cond} (EER {c['eer']:.3f})")
        ax.plot([0, 1], [0, 1], ls=":", c="grey", lw=1)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.01)
        ax.set_title(key)
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=7)
    if title:
        fig.suptitle(title)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    with atomic_open(path, "wb") as handle:
        handle.write(buf.getvalue())
    return Path(path)


def _f(x, d=3, sign=False):
    return "n/a" if x is None else (f"{x:+.{d}f}" if sign else f"{x:.{d}f}")


def _ci(pair, d=3):
    if not pair or pair[0] is None:
        return ""
    return f" [{pair[0]:.{d}f}, {pair[1]:.{d}f}]"


def _cell(block) -> str:
    if block is None:
        return "n/a"
    ci = block.get("ci95") or {}
    tpr = block.get("tpr_at_fpr") or {}
    tci = ci.get("tpr_at_fpr") or {}
    parts = [
        f"EER {_f(block['eer'])}{_ci(ci.get('eer'))}",
        f"AUC {_f(block['auc'])}{_ci(ci.get('auc'))}",
    ]
    for k in ("0.01", "0.001"):
        if k in tpr:
            parts.append(f"TPR@{float(k) * 100:g}%FPR {_f(tpr[k])}{_ci(tci.get(k))}")
    if "min_cllr" in block:  # the panel beyond EER (sparc_eval.metrics.panel)
        parts.append(f"minCllr {_f(block['min_cllr'])}{_ci(ci.get('min_cllr'))}")
        parts.append(f"D<->sys {_f(block.get('linkability'))}{_ci(ci.get('linkability'))}")
    parts.append(f"n {block['n_target']}+/{block['n_nontarget']}-")
    small = block.get("small_evaluation")
    if small:  # a degenerate or few-speaker interval is not a narrow one
        parts.append(small_label(small))
    return "<br>".join(parts)


def _header(doc: dict) -> list:
    run = doc["run"]
    names = run.get("scorers") or [run.get("scorer")]
    lines = [f"# SPARC transcript-only evaluation: {', '.join(names)}", ""]
    protocol = run.get("protocol")
    section = PROTOCOLS.get(protocol, {}).get("section")
    lines += [
        f"- dataset: {run.get('dataset')}",
        f"- protocol: deviations are listed against the paper's {protocol} protocol (appendix {section})",
    ]
    for name in names:
        block = (doc.get("scorers") or {}).get(name) or {
            "settings": run.get("scorer_settings"),
            "report": run.get("scorer_report"),
        }
        lines.append(
            f"- scorer: {name} {block.get('settings')}"
            + (f"; counters: {block['report']}" if block.get("report") else "")
        )
    unit = run.get("bootstrap_unit", "trial")
    lines.append(
        f"- settings: {', '.join(run.get('settings') or [])}; seed {run.get('seed')}; 95% CIs from "
        f"{run.get('n_boot')} bootstrap resamples of {UNIT_WORDS.get(unit, unit)} (`bootstrap_unit: {unit}`)"
    )
    return lines


def _shared_text(st: dict) -> list:
    settings = st.get("settings") or {}
    lines = ["", "## Shared text removed", ""]
    if not settings.get("enabled", True):
        why = (
            "`shared_text: auto` and the corpus's loader marks no read passages"
            if (st.get("requested") or {}).get("enabled") == "auto"
            else "`shared_text: False`"
        )
        return lines + [f"Shared-text detection is off ({why}); SPARC's protocol removes nothing."]
    frac = st.get("fraction_removed", 0.0)
    auto = (st.get("requested") or {}).get("min_speakers") == "auto"
    lines.append(
        f"{st.get('n_removed', 0)} of {st.get('n_utterances', 0)} utterances ({100 * frac:.1f}%; "
        f"{st.get('n_words_removed', 0)} of {st.get('n_words', 0)} words) were removed before building probes "
        f"and enrollments: more than {settings.get('min_fraction')} of their distinct word "
        f"{settings.get('n')}-grams are spoken by {settings.get('min_speakers')} or more speakers"
        + (f" (`auto`: max(5, 5% of {st.get('n_speakers')} speakers))" if auto else "")
        + " (read passages, scripted prompts). This is not in SPARC's protocol. Settings: hparams `shared_text` "
        "(auto/true/false), `shared_text_n`, `shared_text_min_speakers`, `shared_text_min_fraction`; ids in "
        "`shared_text_removed.txt`."
    )
    for ex in st.get("examples") or []:
        lines.append(f"- `{ex['id']}` ({ex['shared_fraction']:.2f}): {ex['text']}")
    return lines


def _trial_table(by_setting: dict) -> list:
    lines = [
        "",
        "Trials and what was skipped:",
        "",
        "| setting | EP | HP | EN | HN | probes | cut | skipped (strict) | beyond cap | "
        "appearances short for P / L | enrollments short of L | excluded overlap / name / topic | unscored |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, block in by_setting.items():
        if block is None:
            continue
        t = block["trials"]
        bt = t["by_type"]
        lines.append(
            f"| {key} | {bt['easy_positive']} | {bt['hard_positive']} | {bt['easy_negative']} | "
            f"{bt['hard_negative']} | {t['probes']} | {t['probes_cut']} | {t['probes_skipped_strict']} | "
            f"{t['probes_beyond_cap']} | {t['appearances_too_short_for_P']} / {t['appearances_too_short_for_L']} "
            f"of {t['appearances']} | {t.get('enrollments_short_of_L', 0)} | {t['excluded_overlap']} / "
            f"{t['excluded_name']} / {t['excluded_topic_similarity']} | {block['missing_scores']} |"
        )
    return lines


def _unscored(by_setting: dict, name: str) -> list:
    lines = []
    for key, block in by_setting.items():
        ids = (block or {}).get("unscored") or []
        if ids:
            shown = ", ".join(f"`{i}`" for i in ids[:10]) + (
                f" and {len(ids) - 10} more" if len(ids) > 10 else ""
            )
            lines.append(
                f"- {name} {key}: {len(ids)} unscored trials (left out of the metrics and the score "
                f"file; all listed in results.json): {shown}"
            )
    return ["", "Unscored trials:", ""] + lines if lines else []


def _task(doc: dict, task: str, plot_files: dict) -> list:
    by_scorer = scorer_results(doc)
    several = len(by_scorer) > 1
    lines = ["", f"## Task: {task}", ""]
    for name, tasks in by_scorer.items():
        by_setting = tasks.get(task) or {}
        if several:
            lines += [f"### {name}", ""]
        lines += [
            "| setting | " + " | ".join(TRIAL_CONDITIONS) + " |",
            "|---|" + "---|" * len(TRIAL_CONDITIONS),
        ]
        for key, block in by_setting.items():
            cells = (
                ["n/a"] * len(TRIAL_CONDITIONS)
                if block is None
                else [_cell(block["conditions"].get(c)) for c in TRIAL_CONDITIONS]
            )
            lines.append(f"| {key} | " + " | ".join(cells) + " |")
        lines += _unscored(by_setting, name)
        if (name, task) in plot_files:
            lines += ["", f"![ROC {name} {task}]({plot_files[(name, task)]})"]
        if several:
            lines.append("")
    first = next(iter(by_scorer.values()), {})
    lines += _trial_table(first.get(task) or {})
    notes = [
        (k, v)
        for k, v in (doc.get("not_applicable") or {}).items()
        if k.startswith(f"tasks.{task}.")
    ]
    if notes:
        lines += ["", "Not applicable:", ""] + [f"- `{k}`: {v}" for k, v in notes]
    return lines


def _ablations(doc: dict) -> list:
    abl = doc.get("ablations")
    if not abl:
        return []
    lines = [
        "",
        f"## Ablations: change from the base setting {abl['base']} (setting - base)",
        "",
        "| scorer | task | setting | "
        + " | ".join(f"{c} ΔEER / ΔAUC" for c in TRIAL_CONDITIONS)
        + " |",
        "|---|---|---|" + "---|" * len(TRIAL_CONDITIONS),
    ]
    for name, tasks in abl["by_scorer"].items():
        for task, by_setting in tasks.items():
            for key, conds in by_setting.items():
                cells = [
                    "n/a" if d is None else f"{_f(d['eer'], sign=True)} / {_f(d['auc'], sign=True)}"
                    for d in (conds.get(c) for c in TRIAL_CONDITIONS)
                ]
                lines.append(f"| {name} | {task} | {key} | " + " | ".join(cells) + " |")
    return lines


def _comparisons(doc: dict) -> list:
    rows = doc.get("comparisons") or []
    if not rows:
        return []
    lines = [
        "",
        "## Scorer comparisons on the same trials (paired bootstrap, b - a)",
        "",
        "| task | setting | condition | a | b | EER a | EER b | ΔEER [95% CI] | p | ΔAUC [95% CI] |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['setting']} | {r['condition']} | {r['scorer_a']} | {r['scorer_b']} | "
            f"{_f(r['a']['eer'])} | {_f(r['b']['eer'])} | {_f(r['diff']['eer'], sign=True)}"
            f"{_ci(r['ci95']['eer'])}{' (' + r['small'] + ')' if r.get('small') else ''}"
            f"{' (enrolled side held fixed)' if r.get('enrollment_side') else ''} | "
            f"{_f(r['p_value']['eer'])} | {_f(r['diff']['auc'], sign=True)}"
            f"{_ci(r['ci95']['auc'])} |"
        )
    return lines


DEFINITIONS = [
    "",
    "## Definitions",
    "",
    "- Probe: whole utterances from the start of a (speaker, episode) until the word count is within P +- "
    "tolerance; an utterance that jumps over the window is cut at a word boundary to P words (or, with "
    "`strict`, the probe is skipped); further probes follow without overlap, up to `max_probes`.",
    "- Enrollment: same episode = the last L utterances of the partner in the probe's episode that are not "
    "in the probe; different episode = the first L utterances of the partner's appearance in another episode. "
    "L is a maximum: an appearance with fewer utterances enrolls with what it has.",
    "- Trial types: EP same speaker/label, same episode; HP same speaker/label, other episode; EN different, "
    "other episode; HN different, same episode (attribute tasks pair different speakers only). Conditions: "
    "easy = EP+EN, hard = HP+HN, same_topic = EP+HN, different_topic = HP+EN, combined = all.",
    "- EER (SpeechBrain / VoicePrivacy definition), AUC, TPR at the largest threshold with FPR <= 1% and "
    "0.1% (no interpolation); 95% percentile bootstrap CIs over the unit named above. A condition without both "
    "classes is n/a, never a number.",
]


def render_report(doc: dict, plot_files: Optional[dict] = None) -> str:
    lines = _header(doc) + _shared_text(doc.get("shared_text") or {})
    for task in doc.get("tasks") or {}:
        lines += _task(doc, task, plot_files or {})
    lines += _ablations(doc) + _comparisons(doc) + DEFINITIONS + report_lines(doc["run"])
    return "\n".join(lines) + "\n"
