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

import json
import time
from collections import OrderedDict
from itertools import combinations
from pathlib import Path

import numpy as np

from ..atomic import write_json
from ..attack import attacker_class, check_attacker
from ..attributes import accent_groups
from ..corpora.specs import load_spec
from ..digest import text_digest
from ..errors import DataError
from ..evaluation import EvaluationSettings
from ..provenance import bootstrap_deviation, environment, versions
from ..words import mark_anonymized, reference_text_deviation, spoken_manifest
from .cells import AttackerSpec, CellContext, CorpusSpec, cell_trials, not_applicable, run_cell
from .compare import compare_cells, verdict
from .evaluation_set import CONDITIONS, EvaluationSet, balanced_count, choose_speakers
from .vocabulary import vocabulary_stats

CORPUS_SETTINGS = {"enroll_list", "trial_list", "enrolls_dir", "trials_dirs", "split_seed", "eval_speaker_fraction",
                   "n_enroll", "max_per_speaker", "min_duration", "max_duration", "scenario", "anon_eval_folder",
                   "anon_train_folders", "anonymizer_name", "anon_keeps_words", "phone_text"}
ECAPA_COMMON = ("cache_folder", "progress", "plots", "n_boot", "num_threads")


# --- specs ---------------------------------------------------------------------------------------

def _enabled(names, wanted, what):
    if wanted in (None, "all"):
        return list(names)
    wanted = [wanted] if isinstance(wanted, str) else list(wanted)
    unknown = [w for w in wanted if w not in names]
    if unknown:
        raise DataError(f"{what}_enabled names {unknown}, which are not in {what}: {list(names)}")
    return wanted


def corpus_specs(hp: dict) -> list:
    corpora = hp.get("corpora") or {}
    if not isinstance(corpora, dict) or not corpora:
        raise DataError("hparams: corpora must map names to {data_folder: ...}")
    out = []
    for name in _enabled(corpora, hp.get("corpora_enabled"), "corpora"):
        spec = dict(corpora[name] or {})
        if not spec.get("data_folder"):
            raise DataError(f"corpora.{name}: data_folder is required")
        unknown = set(spec) - CORPUS_SETTINGS - {"data_folder", "train_folders"}
        if unknown:
            raise DataError(f"corpora.{name}: unknown keys {sorted(unknown)}",
                            hint=f"allowed: data_folder, train_folders, {', '.join(sorted(CORPUS_SETTINGS))}")
        train = spec.pop("train_folders", None)
        out.append(CorpusSpec(name, str(spec.pop("data_folder")),
                              [str(x) for x in ([train] if isinstance(train, str) else train or [])] or None, spec))
    return out


def _object_spec(name: str, spec: dict, seed: int) -> AttackerSpec:
    """An attacker given in the comparison's hparams: ``attacker: !new:...``, or ``kind:`` a registered
    attacker (``text``: a SPARC scorer, ``scorer: !new:attackers.text...``, with P, L and trial keys)."""
    kind, options = spec.pop("kind", None), {k: v for k, v in spec.items() if k != "attacker"}
    if spec.get("attacker") is not None:
        if options:
            raise DataError(f"attackers.{name}: unknown keys {sorted(options)}", hint="set them on the attacker itself")
        return AttackerSpec(name, kind, attacker=check_attacker(spec["attacker"], f"attackers.{name}"))
    if kind == "text" and options.get("scorer") is None:
        raise DataError(f"attackers.{name}: a text attacker needs a scorer (!new:attackers.text...)")
    try:
        attacker = attacker_class(kind)(name=name, seed=seed, **options) if kind == "text" else attacker_class(kind)(**options)
    except TypeError as err:
        raise DataError(f"attackers.{name}: {err}") from None
    return AttackerSpec(name, kind, attacker=check_attacker(attacker, f"attackers.{name}"))


