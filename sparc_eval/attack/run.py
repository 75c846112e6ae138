"""Running an attacker end to end: its hparams loaded, the data planned, fit, score, evaluate
(the contract it follows: :mod:`sparc_eval.attack.contract`)."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..data.plan import DataPlan, DataSettings, Plans, plan_data
from ..errors import DataError
from .contract import (  # noqa: F401 (Needs: the old import path)
    Needs,
    check_attacker,
    optional,
    provides,
)
from .evaluation import EvaluationSettings, evaluate
from .trials import Trials

EVALUATION_KEYS = EvaluationSettings.keys() | {"output_folder", "results_folder"}
LIBRARY_KEYS = (
    DataSettings.keys() | EVALUATION_KEYS
)  # an attacker's hparams file may leave these out


# --- attackers from hparams ----------------------------------------------------------------------


def _factory(obj):
    """The class behind ``!name:`` (a class or a functools.partial of one), else None."""
    if isinstance(obj, type):
        return obj
    if isinstance(obj, functools.partial) and isinstance(obj.func, type):
        return obj.func
    return None


def build_attacker(hp: dict, run_opts: Optional[dict] = None):
    """The hparams' ``attacker``: an object as it is, a ``!name:`` class called with the hparams."""
    obj = hp.get("attacker")
    if obj is None:
        raise DataError(
            "the hparams name no attacker",
            path=hp.get("hparams_file"),
            hint="add attacker: !new:package.module.Class (see sparc_eval/attack/)",
        )
    if _factory(obj) is not None:
        obj = obj(hp, run_opts=run_opts)
    return check_attacker(obj)


def prepare_attack(attacker, plan: DataPlan) -> None:
    """The attacker's cacheable preparation (features), when it applies to the data."""
    if not_applicable(attacker, plan) is None:
        optional(attacker, "prepare")(plan)


def load_attack(
    hparams_file,
    overrides: Optional[dict] = None,
    run_opts: Optional[dict] = None,
    *,
    data: Optional[DataSettings] = None,
    plans: Optional[Plans] = None,
) -> tuple:
    """(hparams, data plan, attacker) of an attacker recipe's hparams file (a path, or an
    :class:`~sparc_eval.hparams.HparamsFile` already read): the hparams loaded, the data planned
    (from ``data`` when the caller has its settings, else from the hparams' data keys; by
    ``plans`` when the run shares its plans), and loaded again with the keys the attacker derives
    from the data (``derived_hparams``), so that its model is sized for it."""
    from ..hparams import HparamsFile
    from ..speechbrain_compat import ensure_torchaudio

    ensure_torchaudio()  # hparams may name SpeechBrain classes, which import torchaudio
    file = hparams_file if isinstance(hparams_file, HparamsFile) else HparamsFile(hparams_file)
    overrides = dict(overrides or {})

    def load(extra):
        hp = file.load({**overrides, **extra}, library_keys=LIBRARY_KEYS)
        hp["overrides"] = overrides  # what the user set; derived keys are recorded by the attacker
        return hp

    hp = load({})
    data = data if data is not None else DataSettings.from_hparams(hp)
    plan = plans.get(data) if plans is not None else plan_data(data)
    factory = _factory(hp.get("attacker"))
    derived = optional(factory, "derived_hparams")(hp, plan) if factory is not None else {}
    if derived:
        hp = load(derived)
    return hp, plan, build_attacker(hp, run_opts)


# --- running an attacker -------------------------------------------------------------------------


def not_applicable(attacker, plan: DataPlan) -> Optional[str]:
    """Why ``attacker`` cannot run on ``plan`` (None when it can), decided before any work."""
    why = optional(attacker, "refusal")(plan) or _language_refusal(attacker, plan)
    if why:
        return why
    if not attacker.needs.audio:
        return None
    roles = ([("training", plan.train)] if attacker.needs.training else []) + [
        ("enrollment", plan.enroll),
        ("trial", plan.trials),
    ]
    for role, manifest in roles:
        if not manifest.has_audio:
            return f"{attacker.name} features need audio, but the {role} corpus ({manifest.name}) is text-only"
    return None


def _language_refusal(attacker, plan: DataPlan) -> Optional[str]:
    """Why ``attacker`` cannot read the language the plan's corpus is spoken in (None: it can)."""
    from ..data.languages import refusal

    language = plan.eval_original.language
    return refusal(f"the {attacker.name} attacker", language, optional(attacker, "languages"))


@dataclass
class AttackResult:
    trials: Trials
    evaluation: object  # sparc_eval.metrics.Evaluation
    timings_s: dict
    results_path: Optional[Path] = None
    run_info: Optional[dict] = None  # results.json's run, as written


def attack(
    attacker, plan: DataPlan, settings: EvaluationSettings, speakers: Optional[dict] = None
) -> AttackResult:
    """Fit, score and evaluate once (nothing written)."""
    why = not_applicable(attacker, plan)
    if why:
        hint = (
            "use an attacker that reads text (e.g. phones from transcripts) for text-only corpora"
            if "need audio" in why
            else ""
        )
        raise DataError(why, hint=hint)
    timings = {}
    start = time.perf_counter()
    if attacker.needs.training:
        attacker.fit(plan.train)
    timings["training"] = time.perf_counter() - start
    start = time.perf_counter()
    trials = attacker.score(plan)
    timings["scoring"] = time.perf_counter() - start
    start = time.perf_counter()
    evaluation = evaluate_attack(attacker, trials, plan, settings, speakers)
    timings["metrics"] = time.perf_counter() - start
    start = time.perf_counter()
    evaluation["singling_out"] = singling_out(attacker, plan)
    timings["singling_out"] = time.perf_counter() - start
    timings.update(optional(attacker, "timings_s") or {})  # an attacker's finer stages, if any
    return AttackResult(trials, evaluation, timings)


