"""Compare content leakage across corpora: the engine behind ``recipes/compare_leakage.py``.

    corpora ──> evaluation sets (held-out speakers, balanced, shared text marked)
       │             │
       │             ├─> vocabulary statistics, phone-frequency distinctiveness
       │             │
    attackers ──> cells: attacker x corpus x condition (all text / shared text removed)
                     │      EER [CI], per-speaker EERs, intra/inter segment EERs
                     │
                     ├─> correlations: per-speaker EER vs distinctiveness (and unique words)
                     ├─> comparisons: corpora and attackers, bootstrap CIs of the EER difference
                     └─> results.json, report.md, figures

One cell failing (a text-only corpus given a mel attacker, too few speakers) is reported as
not applicable with its reason; the others run.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from itertools import combinations
from pathlib import Path

import numpy as np

from ...atomic import write_json
from ...attack.cell_results import cell_trials
from ...attack.cells import (
    AttackerSpec,
    CellContext,
    CorpusSpec,
    not_applicable,
    run_cell,
)
from ...attack.compare import ci_verdict, compare_cells, verdict
from ...attack.evaluation_set import (
    SHARED_TEXT_CONDITIONS,
    EvaluationSet,
    balanced_count,
    choose_speakers,
)
from ...data.attributes import accent_groups
from ...data.corpora.specs import load_spec, load_specs
from ...data.words import mark_anonymized, reference_text_deviation, spoken_manifest
from ...digest import text_digest
from ...errors import DataError
from ...metrics.small import small_reason
from ...provenance import bootstrap_deviation, environment, versions
from .settings import LeakageSettings
from .vocabulary import vocabulary_stats

logger = logging.getLogger(__name__)


def model_folder(settings: LeakageSettings, attacker: AttackerSpec, corpus: CorpusSpec) -> str:
    """Where an hparams attacker's model lives: one per attacker and training data, so corpora
    evaluated by an attacker trained elsewhere share it (trained once, resumed after). A model
    trained on anonymized speech is keyed by that speech's content: re-anonymized training speech
    trains a model of its own."""
    if attacker.model_folder:
        return str(attacker.model_folder)
    trained_on = list(corpus.train_folders or [])
    if corpus.scenario == "semi-informed":  # trained on anonymized speech
        anon = corpus.data_keys.get("anon_train_folders") or []
        anon = [anon] if isinstance(anon, str) else list(anon)
        trained_on += [
            "anonymized:",
            *anon,
            load_specs(anon, cache_folder=settings.cache_folder).content_digest(),
        ]
    if corpus.train_folders:
        where = "trained_" + text_digest("\n".join(map(str, trained_on)), 8)
    else:
        where = f"held_out_{corpus.name}" + (
            "_semi_informed_" + text_digest(trained_on[-1], 8) if trained_on else ""
        )
    models = (
        "models" if settings.grid == "full" else f"models_{settings.grid}"
    )  # a quick model never resumes into a full one
    return str(settings.output_folder / models / attacker.name / where)


# --- evaluation sets -----------------------------------------------------------------------------


def load_evaluation_corpus(settings: LeakageSettings, corpus: CorpusSpec):
    """The corpus's evaluation speakers, as the attacker recipe holds them out."""
    return corpus.data.evaluation_corpus()


def scripted_agreement(manifest, removed: set):
    """How the shared-text detector agrees with a corpus's own ``scripted`` flags, when it has them."""
    flagged = {u.id for u in manifest if u.extra.get("scripted") is True}
    if not any("scripted" in u.extra for u in manifest):
        return None
    hit = len(flagged & removed)
    return {
        "n_scripted": len(flagged),
        "n_detected": len(removed),
        "n_both": hit,
        "recall": hit / len(flagged) if flagged else None,
        "precision": hit / len(removed) if removed else None,
    }