def attacker_specs(hp: dict) -> list:
    attackers = hp.get("attackers") or {}
    if not isinstance(attackers, dict) or not attackers:
        raise DataError("hparams: attackers must map names to {hparams: FILE} or {attacker: !new:...} or {kind: ...}")
    out = []
    for name in _enabled(attackers, hp.get("attackers_enabled"), "attackers"):
        spec = dict(attackers[name] or {})
        if "hparams" not in spec and spec.get("kind") != "ecapa":
            out.append(_object_spec(name, spec, int(hp.get("seed", 0))))
            continue
        if not spec.get("hparams") or not Path(spec["hparams"]).is_file():
            raise DataError(f"attackers.{name}: hparams {spec.get('hparams')!r} is not a file",
                            hint="e.g. hparams/phones.yaml (paths are relative to where you run the recipe)")
        unknown = set(spec) - {"kind", "hparams", "overrides", "model_folder"}
        if unknown:
            raise DataError(f"attackers.{name}: unknown keys {sorted(unknown)}")
        out.append(AttackerSpec(name, spec.get("kind"), hparams=str(spec["hparams"]),
                                overrides=dict(spec.get("overrides") or {}),
                                model_folder=spec.get("model_folder")))
    return out


def model_folder(hp: dict, attacker: AttackerSpec, corpus: CorpusSpec) -> str:
    """Where an hparams attacker's model lives: one per attacker and training data, so corpora
    evaluated by an attacker trained elsewhere share it (trained once, resumed after)."""
    if attacker.model_folder:
        return str(attacker.model_folder)
    trained_on = list(corpus.train_folders or [])
    if corpus.settings.get("scenario") == "semi-informed":  # trained on anonymized speech
        anon = corpus.settings.get("anon_train_folders") or []
        trained_on += ["anonymized:"] + ([anon] if isinstance(anon, str) else list(anon))
    if corpus.train_folders:
        where = "trained_" + text_digest("\n".join(map(str, trained_on)), 8)
    else:
        where = f"held_out_{corpus.name}" + ("_semi_informed" if len(trained_on) else "")
    return str(Path(hp["output_folder"]) / "models" / attacker.name / where)


# --- evaluation sets -----------------------------------------------------------------------------

def load_evaluation_corpus(hp: dict, corpus: CorpusSpec):
    """The corpus's evaluation speakers, as the attacker recipe holds them out."""
    return corpus.data_settings(hp["cache_folder"]).evaluation_corpus()


def shared_config(hp: dict):
    """The shared-text detector's settings, read as the text evaluation reads them."""
    from ..text.evaluate import trial_config_from_hparams

    keys = {k: v for k, v in hp.items() if k.startswith("shared_text_")}
    return trial_config_from_hparams({**keys, "shared_text": True}).shared_text  # its own condition: always on


def scripted_agreement(manifest, removed: set):
    """How the shared-text detector agrees with a corpus's own ``scripted`` flags, when it has them."""
    flagged = {u.id for u in manifest if u.extra.get("scripted") is True}
    if not any("scripted" in u.extra for u in manifest):
        return None
    hit = len(flagged & removed)
    return {"n_scripted": len(flagged), "n_detected": len(removed), "n_both": hit,
            "recall": hit / len(flagged) if flagged else None, "precision": hit / len(removed) if removed else None}


def build_evaluation_sets(hp: dict, corpora: list, log=print) -> dict:
    from ..text.shared_text import detect_shared_text

    loaded = {c.name: load_evaluation_corpus(hp, c) for c in corpora}
    sizes = {name: len(m.speakers()) for name, m in loaded.items()}
    n_speakers = balanced_count(hp.get("balance_speakers"), sizes, "balance_speakers")
    sets = OrderedDict()
    for c in corpora:
        m = loaded[c.name]
        keep = set(choose_speakers(m.speakers(), n_speakers, int(hp.get("seed", 0))))
        manifest = m.subset(lambda u: u.speaker in keep)
        detected = detect_shared_text(manifest, shared_config(hp))
        ev = EvaluationSet(c.name, manifest, frozenset(detected.removed_ids), detected.stats(), sizes[c.name])
        agreement = scripted_agreement(manifest, set(detected.removed_ids))
        if agreement:
            ev.shared_stats["scripted_flags"] = agreement
        sets[c.name] = ev
        log(f"[leakage] {c.name}: {len(manifest)} utterances, {len(keep)} of {sizes[c.name]} evaluation speakers, "
            f"{len(ev.shared_ids)} shared-text utterances")
    return sets