def evaluate_attack(
    attacker, trials: Trials, plan: DataPlan, settings: EvaluationSettings, speakers=None
):
    """The evaluation of an attacker's scored trials on its plan: metrics, CIs and segments, the
    split's dropped speakers and utterances, and VoicePrivacy list rows (singling out apart: it
    reads the embeddings). A reused cell's scores are evaluated again this way on every run."""
    table = plan.eval_original.speaker_attributes() if speakers is None else speakers
    # an attacker whose scores are calibrated LLRs (a PLDA back-end) says so: the actual Cllr is then its own
    llr = bool(optional(attacker, "scores_are_llrs"))
    evaluation = evaluate(trials, table, settings, llr=llr)
    if plan.split is not None:
        for what, why in plan.split.dropped.items():
            key = what if what.startswith("utterance ") else f"speaker {what}"
            evaluation["not_applicable"][key] = why
    if plan.lists is not None:  # VoicePrivacy lists: one row per list, beside the pooled metrics
        from .subsets import list_rows

        evaluation["lists"] = list_rows(
            trials, plan.lists, settings, attacker_label(attacker), llr=llr
        )
    return evaluation


def attacker_label(attacker) -> str:
    """How the per-list table names the attacker: its name, and the model folder it loads when it
    has one (the challenge's ASV_eval only when that folder is the user's own ASV_eval)."""
    source = attacker.describe().get("source")
    return f"{attacker.name} ({source})" if source else attacker.name


def singling_out(attacker, plan: DataPlan) -> dict:
    """Singling out (Vauquier et al. 2025) of the attacker's embeddings of the plan's enrollment
    and trial utterances; ``not_applicable`` with the reason when it gives none."""
    from ..metrics.singling_out import singling_out_block

    no_embeddings = {
        "not_applicable": f"the {attacker.name} attacker gives no embeddings (embeddings(plan))"
    }
    if not provides(attacker, "embeddings"):
        return no_embeddings
    if plan.split is None:
        return {
            "not_applicable": "the attacker makes trials of its own protocol (no enrollment split)"
        }
    embeddings = attacker.embeddings(plan)
    if embeddings is None:
        return no_embeddings
    utt2spk = plan.eval_original.utt2spk()
    return singling_out_block(embeddings, utt2spk, enroll=plan.split.enroll)


def run_description(attacker, plan: DataPlan, data: Optional[DataSettings] = None) -> dict:
    """results.json's ``run`` parts that the attacker and its data plan determine."""
    anonymizer = None
    if data is not None and plan.scenario != "original":
        # a VoicePrivacy data folder's copies are named by their suffix
        given = plan.lists.suffix if plan.lists is not None else None
        anonymizer = data.anonymizer_name or given or str(data.anon_eval_folder)
    split = plan.split
    language = plan.eval_original.language
    return {
        **({"vpc": plan.lists.record()} if plan.lists is not None else {}),
        **({"language": language} if language != "en" else {}),  # English: unsaid, as in manifests
        "dataset": plan.eval_original.name,
        "anonymizer": anonymizer,
        "scenario": plan.scenario,
        "split": None if split is None else split.source,
        "n_enroll_speakers": None if split is None else len(split.enroll),
        "n_trial_utterances": None if split is None else len(split.trial_ids),
        "attacker": attacker.name,
        **attacker.describe(),
    }


def attacker_record(attacker, plan: DataPlan) -> dict:
    """results.json's ``run`` keys from the contract's optional members, when the attacker has
    them: ``scenario_label`` (how it serves the scenario) and ``attacker_notes`` (its notes)."""
    record = {}
    if provides(attacker, "scenario_label"):  # recorded as given, null included (the contract)
        record["scenario_label"] = attacker.scenario_label(plan)
    notes = optional(attacker, "notes")
    if notes:
        record["attacker_notes"] = dict(notes)
    return record


def run_attack(
    attacker,
    plan: DataPlan,
    out,
    *,
    settings: EvaluationSettings,
    run_info: Optional[dict] = None,
    data: Optional[DataSettings] = None,
    plots: bool = True,
    speakers: Optional[dict] = None,
    is_main: bool = True,
) -> AttackResult:
    """Fit, score, evaluate, and write ``out``/scores.txt, results.json, report.md and plots.
    Under DDP every rank trains; only the main rank (``is_main``) scores and writes."""
    from ..metrics import write_report
    from ..provenance import bootstrap_deviation, environment, merge_deviations

    if not is_main:
        if attacker.needs.training:
            attacker.fit(plan.train)
        return AttackResult(Trials([], [], [], []), None, {})
    out = Path(out)
    result = attack(attacker, plan, settings, speakers)
    result.trials.write(out / "scores.txt")
    info = {**run_description(attacker, plan, data), **settings.record(), **(run_info or {})}
    info["timings_s"] = {
        **{k: round(v, 3) for k, v in result.timings_s.items()},
        **info.get("timings_s", {}),
    }
    info.update(attacker_record(attacker, plan))
    info["deviations"] = merge_deviations(
        attacker.deviations(plan),
        bootstrap_deviation(settings.bootstrap.unit),
        plan.lists.deviations if plan.lists is not None else {},
        info.get("deviations") or {},
    )
    info["environment"] = environment()
    write_report(out, result.evaluation, info, plots=plots)
    result.results_path, result.run_info = out / "results.json", info
    return result