def build_evaluation_sets(settings: LeakageSettings) -> dict:
    from ...text_trials.shared_text import detect_shared_text

    loaded = {c.name: load_evaluation_corpus(settings, c) for c in settings.corpora}
    sizes = {name: len(m.speakers()) for name, m in loaded.items()}
    n_speakers = balanced_count(settings.balance_speakers, sizes, "balance_speakers")
    sets = OrderedDict()
    for c in settings.corpora:
        m = loaded[c.name]
        keep = set(choose_speakers(m.speakers(), n_speakers, settings.seed))
        manifest = m.subset(lambda u, keep=keep: u.speaker in keep)
        detected = detect_shared_text(manifest, settings.shared_text)
        ev = EvaluationSet(
            c.name, manifest, frozenset(detected.removed_ids), detected.stats(), sizes[c.name]
        )
        agreement = scripted_agreement(manifest, set(detected.removed_ids))
        if agreement:
            ev.shared_stats["scripted_flags"] = agreement
        sets[c.name] = ev
        logger.info(
            f"[leakage] {c.name}: {len(manifest)} utterances, {len(keep)} of {sizes[c.name]} evaluation speakers, "
            f"{len(ev.shared_ids)} shared-text utterances"
        )
    return sets


def corpus_analysis(settings: LeakageSettings, evalset: EvaluationSet, *, n_tokens: int) -> dict:
    """Vocabulary and phone-frequency distinctiveness under each condition."""
    from ...phones.distinct import analyse
    from ...phones.features import PhoneFeatures

    features = PhoneFeatures(
        source="transcript", cache_dir=Path(settings.cache_folder) / "features"
    )
    out = OrderedDict()
    for cond in settings.conditions:
        view = evalset.view(cond)
        try:
            found, why = analyse(view, features), None
        except DataError as err:  # too few speakers, or speakers without words, in this view
            found, why = {"speakers": {}, "ranked": []}, str(err)
        ranked = found["ranked"]
        out[cond] = {
            "vocabulary": vocabulary_stats(view, sample_tokens=n_tokens),
            "distinctiveness": {
                "speakers": found["speakers"],
                "most": ranked[:5],
                "least": ranked[::-1][:5],
                "not_applicable": why,
            },
        }
    return out


# --- the run -------------------------------------------------------------------------------------


def _text_manifest(
    settings: LeakageSettings, corpus: CorpusSpec, evalset: EvaluationSet, deviations: dict
):
    """What attackers that read the words of a corpus's anonymized speech read (None: its own text)."""
    reads_text = any(a.attacker is not None and a.attacker.needs.words for a in settings.attackers)
    data = corpus.data
    if not (reads_text and data.scenario != "original" and data.anon_eval_folder):
        return None
    ids = {u.id for u in evalset.manifest}
    anon = mark_anonymized(
        load_spec(data.anon_eval_folder, cache_folder=settings.cache_folder).subset(
            lambda u: u.id in ids
        ),
        name=data.anonymizer_name,
        keeps_words=data.anon_keeps_words,
    )
    words = corpus.data_keys.get(
        "phone_text", "spoken"
    )  # the text attackers read the words as the phones do
    deviations.update(
        {
            f"{corpus.name} text attackers: {k}": v
            for k, v in reference_text_deviation(anon, words).items()
        }
    )
    return spoken_manifest(anon, words)


def _corpus_record(c: CorpusSpec, ev: EvaluationSet, analysis: dict, grouping: str) -> dict:
    grouped, left_out = accent_groups(ev.manifest.speaker_attributes(), grouping)
    return {
        "data_folder": c.data_folder,
        "train_folders": c.train_folders,
        "settings": c.data_keys,
        "has_audio": ev.manifest.has_audio,
        "n_speakers_available": ev.n_speakers_before_balance,
        "n_speakers": len(ev.speakers),
        "n_utterances": len(ev.manifest),
        "shared_text": ev.shared_stats,
        "accent_grouping": grouped,
        "accent_left_out": left_out,
        "conditions": analysis,
    }


def _corpus_cells(
    settings: LeakageSettings,
    corpus: CorpusSpec,
    evalset: EvaluationSet,
    ctx: CellContext,
    na: dict,
    text_manifest,
) -> OrderedDict:
    cells = OrderedDict()
    for attacker in settings.attackers:
        by_condition = cells[attacker.name] = OrderedDict()
        for condition in settings.conditions:
            if condition == "no_shared" and not evalset.shared_ids and "all" in by_condition:
                # nothing to remove: the same trials and scores as condition all
                cell = {**by_condition["all"], "condition": condition, "same_as": "all"}
            else:
                cell = _run_cell(settings, attacker, corpus, evalset, condition, ctx, text_manifest)
            by_condition[condition] = cell
            where = f"{corpus.name} / {attacker.name} / {condition}"
            if cell["status"] != "ok":
                na[f"cells.{corpus.name}.{attacker.name}.{condition}"] = cell["reason"]
            else:
                logger.info("[leakage] %s: EER %.1f%%", where, 100 * cell["overall"]["eer"])
    return cells