def corpus_analysis(hp: dict, evalset: EvaluationSet, conditions, *, n_tokens: int) -> dict:
    """Vocabulary and phone-frequency distinctiveness under each condition."""
    from ..phones.distinct import analyse
    from ..phones.features import PhoneFeatures

    features = PhoneFeatures(source="transcript", cache_dir=Path(hp["cache_folder"]) / "features")
    out = OrderedDict()
    for cond in conditions:
        view = evalset.view(cond)
        try:
            found, why = analyse(view, features), None
        except DataError as err:  # too few speakers, or speakers without words, in this view
            found, why = {"speakers": {}, "ranked": []}, str(err)
        ranked = found["ranked"]
        out[cond] = {"vocabulary": vocabulary_stats(view, sample_tokens=n_tokens),
                     "distinctiveness": {"speakers": found["speakers"], "most": ranked[:5],
                                         "least": ranked[::-1][:5], "not_applicable": why}}
    return out


# --- the run -------------------------------------------------------------------------------------

def _conditions(hp: dict) -> list:
    conditions = hp.get("conditions") or list(CONDITIONS)
    conditions = [conditions] if isinstance(conditions, str) else list(conditions)
    bad = [c for c in conditions if c not in CONDITIONS]
    if bad:
        raise DataError(f"conditions {bad} are not among {list(CONDITIONS)}")
    return conditions


def _context(hp: dict, log) -> CellContext:
    """The cells' shared settings, every bad value failing before any work."""
    balanced_count(hp.get("balance_speakers"), {"": 2}, "balance_speakers")
    settings = EvaluationSettings.from_hparams({"segment_attributes": None, **hp})
    cap = hp.get("balance_trial_utterances")
    return CellContext(settings=settings, common={k: hp[k] for k in ECAPA_COMMON if hp.get(k) is not None},
                       cache_folder=hp["cache_folder"], trials_per_speaker=None if cap in (None, "null") else int(cap),
                       plots=bool(hp.get("plots", True)), log=log)


def _text_manifest(hp: dict, c: CorpusSpec, ev: EvaluationSet, attackers, deviations: dict):
    """What attackers that read the words of a corpus's anonymized speech read (None: its own text)."""
    reads_text = any(a.attacker is not None and a.attacker.needs.words for a in attackers)
    if not (reads_text and c.settings.get("scenario", "original") != "original" and c.settings.get("anon_eval_folder")):
        return None
    anon = load_spec(c.settings["anon_eval_folder"], cache_folder=hp["cache_folder"])
    ids = {u.id for u in ev.manifest}
    anon = mark_anonymized(anon.subset(lambda u: u.id in ids), name=c.settings.get("anonymizer_name"),
                           keeps_words=c.settings.get("anon_keeps_words"))
    words = c.settings.get("phone_text", "spoken")  # the text attackers read the words as the phones do
    deviations.update({f"{c.name} text attackers: {k}": v for k, v in reference_text_deviation(anon, words).items()})
    return spoken_manifest(anon, words)


def _corpus_record(c: CorpusSpec, ev: EvaluationSet, analysis: dict, grouping: str) -> dict:
    grouped, left_out = accent_groups(ev.manifest.speaker_attributes(), grouping)
    return {"data_folder": c.data_folder, "train_folders": c.train_folders, "settings": c.settings,
            "has_audio": ev.manifest.has_audio, "n_speakers_available": ev.n_speakers_before_balance,
            "n_speakers": len(ev.speakers), "n_utterances": len(ev.manifest), "shared_text": ev.shared_stats,
            "accent_grouping": grouped, "accent_left_out": left_out, "conditions": analysis}


