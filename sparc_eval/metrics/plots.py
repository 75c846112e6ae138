"""Plots for the metrics report: ROC, DET, per-speaker EER and segment intra/inter EER.

matplotlib (Agg backend) and scipy are imported only when a plot is drawn, so importing
:mod:`sparc_eval.metrics` stays light. Every figure is rendered to memory and written
atomically.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from ..atomic import atomic_open


def pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path) -> Path:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    with atomic_open(path, "wb") as handle:
        handle.write(buf.getvalue())
    return Path(path)


def plot_roc(path, fpr, tpr, *, eer=None, tpr_at_fpr=None) -> Path:
    """ROC curve (linear axes) with the chance diagonal, the EER point and the TPR@FPR points."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot(fpr, tpr, lw=1.5, label="ROC")
    ax.plot([0, 1], [0, 1], ls=":", c="grey", lw=1, label="chance")
    if eer is not None:
        ax.plot([eer], [1 - eer], "o", c="C3", label=f"EER {100 * eer:.2f}%")
    for k, v in (tpr_at_fpr or {}).items():
        if v is not None:
            ax.plot([float(k)], [v], "s", ms=4, label=f"TPR {100 * v:.1f}% at FPR {float(k):g}")
    ax.set_xlabel("false positive rate (FAR)")
    ax.set_ylabel("true positive rate (1 - FRR)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("ROC")
    try:
        return save_figure(fig, path)
    finally:
        plt.close(fig)


def plot_det(path, far, frr, *, eer=None) -> Path:
    """DET curve on normal-deviate (probit) axes, 0.05% to 99.95% (rates outside are drawn
    on the frame)."""
    from scipy.special import ndtri

    plt = pyplot()
    lo = 5e-4
    x = ndtri(np.clip(far, lo, 1 - lo))
    y = ndtri(np.clip(frr, lo, 1 - lo))
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot(x, y, lw=1.5, label="DET")
    ticks = np.array([0.001, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99])
    pos = ndtri(ticks)
    ax.plot(pos, pos, ls=":", c="grey", lw=1, label="FAR = FRR")
    if eer is not None:
        e = ndtri(np.clip(eer, lo, 1 - lo))
        ax.plot([e], [e], "o", c="C3", label=f"EER {100 * eer:.2f}%")
    labels = [f"{100 * t:g}" for t in ticks]
    ax.set_xticks(pos, labels)
    ax.set_yticks(pos, labels)
    lim = ndtri([0.0005, 0.9995])
    ax.set_xlim(*lim)
    ax.set_ylim(*lim)
    ax.set_xlabel("false acceptance rate (%)")
    ax.set_ylabel("false rejection rate (%)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title("DET")
    try:
        return save_figure(fig, path)
    finally:
        plt.close(fig)


MAX_NAMED_SPEAKERS = 60  # more speakers than this: their sorted EERs as one curve, unnamed


def plot_per_speaker(path, per_speaker: dict, *, overall_eer=None) -> Path:
    """Bar per speaker (sorted by EER), named; beyond ``MAX_NAMED_SPEAKERS`` the sorted EERs as a
    step curve (a name or a bar each would not be readable, and a figure as wide as 1,000 bars
    took seconds to draw). Speakers without an EER are left out and counted."""
    plt = pyplot()
    rows = sorted(((v["eer"], k) for k, v in per_speaker.items() if v["eer"] is not None))
    missing = sum(1 for v in per_speaker.values() if v["eer"] is None)
    named = len(rows) <= MAX_NAMED_SPEAKERS
    fig, ax = plt.subplots(figsize=(max(5, 0.25 * len(rows) + 2) if named else 8, 4))
    if named:
        ax.bar(range(len(rows)), [100 * e for e, _ in rows], color="C0")
        ax.set_xticks(range(len(rows)), [k for _, k in rows], rotation=90, fontsize=7)
    else:
        ax.step(range(1, len(rows) + 1), [100 * e for e, _ in rows], where="mid", color="C0")
    if overall_eer is not None:
        ax.axhline(
            100 * overall_eer, ls="--", c="C3", lw=1, label=f"overall {100 * overall_eer:.2f}%"
        )
        ax.legend(fontsize=8)
    ax.set_ylabel("EER (%)")
    ax.set_xlabel("test speaker" if named else f"test speakers, by EER (rank of {len(rows)})")
    title = "Per-speaker EER"
    if missing:
        title += f" ({missing} speaker{'s' if missing != 1 else ''} without an EER not shown)"
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    try:
        return save_figure(fig, path)
    finally:
        plt.close(fig)


def plot_segments(path, segments: dict) -> Path:
    """Grouped bars, intra vs inter EER per segment value, one panel per attribute."""
    plt = pyplot()
    attrs = [a for a, v in segments.items() if v]
    fig, axes = plt.subplots(
        len(attrs),
        1,
        figsize=(max(5, 0.9 * max(len(segments[a]) for a in attrs) + 2), 3.2 * len(attrs)),
        squeeze=False,
    )
    for ax, attr in zip(axes[:, 0], attrs):
        values = list(segments[attr])
        x = np.arange(len(values))
        intra = [segments[attr][v]["intra_eer"] for v in values]
        inter = [segments[attr][v]["inter_eer"] for v in values]
        width = 0.38
        ax.bar(
            x - width / 2,
            [np.nan if e is None else 100 * e for e in intra],
            width,
            label="intra-EER",
        )
        ax.bar(
            x + width / 2,
            [np.nan if e is None else 100 * e for e in inter],
            width,
            label="inter-EER",
        )
        names = [f"{v}\n({segments[attr][v]['n_speakers']} spk)" for v in values]
        ax.set_xticks(x, names, fontsize=8, rotation=30 if len(values) > 6 else 0)
        ax.set_xlim(-0.8, len(values) - 0.2)
        ax.set_ylabel("EER (%)")
        ax.set_title(attr, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    try:
        return save_figure(fig, path)
    finally:
        plt.close(fig)


def write_plots(out_dir, results: dict, curves=None):
    """Draw what the results allow; returns ``(paths, not_applicable_entries)``."""
    out_dir = Path(out_dir)
    paths, na = [], {}
    overall = results.get("overall") or {}
    eer = overall.get("eer")
    if curves is not None and eer is not None:
        fpr, tpr = np.asarray(curves["fpr"]), np.asarray(curves["tpr"])
        paths.append(
            plot_roc(
                out_dir / "roc.png",
                fpr,
                tpr,
                eer=curves.get("eer", eer),
                tpr_at_fpr=overall.get("tpr_at_fpr"),
            )
        )
        far = np.asarray(curves.get("det_far", fpr))
        frr = np.asarray(curves.get("det_frr", 1 - tpr))
        paths.append(plot_det(out_dir / "det.png", far, frr, eer=curves.get("eer", eer)))
    else:
        why = (
            "no ROC points were passed"
            if eer is not None
            else "the overall metrics could not be computed"
        )
        na["plots.roc"] = na["plots.det"] = why
    per = results.get("per_speaker")
    if per and any(v["eer"] is not None for v in per.values()):
        paths.append(plot_per_speaker(out_dir / "per_speaker_eer.png", per, overall_eer=eer))
    elif per is not None:
        na["plots.per_speaker_eer"] = "no speaker has both target and non-target trials"
    segs = results.get("segments") or {}
    if any(segs.values()):
        paths.append(plot_segments(out_dir / "segments.png", segs))
    return paths, na
