"""Evaluate anonymizers in one command: the engine behind ``recipes/evaluate_anonymizer.py``.

    original corpus ──plan_data──> split (enrollment, trials) ──anonymize_needed──> anonymized/<anonymizer>/
         │                                                                               │
    attackers ──> cells: original speech (attacker strength, the content bound) and
                  anonymizer x attacker x scenario (ignorant, lazy-informed, semi-informed)
                         │
                         ├─> content rows, voice leakage beyond content (paired), headline, strength
                         ├─> utility: WER, rho_F0, G_VD (plug-ins)
                         ├─> anonymizers compared pairwise (EER and utility differences, paired CIs)
                         └─> results.json, card.md, figures

Every attacker runs through the leakage comparison's cells (:mod:`sparc_eval.attack.cells`), one
:func:`sparc_eval.attack.run_attack` per cell, reused on a re-run when nothing it reads changed.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import fields, replace
from pathlib import Path

from ...atomic import write_json
from ...attack.cells import AttackerSpec, CorpusSpec, not_applicable, run_cell
from ...attack.evaluation_set import EvaluationSet
from ...data.plan import DataSettings, load_anonymized, plan_data
from ...data.words import spoken_manifest
from ...errors import DataError
from ...provenance import bootstrap_deviation, environment, versions
from ...utility.metrics import UtilityInput
from .anonymized import REUSES_ENROLLMENT, AnonymizedCorpora, anonymize_needed, needed_utterances
from .learning import learning_cells
from .settings import CardSettings, attacker_settings

ORIGINAL = "original"
CONDITION = "all"  # the card evaluates every utterance (no shared-text condition)
TEXT_SCENARIOS = (
    "original",
    "lazy-informed",
)  # a text attacker reads one corpus's words for both sides


def _base_data_keys(data: DataSettings) -> dict:
    """The user's data keys that differ from the library's defaults (scenario and cache aside)."""
    default = DataSettings()
    return {
        f.name: getattr(data, f.name)
        for f in fields(DataSettings)
        if f.name not in ("scenario", "cache_folder", "data_folder")
        and getattr(data, f.name) != getattr(default, f.name)
    }


def corpus_spec(s: CardSettings, anonymized: AnonymizedCorpora | None, scenario: str) -> CorpusSpec:
    keys = {**_base_data_keys(s.data), "scenario": scenario}
    if anonymized is not None:
        keys.update(anon_eval_folder=str(anonymized.eval_folder), anonymizer_name=anonymized.name)
        if anonymized.enroll_folder is not None and scenario in REUSES_ENROLLMENT:
            keys["anon_enroll_folder"] = str(anonymized.enroll_folder)
        if scenario == "semi-informed":
            keys["anon_train_folders"] = [str(anonymized.train_folder)]
    name = ORIGINAL if anonymized is None else anonymized.name
    return CorpusSpec(name, str(s.data.data_folder), None, keys)


def model_folder(
    s: CardSettings, attacker: AttackerSpec, anonymized, scenario: str, variant: str | None = None
) -> str:
    """One model per attacker and training data, keyed by that speech's content: trained on
    original speech (``original_<content>``) for every scenario but semi-informed, whose attacker
    is trained on each anonymizer's speech (other anonymizer settings, another model; ``variant``:
    a learning-curve share of the training speakers)."""
    suffix = f"_{variant}" if variant else ""
    semi = (
        f"semi_informed_{anonymized.name}_{anonymized.train_content[:12]}"
        if scenario == "semi-informed"
        else None
    )
    if attacker.model_folder:
        return str(attacker.model_folder) + (f"_{semi}" if semi else "") + suffix
    original = f"{ORIGINAL}_{s.original_content[:12]}" if s.original_content else ORIGINAL
    return str(s.output_folder / "models" / attacker.name / f"{semi or original}{suffix}")


def evaluated_speech(evalset: EvaluationSet, anonymized: dict) -> dict:
    """{anonymizer: its anonymized speech on the evaluated ids}, read once for cells and utility."""
    keep = set(evalset.manifest.by_id())
    return {
        name: load_anonymized(str(a.eval_folder), DataSettings(anonymizer_name=name)).subset(
            lambda u: u.id in keep
        )
        for name, a in anonymized.items()
    }


def _cell(
    s: CardSettings,
    spec: AttackerSpec,
    anonymized,
    scenario: str,
    evalset,
    ctx,
    text_manifest=None,
    variant: str | None = None,
) -> dict:
    where = ORIGINAL if anonymized is None else anonymized.name
    if (
        spec.attacker is not None
        and not spec.attacker.needs.split
        and scenario not in TEXT_SCENARIOS
    ):
        return not_applicable(
            spec,
            where,
            scenario,
            (
                f"{spec.name} makes its own trials from one corpus's words, so it reads the anonymized words for "
                "enrollment and trials alike: see its lazy-informed row"
            ),
        )
    if spec.hparams:
        spec = replace(spec, model_folder=model_folder(s, spec, anonymized, scenario, variant))
    cell_dir = (
        s.output_folder
        / "cells"
        / where
        / spec.name
        / (f"{scenario}@{variant}" if variant else scenario)
    )
    ctx.log(
        f"[card] {where} speech / {spec.name} / {scenario}" + (f" / {variant}" if variant else "")
    )
    try:
        cell = run_cell(
            spec,
            corpus_spec(s, anonymized, scenario),
            evalset,
            CONDITION,
            cell_dir,
            ctx,
            text_manifest=text_manifest,
        )
    except DataError as err:  # this cell cannot run; the others can
        ctx.log(f"[card] {where} / {spec.name} / {scenario}: FAILED: {err}")
        return not_applicable(spec, where, scenario, str(err), status="failed")
    cell["folder"] = str(cell_dir.relative_to(s.output_folder))
    cell["scenario"] = scenario
    return cell


def run_cells(
    s: CardSettings, evalset: EvaluationSet, anonymized: dict, speech: dict, log
) -> OrderedDict:
    """cells[original | anonymizer][attacker][scenario]; text attackers read what each anonymizer's
    speech says (its own transcript or the kept words)."""
    ctx = s.cell_context(log)
    cells = OrderedDict()
    cells[ORIGINAL] = OrderedDict(
        (a.name, {ORIGINAL: _cell(s, a, None, ORIGINAL, evalset, ctx)}) for a in s.attackers
    )
    for name, corpora in anonymized.items():
        words = spoken_manifest(speech[name])
        cells[name] = OrderedDict(
            (
                a.name,
                OrderedDict(
                    (sc, _cell(s, a, corpora, sc, evalset, ctx, text_manifest=words))
                    for sc in s.scenarios
                ),
            )
            for a in s.attackers
        )
    return cells


def run_utility(s: CardSettings, evalset: EvaluationSet, speech: dict, log) -> tuple:
    """({anonymizer: {metric: result}}, {anonymizer: UtilityInput}); a metric that fails on one
    anonymizer is reported as failed there, the rest runs."""
    results, inputs = OrderedDict(), OrderedDict()
    for name, anon in speech.items():
        pair = UtilityInput(
            name,
            evalset.manifest,
            anon,
            cache_folder=s.cache_folder,
            n_boot=s.evaluation.bootstrap.n_boot,
            seed=s.seed,
            progress=s.progress,
        )
        inputs[name], results[name] = pair, OrderedDict()
        for metric_name, metric in s.utility.items():
            start = time.perf_counter()
            log(f"[card] {name}: utility {metric_name}")
            try:
                found = metric.compute(pair)
            except DataError as err:
                found = {"failed": str(err)}
            found["seconds"] = round(time.perf_counter() - start, 3)
            results[name][metric_name] = found
    return results, inputs


def evaluation_set(plan, anonymized: dict) -> EvaluationSet:
    """The evaluated utterances: the split's, less every utterance any anonymizer failed on."""
    failed = frozenset(u for a in anonymized.values() for u in a.failures)
    needed = needed_utterances(plan)
    return EvaluationSet(
        "card",
        needed.subset(lambda u: u.id not in failed),
        left_out_ids=failed,
        n_speakers_before_balance=len(needed.speakers()),
    )