def _corpus_cells(hp, c, ev, attackers, conditions, out, ctx, na, text_manifest) -> OrderedDict:
    cells = OrderedDict()
    for a in attackers:
        cells[a.name] = OrderedDict()
        for cond in conditions:
            if cond == "no_shared" and not ev.shared_ids and "all" in cells[a.name]:
                # nothing to remove: the same trials and scores as condition all
                cell = {**cells[a.name]["all"], "condition": cond, "same_as": "all"}
            else:
                cell = _run_cell(hp, a, c, ev, cond, out, ctx, text_manifest)
            cells[a.name][cond] = cell
            if cell["status"] != "ok":
                na[f"cells.{c.name}.{a.name}.{cond}"] = cell["reason"]
            else:
                ctx.log(f"[leakage] {c.name} / {a.name} / {cond}: EER {100 * cell['overall']['eer']:.1f}%")
    return cells


def _correlations(corpora, attackers, conditions, results_corpora, cells) -> OrderedDict:
    """Per-speaker EER against phone-frequency distinctiveness and unique-word share."""
    from ..phones.frequencies import correlate

    correlations = OrderedDict()
    for c in corpora:
        correlations[c.name] = OrderedDict()
        for cond in conditions:
            block = results_corpora[c.name]["conditions"][cond]
            distinct = {s: v["distinctiveness"] for s, v in block["distinctiveness"]["speakers"].items()}
            unique = {s: v["unique_token_share"] for s, v in block["vocabulary"]["speakers"].items()
                      if v["unique_token_share"] is not None}
            for a in attackers:
                cell = cells[c.name][a.name][cond]
                if cell["status"] != "ok" or not cell.get("per_speaker"):
                    continue
                eers = {s: v["eer"] for s, v in cell["per_speaker"].items()}
                correlations[c.name].setdefault(cond, OrderedDict())[a.name] = {
                    "distinctiveness": correlate(distinct, eers), "unique_token_share": correlate(unique, eers)}
    return correlations


def _fairness(hp, corpora, evalsets, cells, ctx: CellContext) -> dict:
    return {
        "balance_speakers": hp.get("balance_speakers"), "balance_trial_utterances": ctx.trials_per_speaker,
        "speakers_per_corpus": {n: len(e.speakers) for n, e in evalsets.items()},
        "speakers_available": {n: e.n_speakers_before_balance for n, e in evalsets.items()},
        "trial_speakers_per_cell": {c: {a: {cond: cell.get("n_trial_speakers") for cond, cell in by_cond.items()}
                                        for a, by_cond in by_attacker.items()} for c, by_attacker in cells.items()},
        "ecapa_training": {c.name: ("train_folders: " + ", ".join(c.train_folders)) if c.train_folders else
                           f"the other {1 - c.data_settings(ctx.cache_folder).eval_speaker_fraction:.0%} of its own "
                           "speakers" for c in corpora},
        "bootstrap_unit": ctx.settings.bootstrap.unit,
        "text_attackers": "the same evaluation speakers; their trials per speaker are set by max_probes",
    }


