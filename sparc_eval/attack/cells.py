"""One cell of the comparison: one attacker on one corpus under one condition.

Every attacker follows the contract of :mod:`sparc_eval.attack` and is run by
:func:`sparc_eval.attack.run_attack`, once per cell, with the comparison's evaluation settings:
the cell folder holds its scores.txt (full precision), utt2spk, results.json and report, and
``cell.json`` (the summary the comparison reads). An attacker is given either

- by an attacker recipe's hparams file (``hparams:``, e.g. hparams/phones.yaml): the corpus's
  data keys are set on it and its split is thinned to the evaluation set; a trained model lives
  in its model folder, shared by the corpora it was trained for; or
- as an object in the comparison's hparams (``attacker: !new:...``, or ``kind:`` a registered
  name): an attacker that makes its own trials (a SPARC text scorer) reads the evaluation set.

A finished cell is reused when its settings, inputs and model are unchanged.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from ..atomic import atomic_open, write_json
from ..data.manifest import Manifest
from ..data.plan import DataPlan, DataSettings, plan_data
from ..digest import digest, file_digest, folder_digest, lines_digest
from ..errors import DataError
from ..hparams import defined_keys
from .evaluation import EvaluationSettings
from .evaluation_set import EvaluationSet, restrict_split
from .run import load_attack, run_attack
from .run import not_applicable as attack_not_applicable
from .trials import Trials


@dataclass
class AttackerSpec:
    name: str
    kind: Optional[str] = None  # as the hparams named it (text, ecapa, ...), for the record
    attacker: object = None  # an attacker object
    hparams: Optional[str] = None  # or an attacker recipe's hparams file
    overrides: dict = field(default_factory=dict)
    model_folder: Optional[str] = None  # hparams attackers: where the trained model lives

    def describe(self) -> dict:
        if self.attacker is not None:
            return {
                "kind": self.kind,
                "class": type(self.attacker).__name__,
                **self.attacker.describe(),
            }
        return {
            "kind": self.kind,
            "hparams": self.hparams,
            "overrides": self.overrides,
            "model_folder": self.model_folder,
        }


@dataclass
class CorpusSpec:
    name: str
    data_folder: str
    train_folders: Optional[list] = None
    data_keys: dict = field(
        default_factory=dict
    )  # split and anonymization keys of the attacker recipe

    def data_overrides(self) -> dict:
        """The attacker recipe's data keys for this corpus. With ``train_folders`` the corpus is
        the evaluation folder; without, the recipe holds out part of its speakers."""
        out = dict(self.data_keys)
        if self.train_folders:
            out.update(train_folders=list(self.train_folders), eval_folder=self.data_folder)
        else:
            out["data_folder"] = self.data_folder
        return out

    def data_settings(self, cache_folder=None) -> DataSettings:
        return DataSettings.from_hparams({**self.data_overrides(), "cache_folder": cache_folder})

    @property
    def scenario(self) -> str:
        return self.data_settings().scenario


@dataclass
class CellContext:
    """What every cell of one comparison shares."""

    settings: EvaluationSettings
    common: dict  # hparams keys set on every attacker recipe (cache, progress...)
    cache_folder: str
    trials_per_speaker: Optional[int] = None
    plots: bool = True
    log: object = print
    prefix: str = "leakage"  # how log lines name the run (the anonymizer card: card)


# --- cache keys ----------------------------------------------------------------------------------


def manifest_digest(manifest) -> str:
    """What a cell reads of its corpus: ids, speakers and words (new transcripts = a new cell)."""
    return lines_digest(f"{u.id}\t{u.speaker}\t{u.text}\n" for u in manifest)


def inputs_digest(settings: dict) -> dict:
    """What the corpus settings point at on disk (trial lists, anonymized corpora): a list file by
    its content; a folder written by sparc_eval's anonymizer runner by its manifest, whose records
    carry the key of what made each file (its input's bytes and the anonymizer's settings), so that
    a cached re-run keeps the cells, a changed setting makes new ones, and going back to a setting
    finds its cells again; any other folder by its files' names, sizes and modification times."""
    out = {}
    for key, value in sorted(settings.items()):
        for i, item in enumerate(value if isinstance(value, (list, tuple)) else [value]):
            path = Path(str(item)) if isinstance(item, (str, Path)) else None
            if path is not None and path.is_file():
                out[f"{key}[{i}]"] = file_digest(path)
            elif (
                path is not None
                and (path / ".done.jsonl").is_file()
                and (path / "manifest.jsonl").is_file()
            ):
                out[f"{key}[{i}]"] = file_digest(path / "manifest.jsonl")
            elif path is not None and path.is_dir():
                out[f"{key}[{i}]"] = folder_digest(path)
    return out


