"""One cell of the comparison: one attacker on one corpus under one condition.

Every attacker follows the contract of :mod:`sparc_eval.attack` and is run by
:func:`sparc_eval.attack.run_attack`, once per cell, with the comparison's evaluation settings:
the cell folder holds its scores.txt (full precision), utt2spk, results.json and report, and
``cell.json`` (the summary the comparison reads). An attacker is given either

- by an attacker recipe's hparams file (``hparams:``, e.g. hparams/phones.yaml, read once per
  run): it attacks the corpus's data plan (planned once per corpus and scenario, :class:`sparc_eval.data.plan.Plans`),
  thinned to the evaluation set; the corpus's data keys are set on its hparams for its record;
  a trained model lives in its model folder, shared by the corpora it was trained for; or
- as an object in the comparison's hparams (``attacker: !new:...``, or ``kind:`` a registered
  name): an attacker that makes its own trials (a SPARC text scorer) reads the evaluation set.

A finished cell is reused when its settings, inputs and model are unchanged.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Optional

from ..atomic import atomic_open, write_json
from ..cache import file_digests as cached_file_digests
from ..cache import restore, set_aside
from ..data.manifest import Manifest
from ..data.plan import DataPlan, DataSettings, Plans
from ..digest import FileDigests, content_digest, digest, file_digest, folder_digest, lines_digest
from ..errors import DataError
from ..hparams import HparamsFile
from .cell_results import (
    cell_summary,
    cell_trials,  # noqa: F401 (its home before 0.4: callers still import it here)
    evaluated_again,
    plots_key,
)
from .code import scores_code
from .contract import optional
from .evaluation import EvaluationSettings
from .evaluation_set import EvaluationSet, restrict_split
from .run import load_attack, run_attack
from .run import not_applicable as attack_not_applicable
from .trials import Trials

logger = logging.getLogger(__name__)


@dataclass
class AttackerSpec:
    name: str
    kind: Optional[str] = None  # as the hparams named it (text, ecapa, ...), for the record
    attacker: object = None  # an attacker object
    hparams: Optional[str] = None  # or an attacker recipe's hparams file
    overrides: dict = field(default_factory=dict)
    model_folder: Optional[str] = None  # hparams attackers: where the trained model lives
    file: Optional[HparamsFile] = None  # the hparams file, read once (set from ``hparams``)

    def __post_init__(self):
        if self.hparams and self.file is None:
            self.file = HparamsFile(self.hparams)

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
    """A corpus under one scenario, as its typed data settings (built once, never re-read)."""

    name: str
    data: DataSettings
    attacker_keys: dict = field(default_factory=dict)  # other keys for its attackers (phone_text)

    @property
    def data_folder(self) -> str:
        """The evaluation corpus (``eval_folder`` beside ``train_folders``, else ``data_folder``)."""
        return str(self.data.eval_folder if self.data.train_folders else self.data.data_folder)

    @property
    def train_folders(self) -> Optional[list]:
        return self.data.train_folders

    @property
    def data_keys(self) -> dict:
        """The split and anonymization keys that differ from the library's defaults (the record)."""
        keys = {**self.data.changed(), **self.attacker_keys}
        for key in ("data_folder", "train_folders", "eval_folder", "cache_folder"):
            keys.pop(key, None)
        return keys

    def data_overrides(self) -> dict:
        """The data keys set on an attacker recipe's hparams, which its record and its model's
        fingerprint read (the plan itself comes from :attr:`data`)."""
        keys = {**self.data.changed(), **self.attacker_keys, "scenario": self.data.scenario}
        keys.pop("cache_folder", None)
        if not self.data.train_folders:
            keys["data_folder"] = self.data.data_folder
        return keys

    @property
    def scenario(self) -> str:
        return self.data.scenario


@dataclass
class CellContext:
    """What every cell of one comparison shares."""

    settings: EvaluationSettings
    common: dict  # hparams keys set on every attacker recipe (cache, progress...)
    cache_folder: str
    trials_per_speaker: Optional[int] = None
    plots: bool = True
    prefix: str = "leakage"  # how log lines name the run (the anonymizer card: card)
    plans: Plans = field(default_factory=Plans)  # each corpus and scenario planned once per run
    timings: dict = field(default_factory=dict)  # seconds per cell (the card records them)


# --- cache keys ----------------------------------------------------------------------------------


def manifest_digest(manifest) -> str:
    """What a cell reads of its corpus: ids, speakers and words (new transcripts = a new cell), and
    the language where one is said (an English corpus keys as it always did)."""
    return lines_digest(
        f"{u.id}\t{u.speaker}\t{u.text}{'' if u.language is None else chr(9) + u.language}\n"
        for u in manifest
    )


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