def compare_leakage(hp: dict, *, hparams_file=None, overrides=None, log=print) -> Path:
    """Run every cell, correlate, compare, write results.json / report.md / figures; returns
    the path of results.json."""
    from ..metrics.results import json_safe
    from .report import write_leakage_report

    start = time.perf_counter()
    out, conditions = Path(hp["output_folder"]), _conditions(hp)
    corpora, attackers, ctx = corpus_specs(hp), attacker_specs(hp), _context(hp, log)
    evalsets = build_evaluation_sets(hp, corpora, log=log)
    results_corpora, cells, na, extra_deviations = OrderedDict(), OrderedDict(), OrderedDict(), {}
    n_tokens = sample_tokens(hp, evalsets, conditions)
    for c in corpora:
        ev = evalsets[c.name]
        analysis = corpus_analysis(hp, ev, conditions, n_tokens=n_tokens)
        results_corpora[c.name] = _corpus_record(c, ev, analysis, ctx.settings.segments.accent_grouping)
        text_manifest = _text_manifest(hp, c, ev, attackers, extra_deviations)
        cells[c.name] = _corpus_cells(hp, c, ev, attackers, conditions, out, ctx, na, text_manifest)
    correlations = _correlations(corpora, attackers, conditions, results_corpora, cells)
    comparisons = _comparisons(corpora, attackers, conditions, cells, out, ctx.settings.bootstrap, na, log=log)
    na["overall"] = "a comparison of several attackers and corpora: see cells.<corpus>.<attacker>.<condition>"
    na["per_speaker"] = "per cell: cells.<corpus>.<attacker>.<condition>.per_speaker"
    settings = ctx.settings
    run = {"dataset": [c.name for c in corpora], "features": [a.name for a in attackers], "anonymizer": None,
           "scenario": sorted({c.settings.get("scenario", "original") for c in corpora}),
           "hparams": str(hparams_file) if hparams_file else None, "overrides": overrides or None,
           "seed": settings.bootstrap.seed, "conditions": conditions, **settings.record(),
           "attackers": {a.name: a.describe() for a in attackers},
           "timings_s": {"total": round(time.perf_counter() - start, 3)},
           "deviations": {**leakage_deviations(hp, out, cells), **extra_deviations}, "environment": environment(),
           **versions()}
    doc = OrderedDict(run=run, overall=None, per_speaker=None, segments={},
                      fairness=_fairness(hp, corpora, evalsets, cells, ctx), corpora=results_corpora, cells=cells,
                      correlations=correlations, comparisons=comparisons, not_applicable=na)
    doc = json_safe(doc)
    write_json(out / "results.json", doc)
    write_leakage_report(out, doc, plots=ctx.plots)
    return out / "results.json"


def leakage_deviations(hp: dict, out: Path, cells: dict) -> dict:
    """The comparison's departures from the papers: its own (speaker balancing) and each attacker's,
    as its cells' results.json record them (``<attacker>: <name>``)."""
    found = bootstrap_deviation(str(hp.get("bootstrap_unit", "speaker")))
    if hp.get("balance_speakers") not in (None, False):
        found["balance_speakers"] = ("corpora are evaluated on as many speakers as the smallest has (seeded "
                                     "draw); the paper evaluates every speaker (balance_speakers: null)")
    for corpus, by_attacker in cells.items():
        for attacker, by_cond in by_attacker.items():
            for cond in by_cond:
                path = out / "cells" / corpus / attacker / cond / "results.json"
                if path.is_file():
                    for name, why in (json.loads(path.read_text()).get("run", {}).get("deviations") or {}).items():
                        found[f"{attacker}: {name}"] = why
    return found


def sample_tokens(hp: dict, evalsets: dict, conditions) -> int:
    """The per-speaker TTR sample length: a number, or ``auto``: the smallest 10th percentile of
    tokens per speaker over corpora and conditions (at least 50), so that every corpus is measured
    on the same length and nine in ten speakers of each have that much text."""
    from .vocabulary import speaker_tokens

    value = hp.get("vocabulary_sample_tokens", "auto")
    if value != "auto":
        return int(value)
    lows = [np.percentile(counts, 10) for ev in evalsets.values() for cond in conditions
            if (counts := [len(t) for t in speaker_tokens(ev.view(cond)).values()])]
    return max(50, int(min(lows))) if lows else 50


def _run_cell(hp, a: AttackerSpec, c: CorpusSpec, ev: EvaluationSet, cond: str, out: Path, ctx: CellContext,
              text_manifest) -> dict:
    cell_dir = out / "cells" / c.name / a.name / cond
    try:
        if a.hparams:
            a = AttackerSpec(**{**vars(a), "model_folder": model_folder(hp, a, c)})
        return run_cell(a, c, ev, cond, cell_dir, ctx, text_manifest=text_manifest)
    except DataError as err:  # this cell cannot run; the others can
        ctx.log(f"[leakage] {c.name} / {a.name} / {cond}: FAILED: {err}")
        return not_applicable(a, c.name, cond, str(err), status="failed")


