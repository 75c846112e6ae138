"""What the card anonymizes: exactly the utterances each scenario reads, once per anonymizer.

The evaluation corpus's enrollment and trial utterances (every scenario), and the training data
when semi-informed attackers are asked for, go through :func:`sparc_eval.anonymize.anonymize_corpus`
(cached and resumable, shards and Ray as the runner settings say) into
``<output_folder>/anonymized/<anonymizer>/{eval,train}``. An utterance the anonymizer fails on is
listed in that folder's ``failures.jsonl``; the card leaves it out of every attacker alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..anonymize import anonymize_corpus
from ..data_plan import DataPlan
from ..manifest import Manifest
from .settings import AnonymizerSpec, CardSettings


@dataclass
class AnonymizedCorpora:
    name: str
    eval_folder: Path
    train_folder: Path | None = None
    failures: dict = field(default_factory=dict)    # utterance id -> reason
    train_failures: dict = field(default_factory=dict)
    reports: dict = field(default_factory=dict)     # eval / train -> anonymization.json's counts and timings


def _failures(folder: Path) -> dict:
    path = folder / "failures.jsonl"
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            out[record["id"]] = record.get("reason") or record.get("error") or "failed"
    return out


def _run(s: CardSettings, spec: AnonymizerSpec, manifest: Manifest, folder: Path, log) -> tuple:
    log(f"[card] anonymizing {len(manifest)} utterances with {spec.name} into {folder}")
    result = anonymize_corpus(manifest, spec.anonymizer, folder, progress=s.progress,
                              anonymizer_options=spec.options or None, **s.runner)
    report = result.report
    keep = ("utterances", "finished", "processed", "cached", "failed", "rtf", "timings_s")
    return {k: report[k] for k in keep if k in report}, _failures(folder)


def needed_utterances(plan: DataPlan) -> Manifest:
    """The evaluation utterances every scenario reads: the split's enrollments and trials."""
    return Manifest([*plan.enroll_utterances(), *plan.trial_utterances()], name=f"{plan.eval_original.name} (split)")


def anonymize_needed(s: CardSettings, plan: DataPlan, log=print) -> dict:
    """{anonymizer name: AnonymizedCorpora}, anonymizing what the scenarios need (and no more)."""
    needed = needed_utterances(plan)
    out = {}
    for spec in s.anonymizers:
        base = s.output_folder / "anonymized" / spec.name
        done = AnonymizedCorpora(spec.name, base / "eval")
        done.reports["eval"], done.failures = _run(s, spec, needed, done.eval_folder, log)
        if "semi-informed" in s.scenarios:
            done.train_folder = base / "train"
            done.reports["train"], done.train_failures = _run(s, spec, plan.train, done.train_folder, log)
        out[spec.name] = done
    return out