def evaluate_anonymizers(s: CardSettings, *, hparams_file=None, overrides=None, log=print) -> Path:
    """Anonymize, attack, measure utility, compare, and write results.json, card.md and figures;
    returns the path of results.json."""
    from ...metrics.results import json_safe
    from .report import write_card
    from .verdicts import card_verdicts

    timings, start = OrderedDict(), time.perf_counter()
    if s.num_threads:
        import torch

        torch.set_num_threads(int(s.num_threads))
    plan = plan_data(s.data)
    s = replace(
        s, original_content=plan.train.content_digest()
    )  # the original speech's models are keyed by it
    anonymized = anonymize_needed(s, plan, log=log)
    timings["anonymization"] = time.perf_counter() - start
    evalset = evaluation_set(plan, anonymized)
    stage = time.perf_counter()
    speech = evaluated_speech(evalset, anonymized)
    cells = run_cells(s, evalset, anonymized, speech, log)
    extra = (
        learning_cells(s, cells, evalset, anonymized, s.cell_context(log), _cell)
        if s.learning_curve
        else {}
    )
    timings["attacks"] = time.perf_counter() - stage
    stage = time.perf_counter()
    utility, inputs = run_utility(s, evalset, speech, log)
    timings["utility"] = time.perf_counter() - stage
    stage = time.perf_counter()
    verdicts = card_verdicts(
        s,
        cells,
        utility,
        inputs,
        learning=extra,
        speakers=evalset.manifest.speaker_attributes(warn=False),
    )
    timings["comparisons"] = time.perf_counter() - stage
    timings["total"] = time.perf_counter() - start
    doc = OrderedDict(
        run=_run_record(
            s, plan, evalset, cells, utility, timings, hparams_file, overrides, anonymized
        ),
        overall=None,
        anonymizers=_anonymizer_records(s, anonymized),
        cells=cells,
        utility=_strip(utility),
        **verdicts,
    )
    doc = json_safe(doc)
    write_json(s.output_folder / "results.json", doc)
    write_card(s.output_folder, doc, s)
    return s.output_folder / "results.json"