def _correlations(settings: LeakageSettings, results_corpora, cells) -> OrderedDict:
    """Per-speaker EER against phone-frequency distinctiveness and unique-word share."""
    from ...phones.frequencies import correlate

    correlations = OrderedDict()
    for c in settings.corpora:
        correlations[c.name] = OrderedDict()
        for cond in settings.conditions:
            block = results_corpora[c.name]["conditions"][cond]
            distinct = {
                s: v["distinctiveness"] for s, v in block["distinctiveness"]["speakers"].items()
            }
            unique = {
                s: v["unique_token_share"]
                for s, v in block["vocabulary"]["speakers"].items()
                if v["unique_token_share"] is not None
            }
            for a in settings.attackers:
                cell = cells[c.name][a.name][cond]
                if cell["status"] != "ok" or not cell.get("per_speaker"):
                    continue
                eers = {s: v["eer"] for s, v in cell["per_speaker"].items()}
                correlations[c.name].setdefault(cond, OrderedDict())[a.name] = {
                    "distinctiveness": correlate(distinct, eers),
                    "unique_token_share": correlate(unique, eers),
                }
    return correlations


def _fairness(settings: LeakageSettings, evalsets, cells) -> dict:
    return {
        "balance_speakers": settings.balance_speakers,
        "balance_trial_utterances": settings.balance_trial_utterances,
        "speakers_per_corpus": {n: len(e.speakers) for n, e in evalsets.items()},
        "speakers_available": {n: e.n_speakers_before_balance for n, e in evalsets.items()},
        "trial_speakers_per_cell": {
            c: {
                a: {cond: cell.get("n_trial_speakers") for cond, cell in by_cond.items()}
                for a, by_cond in by_attacker.items()
            }
            for c, by_attacker in cells.items()
        },
        "ecapa_training": {
            c.name: ("train_folders: " + ", ".join(c.train_folders))
            if c.train_folders
            else f"the other {1 - c.data.eval_speaker_fraction:.0%} of its own speakers"
            for c in settings.corpora
        },
        "bootstrap_unit": settings.evaluation.bootstrap.unit,
        "text_attackers": "the same evaluation speakers; their trials per speaker are set by max_probes",
    }


def compare_leakage(settings: LeakageSettings, *, hparams_file=None, overrides=None) -> Path:
    """Run every cell, correlate, compare, write results.json / report.md / figures; returns
    the path of results.json."""
    from ...metrics.results import json_safe
    from .report import write_leakage_report

    start = time.perf_counter()
    if settings.num_threads:
        import torch

        torch.set_num_threads(int(settings.num_threads))
    ctx = settings.cell_context()
    evalsets = build_evaluation_sets(settings)
    results_corpora, cells, na, extra_deviations = OrderedDict(), OrderedDict(), OrderedDict(), {}
    n_tokens = sample_tokens(settings, evalsets)
    for c in settings.corpora:
        ev = evalsets[c.name]
        analysis = corpus_analysis(settings, ev, n_tokens=n_tokens)
        results_corpora[c.name] = _corpus_record(
            c, ev, analysis, settings.evaluation.segments.accent_grouping
        )
        cells[c.name] = _corpus_cells(
            settings, c, ev, ctx, na, _text_manifest(settings, c, ev, extra_deviations)
        )
    comparisons = _comparisons(settings, cells, na)
    na["overall"] = (
        "a comparison of several attackers and corpora: see cells.<corpus>.<attacker>.<condition>"
    )
    na["per_speaker"] = "per cell: cells.<corpus>.<attacker>.<condition>.per_speaker"
    run = {
        "kind": "leakage_comparison",
        "dataset": [c.name for c in settings.corpora],
        "features": [a.name for a in settings.attackers],
        "anonymizer": None,
        "scenario": sorted({c.scenario for c in settings.corpora}),
        "hparams": str(hparams_file) if hparams_file else None,
        "overrides": overrides or None,
        "seed": settings.seed,
        "grid": settings.grid,
        "conditions": list(settings.conditions),
        "plots": settings.plots,  # so that sparc-eval report re-renders the same report.md
        **settings.evaluation.record(),
        "attackers": {a.name: a.describe() for a in settings.attackers},
        "timings_s": {"total": round(time.perf_counter() - start, 3)},
        "deviations": {**leakage_deviations(settings, cells), **extra_deviations},
        "environment": environment(),
        **versions(),
    }
    doc = OrderedDict(
        run=run,
        overall=None,
        per_speaker=None,
        segments={},
        fairness=_fairness(settings, evalsets, cells),
        corpora=results_corpora,
        cells=cells,
        correlations=_correlations(settings, results_corpora, cells),
        comparisons=comparisons,
        not_applicable=na,
    )
    doc = json_safe(doc)
    write_json(settings.output_folder / "results.json", doc)
    write_leakage_report(settings.output_folder, doc, plots=settings.plots)
    return settings.output_folder / "results.json"