def _comparisons(corpora, attackers, conditions, cells, out, settings, na, *, log) -> dict:  # settings: bootstrap
    """Corpora compared per attacker, attackers per corpus, within each condition."""
    trials_cache = {}

    def trials(corpus, attacker, cond):
        key = (corpus, attacker, cond)
        if key not in trials_cache:
            cell = cells[corpus][attacker][cond]
            trials_cache[key] = cell_trials(out / "cells" / corpus / attacker / cell.get("same_as", cond))
        return trials_cache[key]

    def compare(x, y):
        """x, y: (corpus, attacker, condition) of two ok cells; None (and why) if they cannot be compared."""
        try:
            return compare_cells(trials(*x), trials(*y), n_boot=settings.n_boot, seed=settings.seed, unit=settings.unit)
        except DataError as err:
            na["comparisons." + "~".join(".".join(side) for side in (x, y))] = str(err)
            return None

    def ok(corpus, attacker, cond):
        return cells[corpus][attacker][cond]["status"] == "ok"

    result = {"corpora": [], "attackers": [], "shared_text": []}
    if settings.n_boot <= 0:
        na["comparisons"] = "bootstrap disabled (n_boot = 0)"
        return result
    for cond in conditions:
        for a in attackers:
            for c1, c2 in combinations([c.name for c in corpora], 2):
                if cells[c1][a.name][cond].get("same_as") and cells[c2][a.name][cond].get("same_as"):
                    continue  # neither corpus has shared text: the same comparison as under condition all
                if ok(c1, a.name, cond) and ok(c2, a.name, cond):
                    cmp = compare((c1, a.name, cond), (c2, a.name, cond))
                    if cmp:
                        result["corpora"].append({"attacker": a.name, "condition": cond, "a": c1, "b": c2, **cmp,
                                                  "verdict": verdict(cmp, c1, c2, "leaks more")})
        for c in corpora:
            for a1, a2 in combinations([a.name for a in attackers], 2):
                if ok(c.name, a1, cond) and ok(c.name, a2, cond):
                    if cells[c.name][a2][cond].get("same_as"):
                        continue  # the same comparison as under condition all
                    cmp = compare((c.name, a1, cond), (c.name, a2, cond))
                    if cmp:
                        result["attackers"].append({"corpus": c.name, "condition": cond, "a": a1, "b": a2, **cmp,
                                                    "verdict": verdict(cmp, a1, a2, "identifies speakers better")})
    if set(CONDITIONS) <= set(conditions):  # what removing shared text changes, per corpus and attacker
        for c in corpora:
            for a in attackers:
                cell = cells[c.name][a.name]["no_shared"]
                if cell.get("same_as") or not (ok(c.name, a.name, "all") and ok(c.name, a.name, "no_shared")):
                    continue
                cmp = compare((c.name, a.name, "all"), (c.name, a.name, "no_shared"))
                if cmp:
                    result["shared_text"].append({"corpus": c.name, "attacker": a.name, "a": "all", "b": "no_shared",
                                                  **cmp, "verdict": shared_text_verdict(cmp)})
    log(f"[leakage] {len(result['corpora'])} corpus, {len(result['attackers'])} attacker and "
        f"{len(result['shared_text'])} shared-text comparisons")
    return result


def shared_text_verdict(cmp: dict) -> str:
    lo, hi = cmp["eer_diff_ci95"]
    if lo is None or hi is None:
        return "no interval (too few valid resamples)"
    if hi < 0:
        return "lower EER without it: the shared text hid speaker content"
    if lo > 0:
        return "higher EER without it: the shared text helped the attacker"
    return "no significant change (the 95% CI contains 0)"
