"""One cell of the comparison: one attacker on one corpus under one condition.

Two kinds of attacker share the cell format (``cell.json``):

- ``text``: a SPARC transcript scorer (TF-IDF, stylometric, sentence embeddings, LLM judge),
  evaluated by :func:`sparc_eval.text.evaluate.evaluate_text` on the speaker task;
- ``ecapa``: an ECAPA-TDNN attacker trained and evaluated by :mod:`attackers.run` (phones,
  phone+duration or mel features), its split thinned to the evaluation set.

Every cell also gets per-speaker and segment EERs, and keeps its trial scores on disk for the
paired comparisons (:mod:`.compare`). A finished cell is reused when its settings are unchanged.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..atomic import atomic_open, write_json
from ..errors import DataError
from .evaluation_set import EvaluationSet, restrict_split

ATTACKER_KINDS = ("text", "ecapa")


@dataclass
class AttackerSpec:
    name: str
    kind: str                          # text | ecapa
    scorer: object = None              # text: a TextScorer
    hparams: str | None = None         # ecapa: the attacker recipe's hparams file
    overrides: dict = field(default_factory=dict)
    model_folder: str | None = None    # ecapa: where the trained model lives (shared by corpora)
    P: int = 200
    L: int = 20
    trial_settings: dict = field(default_factory=dict)

    def describe(self) -> dict:
        if self.kind == "text":
            return {"kind": "text", "scorer": getattr(self.scorer, "name", type(self.scorer).__name__),
                    "scorer_settings": self.scorer.settings(), "P": self.P, "L": self.L,
                    "trial_settings": self.trial_settings}
        return {"kind": "ecapa", "hparams": self.hparams, "overrides": self.overrides,
                "model_folder": self.model_folder}


@dataclass
class CorpusSpec:
    name: str
    data_folder: str
    train_folders: list | None = None
    settings: dict = field(default_factory=dict)   # split and anonymization keys for the ECAPA recipe

    def ecapa_overrides(self) -> dict:
        """The attacker recipe's data keys for this corpus. With ``train_folders`` the corpus is
        the evaluation folder; without, the recipe holds out part of its speakers."""
        out = dict(self.settings)
        if self.train_folders:
            out.update(train_folders=list(self.train_folders), eval_folder=self.data_folder)
        else:
            out["data_folder"] = self.data_folder
        return out


def cell_key(*parts) -> str:
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _finished(cell_dir: Path, key: str):
    path = cell_dir / "cell.json"
    if path.is_file():
        try:
            cell = json.loads(path.read_text())
        except json.JSONDecodeError:
            return None
        if cell.get("key") == key:
            return cell
    return None


def not_applicable(attacker: AttackerSpec, corpus: str, condition: str, why: str) -> dict:
    return {"attacker": attacker.name, "kind": attacker.kind, "corpus": corpus, "condition": condition,
            "status": "not_applicable", "reason": why}


def breakdown(enroll_speakers, test_ids, test_speakers, scores, labels, speakers_table, *, min_segment_speakers):
    """Per-speaker and segment EERs of a cell's trials (no bootstrap: the cell has its CIs)."""
    from ..metrics import evaluate_trials

    keep = np.isfinite(scores)
    utt2spk = dict(zip(np.asarray(test_ids)[keep].tolist(), np.asarray(test_speakers)[keep].tolist()))
    ev = evaluate_trials(np.asarray(enroll_speakers)[keep], np.asarray(test_ids)[keep], scores[keep], labels[keep],
                         utt2spk=utt2spk, speakers=speakers_table, n_boot=0,
                         min_segment_speakers=min_segment_speakers)
    left_out = {k.split(".", 1)[1]: v for k, v in ev["not_applicable"].items()
                if k.startswith("segments.") and v.endswith("skipped")}
    return ev["per_speaker"], ev["segments"], left_out


# --- text attackers ------------------------------------------------------------------------------