def _strip(utility: dict) -> dict:
    """results.json keeps each metric's summary; per-utterance values stay in the run's memory."""
    return {
        a: {m: {k: v for k, v in r.items() if k != "per_utterance"} for m, r in by.items()}
        for a, by in utility.items()
    }


def _anonymizer_records(s: CardSettings, anonymized: dict) -> dict:
    given = {
        a.name: a.anonymizer
        if isinstance(a.anonymizer, str)
        else type(a.anonymizer).__module__ + "." + type(a.anonymizer).__qualname__
        for a in s.anonymizers
    }
    return {
        name: {
            "source": given.get(name),
            "eval_folder": str(a.eval_folder),
            "train_folder": str(a.train_folder) if a.train_folder else None,
            "attacker_enroll_folder": str(a.enroll_folder) if a.enroll_folder else None,
            "draws": a.draws,
            "train_content": a.train_content,
            "failures": a.failures,
            "train_failures": a.train_failures,
            "anonymization": a.reports,
        }
        for name, a in anonymized.items()
    }


def _draw_deviations(anonymized: dict) -> dict:
    """How the attacker's speech departs from VoicePrivacy 2024's (utterance-level draws, the
    attacker's own)."""
    found = {}
    for name, a in anonymized.items():
        mode, attacker = a.draws.get("mode"), a.draws.get("attacker", "")
        if mode == "speaker":
            found[f"draws ({name}): speaker"] = (
                "one random draw per speaker; VoicePrivacy 2024 anonymizes every "
                "utterance independently (draws: utterance)"
            )
        if attacker.startswith("the user's draws"):
            found[f"attacker draws ({name}): user"] = (
                f"the attacker's enrollment and training speech use {attacker}: "
                "it knows the user's secret choices, which VoicePrivacy's "
                "attacker does not"
            )
    return found


def _card_deviations(s: CardSettings, plan) -> dict:
    """What the card itself departs from (issue 25): the attack it leaves out first, then the
    split, training data, phones, model sizes, probe design and bootstrap unit."""
    found = {}
    if "semi-informed" not in s.scenarios:
        found["scenarios: no semi-informed"] = (
            "no semi-informed attacker (trained on anonymized speech: the content-leakage paper's and VoicePrivacy "
            "2024's ranking scenario) was run; a stronger attacker than any here is left out, so privacy may be "
            "overstated. --scenarios=[ignorant,lazy-informed,semi-informed] with a trained audio attacker "
            "(--attackers_enabled=[...,mel]) adds it"
        )
    if plan.split.source != "vpc lists":
        found["split: seeded, pooled sexes"] = (
            f"enrollment and trials from {plan.split.source or 'a seeded split'}, not VoicePrivacy's lists; the trials "
            "pool both sexes and cross-sex pairs (VoicePrivacy scores same-sex lists): the verdicts read the pooled "
            "EER, the same-sex EERs are on the card"
        )
    settings = {a.name: attacker_settings(a) for a in s.attackers if a.hparams}
    trained = [
        a for a in s.attackers if settings.get(a.name, {}).get("number_of_epochs") is not None
    ]
    if trained:
        found["training speakers"] = (
            f"trained attackers learn from {len(plan.train.speakers())} speakers "
            "(VoicePrivacy's ASV_eval: 921, LibriSpeech train-clean-360)"
        )
    for a in trained:
        hp = settings[a.name]
        found[f"{a.name}: epochs"] = (
            f"{hp['number_of_epochs']} epochs, embedding size {hp.get('emb_dim')}, "
            f"model_size {hp.get('model_size')} ({a.hparams})"
        )
        if (
            hp.get("feature_type") in ("phones", "phone_durations")
            and (hp.get("phone_source") or "transcript") == "transcript"
        ):
            found[f"{a.name}: G2P"] = (
                "phones from the G2P of the words the speech says (a perfect phone recognizer), "
                "not a phone recognizer on the audio (the content-leakage paper's)"
            )
    for a in s.attackers:
        described = a.describe()
        if described.get("P") is not None:
            found[f"{a.name}: P {described['P']}, L {described['L']}"] = (
                f"probes of {described['P']} words against {described['L']} enrollment utterances (SPARC's main "
                "setting: 200 words, L 20; its ablation: 50 words, L 5)"
            )
    unit = s.evaluation.bootstrap.unit
    found["bootstrap unit"] = (
        f"95% CIs and paired tests resample {'test speakers' if unit == 'speaker' else 'trials'}"
        f" ({s.evaluation.bootstrap.n_boot} resamples); the content-leakage paper reports "
        "no CI, SPARC bootstraps its trials"
    )
    return found