def leakage_deviations(settings: LeakageSettings, cells: dict) -> dict:
    """The comparison's departures from the papers: its own (the quick grid, speaker balancing) and
    each attacker's, as its cells record them (``<attacker>: <name>``)."""
    found = {**settings.grid_deviations, **bootstrap_deviation(settings.evaluation.bootstrap.unit)}
    if settings.balance_speakers not in (None, False):
        found["balance_speakers"] = (
            "corpora are evaluated on as many speakers as the smallest has (seeded "
            "draw); the paper evaluates every speaker (balance_speakers: null)"
        )
    for by_attacker in cells.values():
        for attacker, by_cond in by_attacker.items():
            for cell in by_cond.values():
                found.update(
                    {
                        f"{attacker}: {name}": why
                        for name, why in (cell.get("deviations") or {}).items()
                    }
                )
    return found


def sample_tokens(settings: LeakageSettings, evalsets: dict) -> int:
    """The per-speaker TTR sample length: a number, or ``auto``: the smallest 10th percentile of
    tokens per speaker over corpora and conditions (at least 50), so that every corpus is measured
    on the same length and nine in ten speakers of each have that much text."""
    from .vocabulary import speaker_tokens

    if settings.vocabulary_sample_tokens != "auto":
        return int(settings.vocabulary_sample_tokens)
    lows = [
        np.percentile(counts, 10)
        for ev in evalsets.values()
        for cond in settings.conditions
        if (counts := [len(t) for t in speaker_tokens(ev.view(cond)).values()])
    ]
    return max(50, int(min(lows))) if lows else 50


def _run_cell(
    settings: LeakageSettings,
    attacker: AttackerSpec,
    corpus: CorpusSpec,
    evalset: EvaluationSet,
    condition: str,
    ctx: CellContext,
    text_manifest,
) -> dict:
    cell_dir = settings.output_folder / "cells" / corpus.name / attacker.name / condition
    try:
        if attacker.hparams:
            attacker = AttackerSpec(
                **{**vars(attacker), "model_folder": model_folder(settings, attacker, corpus)}
            )
        return run_cell(
            attacker, corpus, evalset, condition, cell_dir, ctx, text_manifest=text_manifest
        )
    except DataError as err:  # this cell cannot run; the others can
        logger.warning(
            "[leakage] %s / %s / %s: FAILED: %s", corpus.name, attacker.name, condition, err
        )
        return not_applicable(attacker, corpus.name, condition, str(err), status="failed")