def run_text_cell(attacker: AttackerSpec, evalset: EvaluationSet, condition: str, cell_dir: Path, *,
                  shared_settings: dict, n_boot: int, seed: int, plots: bool, min_segment_speakers: int,
                  text_manifest=None, log=print) -> dict:
    """``text_manifest``: what the attacker reads when it is not the evaluation set's own text
    (an anonymized corpus's transcripts, :func:`.evaluation_set.with_asr_text`)."""
    from ..text.evaluate import evaluate_text, setting_key, trial_config_from_hparams

    key = cell_key("text", attacker.describe(), evalset.name, sorted(evalset.speakers), condition,
                   shared_settings, n_boot, seed, text_manifest is not None)
    done = _finished(cell_dir, key)
    if done:
        log(f"[leakage] {evalset.name} / {attacker.name} / {condition}: reused {cell_dir}")
        return done
    manifest = evalset.manifest if text_manifest is None else text_manifest
    config = trial_config_from_hparams({**attacker.trial_settings, **shared_settings, "seed": seed,
                                        "shared_text": condition == "no_shared"})
    setting = setting_key(attacker.P, attacker.L)
    doc = evaluate_text(manifest, attacker.scorer, tasks=["speaker"], settings=[(attacker.P, attacker.L)],
                        config=config, output_folder=cell_dir, n_boot=n_boot, seed=seed,
                        dataset=evalset.name, plots=plots, log=lambda msg: None)
    block = doc["tasks"]["speaker"].get(setting)
    overall = block and block["conditions"].get("combined")
    if not overall:
        why = doc["not_applicable"].get(f"tasks.speaker.{setting}.conditions.combined") or \
            doc["not_applicable"].get(f"tasks.speaker.{setting}") or "no trials with both classes"
        cell = not_applicable(attacker, evalset.name, condition, why)
    else:
        trials = text_trials(cell_dir, setting)
        per, segments, left_out = breakdown(trials["enroll_speaker"], trials["test"], trials["test_speaker"],
                                            trials["scores"], trials["labels"], evalset.manifest.speaker_attributes(),
                                            min_segment_speakers=min_segment_speakers)
        cell = {"attacker": attacker.name, "kind": "text", "corpus": evalset.name, "condition": condition,
                "status": "ok", "overall": overall, "per_speaker": per, "segments": segments,
                "segments_left_out": left_out, "results": "results.json",
                "n_trial_speakers": len(set(trials["test_speaker"].tolist())),
                "n_utterances": doc["shared_text"]["n_utterances"] - doc["shared_text"]["n_removed"],
                "trials": {"scores": f"scores/speaker_{setting}.txt", "trials": f"trials/speaker_{setting}.jsonl"}}
    cell["key"] = key
    write_json(cell_dir / "cell.json", cell)
    return cell


