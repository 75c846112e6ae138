"""The card's utility section: one row per anonymizer, each metric's value [95% CI], then what each
metric says beside its headline (failed utterances, trial lists, emotion classes, naturalness)."""

from __future__ import annotations


def _value(r: dict, digits: int = 3) -> str:
    if "not_applicable" in r:
        return "n/a"
    if "failed" in r:
        return "failed"
    v, ci = r.get("value"), r.get("ci95")
    return (
        "n/a"
        if v is None
        else f"{v:.{digits}f}" + (f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else "")
    )


def utility_section(doc: dict) -> list:
    """The card's utility table, then what each metric adds beside its headline."""
    if not doc["utility"]:
        return []
    metrics = sorted({m for by in doc["utility"].values() for m in by})
    lines = [
        "## Utility",
        "",
        "| anonymizer | " + " | ".join(metrics) + " |",
        "|---|" + "---|" * len(metrics),
    ]
    reasons = {}
    for name, by in doc["utility"].items():
        parts = []
        for m in metrics:
            r = by.get(m, {})
            parts.append(_value(r))
            if "not_applicable" in r or "failed" in r:
                reasons[f"{m} ({name})"] = r.get("not_applicable") or r.get("failed")
        lines.append(f"| {name} | " + " | ".join(parts) + " |")
    original = {
        n: by["wer"]["original"]
        for n, by in doc["utility"].items()
        if by.get("wer", {}).get("original")
    }
    if original:
        first = next(iter(original.values()))
        lines += ["", f"WER of the original speech with the same ASR: {_value(first)}."]
    lines += _utility_details(doc)
    measures = {
        m: r["measure"] for by in doc["utility"].values() for m, r in by.items() if "measure" in r
    }
    notes = [f"- {m} is the {what}" for m, what in sorted(measures.items())]
    notes += [f"- {k}: {v}" for k, v in reasons.items()]
    notes += _naturalness_notes(doc)
    return lines + [""] + notes + ([""] if notes else [])


def _emotion_lines(name: str, emotion: dict) -> list:
    """Which class anonymized speech is pushed toward, and per-class recall where labels exist."""
    lines = []
    # labelled: the labelled utterances' figure (None when no class grows); else the agreement's
    where = emotion if "pushed_toward" in emotion else emotion.get("agreement") or {}
    pushed = where.get("pushed_toward")
    if pushed:
        lines.append(
            f"- {name}: emotion: anonymized speech is predicted {pushed['label']} more often "
            f"({pushed['original_share']:.0%} of the original utterances, "
            f"{pushed['anonymized_share']:.0%} anonymized)"
        )
    recall = emotion.get("per_class_recall")
    if recall:
        pairs = ", ".join(
            f"{label} {r:.2f} -> {recall['anonymized'].get(label, float('nan')):.2f}"
            for label, r in recall["original"].items()
        )
        lines.append(f"- {name}: emotion recall per class (original -> anonymized): {pairs}")
    return lines


def _interval(r: dict, digits: int = 2) -> str:
    ci = r.get("ci95")
    return f"{r['value']:.{digits}f}" + (f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else "")


def _naturalness_lines(name: str, by: dict) -> list:
    """Each predicted MOS of both sides and their paired difference, overall and per trial list."""
    lines = []
    for metric, r in by.items():
        if "predictor" not in r or "diff" not in r:
            continue
        lines.append(
            f"- {name}: {metric} ({r['predictor']['model']}): original {_interval(r['original'])} -> "
            f"anonymized {_interval(r['anonymized'])}, difference {_interval(r['diff'])} "
            f"({r['utterances']} trial utterances, {r['speakers']} speakers)"
        )
        if len(r.get("per_list") or {}) > 1:
            lines.append(
                f"- {name}: {metric} difference per trial list: "
                + ", ".join(f"{n} {_interval(x['diff'])}" for n, x in r["per_list"].items())
            )
    return lines


def _naturalness_notes(doc: dict) -> list:
    """What a predicted MOS is not, once per card that has one."""
    if not any("predictor" in r for by in doc["utility"].values() for r in by.values()):
        return []
    notes = [
        "- neither predictor was validated on the output of speaker anonymizers (DNSMOS learned only "
        "noisy and noise-suppressed speech): a predicted MOS may misjudge an anonymizer's "
        "artefacts (docs/definitions.md)"
    ]
    if (doc.get("run") or {}).get("synthetic_speech"):
        notes.append(
            "- the evaluated speech is synthetic (the demo corpus, espeak-ng): its predicted MOS is a "
            "smoke test of the metric, not a finding about the anonymizer"
        )
    return notes


def _utility_details(doc: dict) -> list:
    """Beside the table (issue 31): the utterances each anonymizer failed on, which its WER counts
    as all deletions, rho_F0 and G_VD per trial list, and where emotion goes."""
    lines = []
    for name, by in doc["utility"].items():
        lines += _emotion_lines(name, by.get("emotion") or {})
        lines += _naturalness_lines(name, by)
        wer = by.get("wer") or {}
        if wer.get("failed_utterances"):
            lines.append(
                f"- {name}: {wer['failed_utterances']} utterances the anonymizer failed on count as "
                f"all deletions in its WER ({wer['failed_words']} of {wer['words']} words)"
            )
        for metric in ("rho_f0", "gvd"):
            per = (by.get(metric) or {}).get("per_list") or {}
            if len(per) > 1:
                lines.append(
                    f"- {name}: {metric} per trial list: "
                    + ", ".join(
                        f"{n} {'n/a' if r.get('value') is None else format(r['value'], '.3f')}"
                        for n, r in per.items()
                    )
                )
    return ([""] + lines) if lines else []