def newest_checkpoint(save_folder) -> Optional[str]:
    """The name of a model folder's newest checkpoint: more training means new scores."""
    ckpts = sorted(p.name for p in Path(save_folder).glob("CKPT*")) if save_folder else []
    return ckpts[-1] if ckpts else None


def cell_key(
    spec: AttackerSpec,
    corpus: CorpusSpec,
    evalset: EvaluationSet,
    condition: str,
    view: Manifest,
    ctx: CellContext,
) -> str:
    save_folder = spec.overrides.get("save_folder") or (
        Path(spec.model_folder) / "save" if spec.model_folder else None
    )
    return digest(
        [
            "cell",
            spec.describe(),
            file_digest(spec.hparams) if spec.hparams else None,
            corpus.data_overrides(),
            inputs_digest(corpus.data_keys),
            manifest_digest(view),
            digest(evalset.manifest.speaker_attributes()),
            condition,
            ctx.trials_per_speaker,
            ctx.settings.digest_parts(),
            newest_checkpoint(save_folder),
        ]
    )


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


def not_applicable(
    attacker: AttackerSpec, corpus: str, condition: str, why: str, *, status: str = "not_applicable"
) -> dict:
    """A cell that cannot run: ``not_applicable`` (the data do not allow it) or ``failed`` (an
    error to fix, e.g. a model folder holding another attacker)."""
    return {
        "attacker": attacker.name,
        "kind": attacker.kind,
        "corpus": corpus,
        "condition": condition,
        "status": status,
        "reason": why,
    }


# --- running a cell ------------------------------------------------------------------------------


def _view(evalset: EvaluationSet, condition: str, text_manifest: Optional[Manifest]) -> Manifest:
    """What an attacker with its own trials reads: the evaluation set, or what its anonymized
    speech says (``text_manifest``), without the shared text under ``no_shared``."""
    manifest = evalset.manifest if text_manifest is None else text_manifest
    if condition == "no_shared" and evalset.shared_ids:
        manifest = manifest.subset(lambda u: u.id not in evalset.shared_ids)
    return manifest


def _plan(
    spec: AttackerSpec,
    corpus: CorpusSpec,
    evalset: EvaluationSet,
    condition: str,
    view: Manifest,
    ctx: CellContext,
    cell_dir: Path,
) -> tuple:
    """(attacker, data plan, data settings) of a cell."""
    if spec.hparams:
        defined = defined_keys(spec.hparams)
        common = {
            k: v for k, v in ctx.common.items() if k in defined
        }  # conveniences, where the file has them
        overrides = {
            **spec.overrides,
            **corpus.data_overrides(),
            **common,
            "output_folder": spec.model_folder,
            "results_folder": str(cell_dir),
        }
        hp, plan, attacker = load_attack(spec.hparams, overrides)
        return attacker, plan, DataSettings.from_hparams(hp)
    attacker = spec.attacker
    if attacker.needs.split:  # it scores a split of the corpus, as the attacker recipe makes it
        data = corpus.data_settings(ctx.cache_folder)
        return attacker, plan_data(data), data
    empty = Manifest([], name="no training data")
    return attacker, DataPlan(empty, view, view, None, evalset.manifest, corpus.scenario), None


