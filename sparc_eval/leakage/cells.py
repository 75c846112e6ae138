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


def manifest_digest(manifest) -> str:
    """What a cell reads of its corpus: ids, speakers and words (new transcripts = a new cell)."""
    h = hashlib.sha256()
    for u in manifest:
        h.update(f"{u.id}\t{u.speaker}\t{u.text}\n".encode())
    return h.hexdigest()[:16]


def file_digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def attributes_digest(manifest) -> str:
    """The speakers' metadata: segment EERs change with it."""
    text = json.dumps(manifest.speaker_attributes(), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def inputs_digest(settings: dict) -> dict:
    """What the corpus settings point at on disk (trial lists, anonymized corpora): a list file by
    its content, a folder by its files' names, sizes and modification times, so that an
    anonymizer re-run into the same folder makes new cells."""
    out = {}
    for key, value in sorted(settings.items()):
        for i, item in enumerate(value if isinstance(value, (list, tuple)) else [value]):
            path = Path(str(item)) if isinstance(item, (str, Path)) else None
            if path is not None and path.is_file():
                out[f"{key}[{i}]"] = file_digest(path)
            elif path is not None and path.is_dir():
                h = hashlib.sha256()
                for f in sorted(path.rglob("*")):
                    if f.is_file():
                        st = f.stat()
                        h.update(f"{f.relative_to(path)}\t{st.st_size}\t{st.st_mtime_ns}\n".encode())
                out[f"{key}[{i}]"] = h.hexdigest()[:16]
    return out


def newest_checkpoint(save_folder) -> str | None:
    """The name of the model's newest checkpoint: more training means new scores."""
    ckpts = sorted(p.name for p in Path(save_folder).glob("CKPT*")) if save_folder else []
    return ckpts[-1] if ckpts else None


def _finished(cell_dir: Path, key: str):
    path = cell_dir / "cell.json"
    if path.is_file():
        try:
            cell = json.loads(path.read_text())
        except json.JSONDecodeError:
            return None
        if cell.get("key") == key:
            return cell
        path.unlink()  # stale: its scores are about to be rewritten
    return None


def not_applicable(attacker: AttackerSpec, corpus: str, condition: str, why: str, *,
                   status: str = "not_applicable") -> dict:
    """A cell that cannot run: ``not_applicable`` (the data do not allow it) or ``failed`` (an
    error to fix, e.g. a model folder holding another attacker)."""
    return {"attacker": attacker.name, "kind": attacker.kind, "corpus": corpus, "condition": condition,
            "status": status, "reason": why}


@dataclass
class CellSettings:
    """How every cell's metrics are computed, so that cells and comparisons agree."""
    n_boot: int = 1000
    seed: int = 0
    unit: str = "speaker"             # bootstrap unit of the cells' CIs and of the comparisons
    min_segment_speakers: int = 3
    segment_attributes: list | None = None   # attributes segmented (None: every speaker attribute)
    accent_grouping: str = "coarse"          # coarse | fine (sparc_eval.attributes.ACCENT_GROUPINGS)


def cell_metrics(trials: dict, speakers_table: dict, settings: CellSettings) -> dict | None:
    """Overall (CI over ``settings.unit``), per-speaker and segment EERs of a cell's trials;
    None when the trials have one class only."""
    from ..attributes import SEGMENT_NAMES, segment_table
    from ..metrics import evaluate_trials

    # segment values made here, under the chosen accent grouping; evaluate_trials keeps them as they are
    speakers_table = segment_table(speakers_table, accent_grouping=settings.accent_grouping)
    if settings.segment_attributes is not None:  # segment only these (sex, age, accent), not e.g. a voice name
        keep_attrs = {SEGMENT_NAMES.get(a, a) for a in settings.segment_attributes}  # age or age_group alike
        speakers_table = {s: {k: v for k, v in attrs.items() if k in keep_attrs}
                          for s, attrs in speakers_table.items()}
    keep = np.isfinite(trials["scores"])
    test, spk = trials["test"][keep], trials["test_speaker"][keep]
    utt2spk = dict(zip(test.tolist(), spk.tolist()))
    ev = evaluate_trials(trials["enroll_speaker"][keep], test, trials["scores"][keep], trials["labels"][keep],
                         utt2spk=utt2spk, speakers=speakers_table, n_boot=settings.n_boot, seed=settings.seed,
                         bootstrap_unit=settings.unit, min_segment_speakers=settings.min_segment_speakers)
    if ev["overall"]["eer"] is None:
        return None
    left_out = {k.split(".", 1)[1]: v for k, v in ev["not_applicable"].items()
                if k.startswith("segments.") and v.endswith("skipped")}
    return {"overall": ev["overall"], "per_speaker": ev["per_speaker"], "segments": ev["segments"],
            "segments_left_out": left_out, "n_trial_speakers": len(set(spk.tolist())),
            "n_missing_scores": int((~keep).sum())}


def _complete(base: dict, trials: dict, speakers_table: dict, settings: CellSettings, key: str,
              cell_dir: Path) -> dict:
    metrics = cell_metrics(trials, speakers_table, settings)
    if metrics is None:
        cell = {**base, "status": "not_applicable", "reason": "the trials have one class only: no EER"}
    else:
        cell = {**base, "status": "ok", **metrics}
    cell["key"] = key
    write_json(cell_dir / "cell.json", cell)
    return cell


# --- text attackers ------------------------------------------------------------------------------

def run_text_cell(attacker: AttackerSpec, evalset: EvaluationSet, condition: str, cell_dir: Path, *,
                  metrics: CellSettings, plots: bool, text_manifest=None, log=print) -> dict:
    """``text_manifest``: what the attacker reads when it is not the evaluation set's own text
    (an anonymized corpus's transcripts, :func:`sparc_eval.words.spoken_manifest`). Shared text is
    the evaluation set's (``shared_ids``), the same utterances for every attacker."""
    from ..text.evaluate import evaluate_text, setting_key, trial_config_from_hparams

    manifest = evalset.manifest if text_manifest is None else text_manifest
    if condition == "no_shared" and evalset.shared_ids:
        manifest = manifest.subset(lambda u: u.id not in evalset.shared_ids)
    key = cell_key("text", attacker.describe(), manifest_digest(manifest), attributes_digest(evalset.manifest),
                   vars(metrics))
    done = _finished(cell_dir, key)
    if done:
        log(f"[leakage] {evalset.name} / {attacker.name} / {condition}: reused {cell_dir}")
        return done
    config = trial_config_from_hparams({**attacker.trial_settings, "seed": metrics.seed, "shared_text": False})
    setting = setting_key(attacker.P, attacker.L)
    doc = evaluate_text(manifest, attacker.scorer, tasks=["speaker"], settings=[(attacker.P, attacker.L)],
                        config=config, output_folder=cell_dir, n_boot=metrics.n_boot, seed=metrics.seed,
                        dataset=evalset.name, plots=plots, log=lambda msg: None)
    block = doc["tasks"]["speaker"].get(setting)
    if not (block and block["conditions"].get("combined")):
        why = doc["not_applicable"].get(f"tasks.speaker.{setting}.conditions.combined") or \
            doc["not_applicable"].get(f"tasks.speaker.{setting}") or "no trials with both classes"
        cell = {**not_applicable(attacker, evalset.name, condition, why), "key": key}
        write_json(cell_dir / "cell.json", cell)
        return cell
    base = {"attacker": attacker.name, "kind": "text", "corpus": evalset.name, "condition": condition,
            "results": "results.json",
            "n_utterances": len(manifest),
            "trials": {"scores": f"scores/speaker_{setting}.txt", "trials": f"trials/speaker_{setting}.jsonl"}}
    return _complete(base, text_trials(cell_dir, setting), evalset.manifest.speaker_attributes(), metrics, key,
                     cell_dir)


def text_trials(cell_dir: Path, setting: str) -> dict:
    """A text cell's scored trials: enrollment speaker, probe id and speaker, score, label. Trials the
    scorer left unscored are not in the score file (the text evaluation lists them), so the two
    files are matched on (enrollment id, probe id), not on line order."""
    from ..metrics import read_scores

    scores = read_scores(cell_dir / "scores" / f"speaker_{setting}.txt")
    speakers = {}
    with open(cell_dir / "trials" / f"speaker_{setting}.jsonl", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                rec = json.loads(line)
                speakers[(rec["enroll"]["id"], rec["probe"]["id"])] = (rec["enroll"]["speaker"], rec["probe"]["speaker"])
    try:
        pairs = [speakers[(e, t)] for e, t in zip(scores.enroll.tolist(), scores.test.tolist())]
    except KeyError as err:
        raise DataError(f"scored trial {err.args[0]} is not in the trial file", path=cell_dir,
                        hint="the cell was interrupted while writing; delete the folder and run again") from None
    return {"enroll": scores.enroll, "enroll_speaker": np.array([p[0] for p in pairs]), "test": scores.test,
            "test_speaker": np.array([p[1] for p in pairs]), "scores": scores.scores, "labels": scores.labels}


# --- ECAPA attackers -----------------------------------------------------------------------------

def run_ecapa_cell(attacker: AttackerSpec, corpus: CorpusSpec, evalset: EvaluationSet, condition: str,
                   cell_dir: Path, *, common: dict, trials_per_speaker, metrics: CellSettings,
                   log=print) -> dict:
    from attackers.run import needs_audio, prepare, run_attack

    overrides = {**attacker.overrides, **corpus.ecapa_overrides(), **common,
                 "output_folder": attacker.model_folder, "results_folder": str(cell_dir)}
    drop = evalset.shared_ids if condition == "no_shared" else frozenset()

    save_folder = attacker.overrides.get("save_folder") or Path(attacker.model_folder) / "save"

    def key_now():
        return cell_key("ecapa", attacker.describe(), file_digest(attacker.hparams), corpus.ecapa_overrides(),
                        inputs_digest(corpus.settings), manifest_digest(evalset.manifest),
                        attributes_digest(evalset.manifest), sorted(drop), trials_per_speaker, vars(metrics),
                        newest_checkpoint(save_folder))

    done = _finished(cell_dir, key_now())
    if done:
        log(f"[leakage] {evalset.name} / {attacker.name} / {condition}: reused {cell_dir}")
        return done
    hp, plan = prepare(attacker.hparams, overrides)
    if needs_audio(hp):
        for role, manifest in (("training", plan.train), ("enrollment", plan.enroll), ("trial", plan.trials)):
            if not manifest.has_audio:
                return not_applicable(attacker, evalset.name, condition,
                                      f"{hp['feature_type']} features need audio; the {role} corpus is text-only")
    missing = evalset.speakers - set(plan.eval_original.speakers())
    if missing:
        raise DataError(f"the attacker's evaluation speakers differ from the corpus's ({sorted(missing)[:3]} "
                        f"are missing)", hint="give every attacker the same split keys (split_seed, eval_speaker_fraction)")
    plan.split = restrict_split(plan.split, plan.eval_original.utt2spk(), speakers=evalset.speakers, drop_ids=drop,
                                trials_per_speaker=trials_per_speaker, seed=metrics.seed)
    log(f"[leakage] {evalset.name} / {attacker.name} / {condition}: training or resuming {attacker.model_folder}")
    run_attack(hp, None, hparams_file=attacker.hparams, overrides=overrides, plan=plan)
    utt2spk = plan.eval_original.utt2spk()
    trials = ecapa_trials(cell_dir, utt2spk)
    with atomic_open(cell_dir / "utt2spk", "w", encoding="utf-8") as handle:  # for ecapa_trials on a reused cell
        handle.writelines(f"{u} {utt2spk[u]}\n" for u in sorted(set(trials["test"].tolist())))
    base = {"attacker": attacker.name, "kind": "ecapa", "corpus": evalset.name, "condition": condition,
            "results": "results.json", "features": hp["feature_type"], "model_folder": attacker.model_folder,
            "n_train_speakers": len(plan.train.speakers()),
            "n_utterances": len(plan.split.trial_ids) + sum(len(v) for v in plan.split.enroll.values()),
            "trials": {"scores": "scores.txt"}}
    return _complete(base, trials, plan.eval_original.speaker_attributes(), metrics, key_now(), cell_dir)


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