def model_files_digest(attacker, ctx: CellContext) -> Optional[str]:
    """The bytes of every file the attacker's weights come from (its ``model_files()``)."""
    paths = list(optional(attacker, "model_files")())
    if not paths:
        return None
    try:
        return content_digest(paths, digests=file_digests(ctx))
    except FileNotFoundError as err:
        raise DataError(
            f"the {attacker.name} attacker reads its weights from a path that does not exist ({err})",
            hint="check the attacker's source, ssl_source or init_from",
        ) from None


def attacker_identity(attacker, plan: DataPlan, ctx: CellContext) -> list:
    """What of a built attacker its scores depend on besides its settings: its code, the bytes of
    its weights and what it trains on (a back-end fitted in the run has no model folder to key
    it), taken once per cell, before it runs."""
    trains = attacker.needs.training and plan.train is not None and len(plan.train)
    return [
        scores_code(attacker),
        model_files_digest(attacker, ctx),
        plan.train.content_digest(file_digests(ctx)) if trains else None,
    ]


def file_digests(ctx: CellContext) -> FileDigests:
    """File hashes remembered in the run's cache folder (a warm run: one stat per file)."""
    return cached_file_digests(ctx.cache_folder)


def cell_key(
    spec: AttackerSpec,
    corpus: CorpusSpec,
    evalset: EvaluationSet,
    condition: str,
    view: Manifest,
    ctx: CellContext,
    identity: Optional[list] = None,
) -> str:
    """What a cell's scores are made from: the attacker (its settings, the code that scores, the
    bytes of its weights, its newest checkpoint), the corpus (data keys, what they point at, the
    evaluation set's ids, words and audio bytes), the condition and the trials' thinning. The
    evaluation settings are not in it: a reused cell is evaluated again on every run.
    ``identity``: :func:`attacker_identity` of the built attacker."""
    save_folder = spec.overrides.get("save_folder") or (
        Path(spec.model_folder) / "save" if spec.model_folder else None
    )
    return digest(
        [
            "cell",
            spec.describe(),
            lines_digest([spec.file.text]) if spec.file else None,
            corpus.data_overrides(),
            inputs_digest(corpus.data_keys),
            manifest_digest(view),
            evalset.manifest.content_digest(file_digests(ctx)),
            digest(evalset.manifest.speaker_attributes()),
            condition,
            ctx.trials_per_speaker,
            ctx.settings.bootstrap.seed if ctx.trials_per_speaker else None,  # it thins the trials
            newest_checkpoint(save_folder),
            identity,
        ]
    )


def _kept_name(cell_dir: Path, key: str) -> str:
    return f"{cell_dir.name}-{key}"


def _finished(cell_dir: Path, key: str):
    """The finished cell made under ``key``: the one in the folder, or one kept aside when the
    folder last held another (:mod:`sparc_eval.cache`), moved back; the folder's other cell is kept
    aside under its own key."""
    cell = _read_cell(cell_dir)
    if cell is not None and cell.get("key") == key:
        return cell
    if cell is not None and cell.get("key"):
        set_aside(cell_dir, cell_dir.parent, _kept_name(cell_dir, cell["key"]))
    elif cell_dir.exists():
        shutil.rmtree(cell_dir)  # unfinished or unreadable: its scores are redone
    if restore(cell_dir.parent, _kept_name(cell_dir, key), cell_dir):
        return _read_cell(cell_dir)
    return None


def _read_cell(cell_dir: Path):
    try:
        return json.loads((cell_dir / "cell.json").read_text())
    except (OSError, json.JSONDecodeError):
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


def _attacker_data(spec: AttackerSpec, corpus: CorpusSpec) -> DataSettings:
    """The corpus's data settings, with the data keys the attacker's own overrides set (a
    learning curve's ``train_speaker_fraction``)."""
    keys = {k: v for k, v in spec.overrides.items() if k in DataSettings.keys()}
    return replace(corpus.data, **keys) if keys else corpus.data


def _plan(
    spec: AttackerSpec,
    corpus: CorpusSpec,
    evalset: EvaluationSet,
    view: Manifest,
    ctx: CellContext,
    cell_dir: Path,
) -> tuple:
    """(attacker, data plan, data settings) of a cell."""
    if spec.file is not None:
        common = {k: v for k, v in ctx.common.items() if k in spec.file.keys}  # where it has them
        overrides = {
            **spec.overrides,
            **corpus.data_overrides(),
            **common,
            "output_folder": spec.model_folder,
            "results_folder": str(cell_dir),
        }
        data = _attacker_data(spec, corpus)
        _, plan, attacker = load_attack(spec.file, overrides, data=data, plans=ctx.plans)
        return attacker, plan, data
    attacker = spec.attacker
    if attacker.needs.split:  # it scores a split of the corpus, as the attacker recipe makes it
        return attacker, ctx.plans.get(corpus.data), corpus.data
    empty = Manifest([], name="no training data")
    return attacker, DataPlan(empty, view, view, None, evalset.manifest, corpus.scenario), None


