"""What ``sparc-eval corpus info`` reports about a corpus."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..attributes import accent_group, age_group
from ..manifest import RESOLUTION_RULE, Manifest
from .kaldi import read_id_list, read_trials


def _counts(values) -> dict:
    counts = Counter(v for v in values if v is not None)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))))


def _conflicts(manifest: Manifest) -> dict:
    """Speakers whose utterances disagree on an attribute, and the rule that resolved them."""
    conflicts = manifest.attribute_conflicts()
    if not conflicts:
        return {}
    rows = [
        {
            "speaker": c.speaker,
            "attribute": c.attribute,
            "values": [list(pair) for pair in c.counts],
            "resolved": c.resolved,
        }
        for c in conflicts
    ]
    return {"attribute_conflicts": rows, "attribute_rule": RESOLUTION_RULE}


def summarize(manifest: Manifest, *, layout: str, path=None) -> dict:
    speakers = manifest.speaker_attributes(warn=False)  # the conflicts are listed below instead
    hours = manifest.hours()
    info = {
        "layout": layout,
        "utterances": len(manifest),
        "speakers": len(speakers),
        "episodes": len(manifest.episodes()),
        "hours": "unknown" if hours is None else round(hours, 3),
        "audio": "yes" if manifest.has_audio else "no (text-only)",
        "words": sum(len(u.text.split()) for u in manifest),
        "sex": _counts(a["sex"] for a in speakers.values()),
        "age_group": _counts(age_group(a["age"]) for a in speakers.values()),
        "accent_group": _counts(accent_group(a["accent"]) for a in speakers.values()),
    }
    for key in ("sex", "age_group", "accent_group"):
        if not info[key]:
            del info[key]
    info.update(_conflicts(manifest))
    if path is not None and Path(path).is_dir():
        ids = set(manifest.by_id())
        if (Path(path) / "trials").is_file():
            trials = read_trials(Path(path) / "trials", known_utterances=ids)
            info["target"] = sum(1 for t in trials if t[2])
            info["nontarget"] = len(trials) - info["target"]
        if (Path(path) / "enrolls").is_file():
            info["enrolls"] = len(read_id_list(Path(path) / "enrolls"))
    return info


def format_info(info: dict) -> str:
    lines = []
    for key, value in info.items():
        if key == "attribute_conflicts":  # a count, then one indented line per conflict
            lines.append(f"{key}: {len(value)}")
            lines.extend(
                f"  speaker {c['speaker']} {c['attribute']}: "
                + " vs ".join(f"{v!r} ({n})" for v, n in c["values"])
                + f", kept {c['resolved']!r}"
                for c in value
            )
            continue
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        lines.append(f"{key}: {value}")
    return "\n".join(lines)