def _deviations(s: CardSettings, cells: dict, utility: dict, anonymized: dict, plan) -> dict:
    found = {
        **bootstrap_deviation(s.evaluation.bootstrap.unit),
        **_draw_deviations(anonymized),
        **_card_deviations(s, plan),
    }
    for by_attacker in cells.values():
        for attacker, by_scenario in by_attacker.items():
            for cell in by_scenario.values():
                found.update(
                    {f"{attacker}: {n}": why for n, why in (cell.get("deviations") or {}).items()}
                )
    for anonymizer, by_metric in utility.items():
        rho = by_metric.get("rho_f0") or {}
        if rho.get("estimator"):
            found[f"rho_f0 ({anonymizer}): pyin"] = (
                f"F0 from librosa's pYIN (the challenge used YAAPT): {rho['estimator']}; "
                f"a seeded sample of {rho['sampled']} of {rho['sampled_from']} utterance pairs, "
                f"{rho['utterances']} with enough frames voiced in both"
            )
        wer = by_metric.get("wer") or {}
        if wer.get("value") is not None:
            asr = wer.get("asr") or {}
            said = (
                " ".join(str(asr[k]) for k in ("backend", "model") if asr.get(k))
                if isinstance(asr, dict)
                else asr
            )
            found["wer: asr"] = (
                f"WER of the anonymized speech re-transcribed by {said or 'the card ASR'}, not VoicePrivacy "
                "2024's ASR_eval (wav2vec2 fine-tuned on LibriSpeech-960): values are not "
                "comparable with the challenge's"
            )
        if "gvd" in by_metric and by_metric["gvd"].get("score"):
            found["gvd: cosine"] = (
                "similarity matrices from the pretrained encoder's cosine scores, not ASV_eval's "
                "PLDA log-likelihood ratios: G_VD values are not comparable with the challenge's"
            )
    return found


def _run_record(
    s, plan, evalset, cells, utility, timings, hparams_file, overrides, anonymized
) -> dict:
    return {
        "kind": "anonymizer_card",
        "dataset": plan.eval_original.name,
        "anonymizers": [a.name for a in s.anonymizers],
        "attackers": {a.name: a.describe() for a in s.attackers},
        "scenarios": [ORIGINAL, *s.scenarios],
        "content_attacker": s.content_attacker,
        "utility": list(s.utility),
        "hparams": str(hparams_file) if hparams_file else None,
        "overrides": overrides or None,
        "seed": s.seed,
        **s.evaluation.record(),
        "split": plan.split.source,
        "n_enroll_speakers": len(plan.split.enroll),
        "n_evaluated_utterances": len(evalset.manifest),
        "n_left_out": len(evalset.left_out_ids),
        "weak_attacker_eer": s.weak_attacker_eer,
        "max_ci_width": s.max_ci_width,
        "pseudonymise": s.pseudonymise,
        "attacker_draws": s.attacker_draws,
        "attacker_seed": s.attacker_seed,
        "timings_s": {k: round(v, 3) for k, v in timings.items()},
        "deviations": _deviations(s, cells, utility, anonymized, plan),
        "environment": environment(),
        **versions(),
    }