def _thin(plan: DataPlan, evalset: EvaluationSet, condition: str, ctx: CellContext) -> None:
    """The plan's split limited to the evaluation set's speakers (without shared text under
    ``no_shared``), the same speakers and utterances for every attacker."""
    missing = evalset.speakers - set(plan.eval_original.speakers())
    if missing:
        raise DataError(
            f"the attacker's evaluation speakers differ from the corpus's ({sorted(missing)[:3]} "
            f"are missing)",
            hint="give every attacker the same split keys (split_seed, eval_speaker_fraction)",
        )
    drop = evalset.left_out_ids | (evalset.shared_ids if condition == "no_shared" else frozenset())
    plan.split = restrict_split(
        plan.split,
        plan.eval_original.utt2spk(),
        speakers=evalset.speakers,
        drop_ids=drop,
        trials_per_speaker=ctx.trials_per_speaker,
        seed=ctx.settings.bootstrap.seed,
    )


def cell_summary(evaluation, trials: Trials) -> dict:
    """What cell.json keeps of the cell's one evaluation."""
    left_out = {
        k.split(".", 1)[1]: v
        for k, v in evaluation["not_applicable"].items()
        if k.startswith("segments.") and v.endswith("skipped")
    }
    return {
        "overall": evaluation["overall"],
        "per_speaker": evaluation["per_speaker"],
        "segments": evaluation["segments"],
        "segments_left_out": left_out,
        "n_trial_speakers": trials.scored().n_test_speakers(),
        "n_missing_scores": trials.n_unscored,
    }


def run_cell(
    spec: AttackerSpec,
    corpus: CorpusSpec,
    evalset: EvaluationSet,
    condition: str,
    cell_dir: Path,
    ctx: CellContext,
    *,
    text_manifest: Optional[Manifest] = None,
) -> dict:
    view = _view(evalset, condition, text_manifest if spec.attacker is not None else None)
    where = f"{evalset.name} / {spec.name} / {condition}"
    done = _finished(cell_dir, cell_key(spec, corpus, evalset, condition, view, ctx))
    if done:
        ctx.log(f"[{ctx.prefix}] {where}: reused {cell_dir}")
        return done
    attacker, plan, data = _plan(spec, corpus, evalset, condition, view, ctx, cell_dir)
    why = attack_not_applicable(attacker, plan)
    if why:
        return not_applicable(spec, evalset.name, condition, why)
    if plan.split is not None:
        _thin(plan, evalset, condition, ctx)
    ctx.log(
        f"[{ctx.prefix}] {where}: running {attacker.name}"
        + (f" ({spec.model_folder})" if spec.model_folder else "")
    )
    result = run_attack(
        attacker,
        plan,
        cell_dir,
        settings=ctx.settings,
        data=data,
        plots=ctx.plots,
        run_info={
            "hparams": spec.hparams,
            "overrides": spec.overrides or None,
            "seed": ctx.settings.bootstrap.seed,
        },
        speakers=evalset.manifest.speaker_attributes() if plan.split is None else None,
    )
    with atomic_open(
        cell_dir / "utt2spk", "w", encoding="utf-8"
    ) as handle:  # for the scores of a reused cell
        handle.writelines(f"{t} {s}\n" for t, s in sorted(result.trials.utt2spk().items()))
    base = {
        "attacker": spec.name,
        "kind": spec.kind,
        "corpus": evalset.name,
        "condition": condition,
        "results": "results.json",
        "trials": {"scores": "scores.txt", "utt2spk": "utt2spk"},
        "n_utterances": len(view)
        if plan.split is None
        else len(plan.split.trial_ids) + sum(len(v) for v in plan.split.enroll.values()),
        **attacker.describe(),
        "needs": asdict(attacker.needs),
        "deviations": result.run_info["deviations"],
    }
    if spec.model_folder:
        base["model_folder"] = spec.model_folder
    if result.evaluation["overall"]["eer"] is None:
        cell = {
            **base,
            "status": "not_applicable",
            "reason": "the trials have one class only: no EER",
        }
    else:
        cell = {**base, "status": "ok", **cell_summary(result.evaluation, result.trials)}
    cell["key"] = cell_key(
        spec, corpus, evalset, condition, view, ctx
    )  # after training: its newest checkpoint
    write_json(cell_dir / "cell.json", cell)
    return cell


def cell_trials(cell_dir: Path) -> Trials:
    """The scored trials of a finished cell, for comparisons."""
    from ..metrics import read_utt2spk

    return Trials.read(cell_dir / "scores.txt", read_utt2spk(cell_dir / "utt2spk"))