def _thin(plan: DataPlan, evalset: EvaluationSet, condition: str, ctx: CellContext) -> DataPlan:
    """The plan with its split limited to the evaluation set's speakers (without shared text under
    ``no_shared``), the same speakers and utterances for every attacker; the shared plan is kept."""
    missing = evalset.speakers - set(plan.eval_original.speakers())
    if missing:
        raise DataError(
            f"the attacker's evaluation speakers differ from the corpus's ({sorted(missing)[:3]} "
            f"are missing)",
            hint="give every attacker the same split keys (split_seed, eval_speaker_fraction)",
        )
    drop = evalset.left_out_ids | (evalset.shared_ids if condition == "no_shared" else frozenset())
    split = restrict_split(
        plan.split,
        plan.eval_original.utt2spk(),
        speakers=evalset.speakers,
        drop_ids=drop,
        trials_per_speaker=ctx.trials_per_speaker,
        seed=ctx.settings.bootstrap.seed,
    )
    return replace(plan, split=split)


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
    """One cell: its scores made, or reused when nothing they are made from changed (the attacker
    is built either way: its code and weights are in the key), then evaluated."""
    view = _view(evalset, condition, text_manifest if spec.attacker is not None else None)
    where = f"{evalset.name} / {spec.name} / {condition}"
    attacker, plan, data = _plan(spec, corpus, evalset, view, ctx, cell_dir)
    why = attack_not_applicable(attacker, plan)
    if why:
        return not_applicable(spec, evalset.name, condition, why)
    if plan.split is not None:
        plan = _thin(plan, evalset, condition, ctx)
    speakers = evalset.manifest.speaker_attributes() if plan.split is None else None
    identity = attacker_identity(attacker, plan, ctx)
    done = _finished(cell_dir, cell_key(spec, corpus, evalset, condition, view, ctx, identity))
    if done:
        logger.info("[%s] %s: reused the scores in %s", ctx.prefix, where, cell_dir)
        return evaluated_again(
            done, cell_dir, attacker, plan, ctx.settings, plots=ctx.plots, speakers=speakers
        )
    model = f" ({spec.model_folder})" if spec.model_folder else ""
    logger.info("[%s] %s: running %s%s", ctx.prefix, where, attacker.name, model)
    cell_dir.mkdir(parents=True, exist_ok=True)
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
        speakers=speakers,
    )
    _write_speaker_maps(cell_dir, result.trials)
    base = _cell_base(spec, attacker, evalset.name, condition, plan, view, result.run_info)
    if result.evaluation["overall"]["eer"] is None:
        cell = {
            **base,
            "status": "not_applicable",
            "reason": "the trials have one class only: no EER",
        }
    else:
        cell = {**base, "status": "ok", **cell_summary(result.evaluation, result.trials)}
    # after training: its newest checkpoint
    cell["key"] = cell_key(spec, corpus, evalset, condition, view, ctx, identity)
    cell["scores_code"] = identity[0]  # the code its scores came from
    cell["plots_made_with"] = plots_key(ctx.settings) if ctx.plots else None
    write_json(cell_dir / "cell.json", cell)
    return cell


def _write_speaker_maps(cell_dir: Path, trials: Trials) -> None:
    """utt2spk and enroll2spk beside the scores: a reused cell's comparisons read them (the
    enrolled speakers for two-way CIs)."""
    for name, mapping in (("utt2spk", trials.utt2spk()), ("enroll2spk", trials.enroll_map())):
        with atomic_open(cell_dir / name, "w", encoding="utf-8") as handle:
            handle.writelines(f"{k} {v}\n" for k, v in sorted(mapping.items()))


def _cell_base(spec, attacker, corpus: str, condition: str, plan, view, run_info: dict) -> dict:
    """What cell.json says of a cell whatever its outcome: who, on what, how many utterances."""
    base = {
        "attacker": spec.name,
        "kind": spec.kind,
        "corpus": corpus,
        "condition": condition,
        "results": "results.json",
        "trials": {"scores": "scores.txt", "utt2spk": "utt2spk", "enroll2spk": "enroll2spk"},
        "n_utterances": len(view)
        if plan.split is None
        else len(plan.split.trial_ids) + sum(len(v) for v in plan.split.enroll.values()),
        **attacker.describe(),
        "needs": asdict(attacker.needs),
        "deviations": run_info["deviations"],
        **{k: run_info[k] for k in ("scenario_label", "attacker_notes") if k in run_info},
    }
    if spec.model_folder:
        base["model_folder"] = spec.model_folder
    return base