class _Comparer:
    """Paired bootstrap comparisons of finished cells, each cell's trials read once."""

    def __init__(self, settings: LeakageSettings, cells: dict, na: dict):
        self.settings, self.cells, self.na, self._trials = settings, cells, na, {}

    def ok(self, corpus, attacker, cond) -> bool:
        return self.cells[corpus][attacker][cond]["status"] == "ok"

    def same_as(self, corpus, attacker, cond) -> bool:
        return bool(self.cells[corpus][attacker][cond].get("same_as"))

    def trials(self, corpus, attacker, cond):
        key = (corpus, attacker, cond)
        if key not in self._trials:
            folder = self.cells[corpus][attacker][cond].get("same_as", cond)
            self._trials[key] = cell_trials(
                self.settings.output_folder / "cells" / corpus / attacker / folder
            )
        return self._trials[key]

    def compare(self, x, y):
        """x, y: (corpus, attacker, condition) of two cells; None (and why) if they cannot be compared."""
        if not (self.ok(*x) and self.ok(*y)):
            return None
        try:
            found = compare_cells(self.trials(*x), self.trials(*y), self.settings.evaluation)
        except DataError as err:
            self.na["comparisons." + "~".join(".".join(side) for side in (x, y))] = str(err)
            return None
        found["withheld"] = self.withheld(x, y)
        return found

    def withheld(self, *sides) -> str | None:
        """The "no verdict: ..." sentence when a side is a small evaluation, a degenerate interval
        included (the count rule is compare_cells'): the card's rule binds here too (issue 61)."""
        for corpus, attacker, cond in sides:
            small = small_reason(self.cells[corpus][attacker][cond].get("overall"))
            if small:
                return f"no verdict: {attacker} on {corpus} ({cond}) is a {small}"
        return None


def _corpus_comparisons(settings: LeakageSettings, cmp: _Comparer, cond: str) -> list:
    rows = []
    for a in settings.attackers:
        for c1, c2 in combinations([c.name for c in settings.corpora], 2):
            if cmp.same_as(c1, a.name, cond) and cmp.same_as(c2, a.name, cond):
                continue  # neither corpus has shared text: the same comparison as under condition all
            found = cmp.compare((c1, a.name, cond), (c2, a.name, cond))
            if found:
                rows.append(
                    {
                        "attacker": a.name,
                        "condition": cond,
                        "a": c1,
                        "b": c2,
                        **found,
                        "verdict": verdict(found, c1, c2, "leaks more"),
                    }
                )
    return rows


def _attacker_comparisons(settings: LeakageSettings, cmp: _Comparer, cond: str) -> list:
    rows = []
    for c in settings.corpora:
        for a1, a2 in combinations([a.name for a in settings.attackers], 2):
            if cmp.ok(c.name, a1, cond) and cmp.same_as(c.name, a2, cond):
                continue  # the same comparison as under condition all
            found = cmp.compare((c.name, a1, cond), (c.name, a2, cond))
            if found:
                rows.append(
                    {
                        "corpus": c.name,
                        "condition": cond,
                        "a": a1,
                        "b": a2,
                        **found,
                        "verdict": verdict(found, a1, a2, "identifies speakers better"),
                    }
                )
    return rows


def _shared_text_comparisons(settings: LeakageSettings, cmp: _Comparer) -> list:
    """What removing shared text changes, per corpus and attacker."""
    rows = []
    for c in settings.corpora:
        for a in settings.attackers:
            if cmp.same_as(c.name, a.name, "no_shared"):
                continue
            found = cmp.compare((c.name, a.name, "all"), (c.name, a.name, "no_shared"))
            if found:
                rows.append(
                    {
                        "corpus": c.name,
                        "attacker": a.name,
                        "a": "all",
                        "b": "no_shared",
                        **found,
                        "verdict": shared_text_verdict(found),
                    }
                )
    return rows


def _comparisons(settings: LeakageSettings, cells: dict, na: dict) -> dict:
    """Corpora compared per attacker, attackers per corpus, within each condition."""
    result = {"corpora": [], "attackers": [], "shared_text": []}
    if settings.evaluation.bootstrap.n_boot <= 0:
        na["comparisons"] = "bootstrap disabled (n_boot = 0)"
        return result
    cmp = _Comparer(settings, cells, na)
    for cond in settings.conditions:
        result["corpora"] += _corpus_comparisons(settings, cmp, cond)
        result["attackers"] += _attacker_comparisons(settings, cmp, cond)
    if set(SHARED_TEXT_CONDITIONS) <= set(settings.conditions):
        result["shared_text"] = _shared_text_comparisons(settings, cmp)
    logger.info(
        f"[leakage] {len(result['corpora'])} corpus, {len(result['attackers'])} attacker and "
        f"{len(result['shared_text'])} shared-text comparisons"
    )
    return result


def shared_text_verdict(cmp: dict) -> str:
    return ci_verdict(
        cmp,
        below="lower EER without it: the shared text hid speaker content",
        above="higher EER without it: the shared text helped the attacker",
        within="no significant change (the 95% CI contains 0)",
    )