def text_trials(cell_dir: Path, setting: str) -> dict:
    """A text cell's trials: enrollment speaker, probe id and speaker, score, label."""
    from ..metrics import read_scores

    scores = read_scores(cell_dir / "scores" / f"speaker_{setting}.txt")
    enroll_spk, probe_spk = [], []
    with open(cell_dir / "trials" / f"speaker_{setting}.jsonl", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                rec = json.loads(line)
                enroll_spk.append(rec["enroll"]["speaker"])
                probe_spk.append(rec["probe"]["speaker"])
    if len(probe_spk) != len(scores):
        raise DataError(f"{len(scores)} scores but {len(probe_spk)} trials", path=cell_dir,
                        hint="the cell was interrupted while writing; delete the folder and run again")
    return {"enroll": scores.enroll, "enroll_speaker": np.array(enroll_spk), "test": scores.test,
            "test_speaker": np.array(probe_spk), "scores": scores.scores, "labels": scores.labels}


# --- ECAPA attackers -----------------------------------------------------------------------------

def run_ecapa_cell(attacker: AttackerSpec, corpus: CorpusSpec, evalset: EvaluationSet, condition: str,
                   cell_dir: Path, *, common: dict, trials_per_speaker, seed: int, min_segment_speakers: int,
                   log=print) -> dict:
    from attackers.run import needs_audio, prepare, run_attack

    overrides = {**attacker.overrides, **corpus.ecapa_overrides(), **common,
                 "output_folder": attacker.model_folder, "results_folder": str(cell_dir)}
    key = cell_key("ecapa", attacker.describe(), corpus.ecapa_overrides(), sorted(evalset.speakers), condition,
                   trials_per_speaker, seed, common.get("n_boot"))
    done = _finished(cell_dir, key)
    if done:
        log(f"[leakage] {evalset.name} / {attacker.name} / {condition}: reused {cell_dir}")
        return done
    hp, plan = prepare(attacker.hparams, overrides)
    if needs_audio(hp):
        for role, manifest in (("training", plan.train), ("enrollment", plan.enroll), ("trial", plan.trials)):
            if not manifest.has_audio:
                return not_applicable(attacker, evalset.name, condition,
                                      f"{hp['feature_type']} features need audio; the {role} corpus is text-only")
    drop = evalset.shared_ids if condition == "no_shared" else frozenset()
    missing = evalset.speakers - set(plan.eval_original.speakers())
    if missing:
        raise DataError(f"the attacker's evaluation speakers differ from the corpus's ({sorted(missing)[:3]} "
                        f"are missing)", hint="give every attacker the same split keys (split_seed, eval_speaker_fraction)")
    plan.split = restrict_split(plan.split, plan.eval_original.utt2spk(), speakers=evalset.speakers, drop_ids=drop,
                                trials_per_speaker=trials_per_speaker, seed=seed)
    log(f"[leakage] {evalset.name} / {attacker.name} / {condition}: training or resuming {attacker.model_folder}")
    results_path = run_attack(hp, None, hparams_file=attacker.hparams, overrides=overrides, plan=plan)
    results = json.loads(Path(results_path).read_text())
    trials = ecapa_trials(cell_dir, plan.eval_original.utt2spk())
    _, _, left_out = breakdown(trials["enroll_speaker"], trials["test"], trials["test_speaker"], trials["scores"],
                               trials["labels"], plan.eval_original.speaker_attributes(),
                               min_segment_speakers=min_segment_speakers)
    cell = {"attacker": attacker.name, "kind": "ecapa", "corpus": evalset.name, "condition": condition,
            "status": "ok", "overall": results["overall"], "per_speaker": results["per_speaker"],
            "segments": results["segments"], "segments_left_out": left_out, "results": "results.json",
            "n_trial_speakers": len(set(trials["test_speaker"].tolist())),
            "n_utterances": len(plan.split.trial_ids) + sum(len(v) for v in plan.split.enroll.values()),
            "features": hp["feature_type"], "model_folder": attacker.model_folder,
            "trials": {"scores": "scores.txt"}, "key": key}
    with atomic_open(cell_dir / "utt2spk", "w", encoding="utf-8") as handle:  # for ecapa_trials on a reused cell
        handle.writelines(f"{u} {plan.eval_original.utt2spk()[u]}\n" for u in sorted(set(trials["test"].tolist())))
    write_json(cell_dir / "cell.json", cell)
    return cell


def ecapa_trials(cell_dir: Path, utt2spk: dict | None = None) -> dict:
    from ..metrics import read_scores, read_utt2spk

    scores = read_scores(cell_dir / "scores.txt")
    utt2spk = utt2spk if utt2spk is not None else read_utt2spk(cell_dir / "utt2spk")
    return {"enroll": scores.enroll, "enroll_speaker": scores.enroll, "test": scores.test,
            "test_speaker": np.array([utt2spk[t] for t in scores.test.tolist()]),
            "scores": scores.scores, "labels": scores.labels}


def cell_trials(cell: dict, cell_dir: Path) -> dict:
    """The trials of a finished cell, for comparisons."""
    if cell["kind"] == "text":
        return text_trials(cell_dir, Path(cell["trials"]["scores"]).stem.split("_", 1)[1])
    return ecapa_trials(cell_dir)
