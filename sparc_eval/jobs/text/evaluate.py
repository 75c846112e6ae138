"""Run transcript scorers over tasks x (P, L) settings x conditions; write results and report.

:func:`evaluate_text` is the library entry point (the recipe ``recipes/evaluate_text.py``
reads its hparams once into :class:`~.settings.TextRunSettings` and calls :func:`evaluate_from_settings`,
which loads the corpus and calls it). For each setting it builds the
trials (:mod:`~sparc_eval.text_trials.trials`, after removing shared text where that is on, :mod:`.shared_text`), fits
each scorer on the unique utterance texts of that task and setting, scores the trials, and
computes the metric block of :doc:`/contracts` (EER, AUC, TPR at 1% and 0.1% FPR, minDCF, bootstrap
CIs over ``bootstrap_unit``: by default the speakers on both sides of the trials (probes' and
enrollments'), from
:func:`sparc_eval.metrics.evaluate_trials`) per condition. ``results.json``::

    {"run": {..., "scorers": [...], "protocol": "naturalvoices", "bootstrap_unit": "two_way",
             "environment": {...}, "deviations": {name: sentence}},
     "overall": <headline block>, "per_speaker": null, "segments": {},
     "tasks": {"speaker": {"P200_L20": {"conditions": {"combined": {...}, "easy": {...},
                                                       "hard": null, ...},
                                        "trials": {...counts...}, "missing_scores": 0,
                                        "unscored": [trial ids]}}},
     "scorers": {name: {"settings", "report", "tasks"}},     # only with several scorers
     "ablations": {"base": "P200_L20", "by_scorer": {name: {task: {setting: {condition: deltas}}}}},
     "comparisons": [paired bootstrap rows, one per scorer pair, task, setting, condition],
     "shared_text": {...}, "not_applicable": {"tasks.speaker.P200_L20.hard": "why", ...}}

``tasks`` holds the first scorer's results (``scorers`` every scorer's, when there are several).
A condition without both positive and negative trials is ``null`` and its reason is in
``not_applicable``; so is a task that no speaker has a label for. ``overall`` repeats the
first task's ``combined`` block at the first setting (named in ``run.overall_from``).
Trials with no score (an LLM reply without a number, a failed request) are left out of the
metrics and the score file, counted in ``missing_scores`` and listed in ``unscored``.
Score files: ``scores/<task>_<setting>.txt`` for the first scorer, ``scores/<scorer>/...`` for
the others.
"""

from __future__ import annotations

import gc
import logging
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Optional

import numpy as np

from ... import provenance
from ...data.words import mark_anonymized, reference_text_deviation, spoken_manifest
from ...errors import DataError
from ...metrics.bootstrap import DEFAULT_BOOTSTRAP_UNIT
from ...text_trials.protocol import check_protocol
from ...text_trials.ray_scoring import ScoringRunner
from ...text_trials.scoring import (  # noqa: F401 (re-exported: their 0.4 home)
    score_trials,
    scored_trials,
    trial_build_deviations,
    usable_tasks,
)
from ...text_trials.shared_text import SharedTextConfig, detect_shared_text
from ...text_trials.trials import (
    TRIAL_CONDITIONS,
    TRIAL_TYPES,
    TYPE_CONDITIONS,
    TrialBuilder,
    TrialConfig,
    has_topic_metadata,
)
from .compare import BASE_SETTING, NO_ENROLLED, ablation_deltas, scorer_comparisons, speaker_sides
from .report import plot_roc_grid, render_report, safe_name, write_outputs  # noqa: F401 (re-exported)
from .settings import (  # noqa: F401
    BOOTSTRAP_UNITS,
    TRIAL_KEYS,
    TextEvaluationOptions,
    TextRunSettings,
    parse_settings,
    scorer_list,
    shared_text_from_hparams,  # (re-exported: the hparams readers)
    trial_config_from_hparams,
)

logger = logging.getLogger(__name__)

CONDITION_TYPES = {
    c: tuple(t for t in TRIAL_TYPES if c in TYPE_CONDITIONS[t]) for c in TRIAL_CONDITIONS
}


def setting_key(P: int, L: int) -> str:
    return f"P{int(P)}_L{int(L)}"


def remove_shared_text(manifest, config: SharedTextConfig):
    """(manifest without the detected shared text, SharedTextResult)."""
    result = detect_shared_text(manifest, config)
    if not result.removed_ids:
        return manifest, result
    gone = set(result.removed_ids)
    return manifest.subset(lambda u: u.id not in gone), result


def _reason(task: str, condition: str, counts: dict) -> str:
    """Why a condition has no metric: which class is missing, with the trial-type counts."""
    types = CONDITION_TYPES[condition]
    n_pos = sum(counts.get(t, 0) for t in types if t.endswith("positive"))
    which = "positive" if n_pos == 0 else "negative"
    missing = [t for t in types if t.endswith(which) and counts.get(t, 0) == 0]
    why = ""
    if task == "speaker" and "hard_positive" in missing:
        why = " (no speaker appears in two episodes here)"
    elif task == "speaker" and "hard_negative" in missing:
        why = " (no episode has two speakers here)"
    have = ", ".join(f"{t}: {counts.get(t, 0)}" for t in types)
    return (
        f"no {which} trials in condition {condition} ({have}){why}; a condition needs both classes"
    )


def condition_metrics(
    trials,
    scores,
    *,
    n_boot: int,
    seed: int,
    task: str,
    where: str,
    not_applicable: dict,
    bootstrap_unit: str = DEFAULT_BOOTSTRAP_UNIT,
    fpr_targets=(0.01, 0.001),
    panel_ci: bool = False,
):
    """{condition: block|None}, {condition: curves}: metrics of each condition of one trial set.
    CIs resample ``bootstrap_unit``: ``two_way`` (the probes' and the enrollments' speakers),
    ``speaker`` (the probes' speakers) or ``trial``; the panel beyond EER gets CIs only with
    ``panel_ci`` (tasks x settings x conditions add up)."""
    from ...metrics import MetricSettings, evaluate_trials
    from ...metrics.settings import trial_settings

    metrics = MetricSettings(fpr_targets=tuple(fpr_targets))
    finite = np.isfinite(scores)
    types = trials.types
    out, curves = OrderedDict(), {}
    for cond in TRIAL_CONDITIONS:
        mask = trials.condition_mask(cond) & finite
        counts = {t: int(((types == t) & mask).sum()) for t in CONDITION_TYPES[cond]}
        y = trials.labels[mask]
        if y.size == 0 or y.all() or not y.any():
            out[cond] = None
            not_applicable[f"{where}.{cond}"] = _reason(task, cond, counts)
            continue
        idx = np.flatnonzero(mask)
        enroll = trials.column("enroll_id")[idx].tolist()
        test = trials.column("probe_id")[idx].tolist()
        unit, probes, enrolled = speaker_sides(trials, idx, bootstrap_unit if n_boot else "trial")
        if unit != bootstrap_unit and n_boot:
            not_applicable[f"{where}.{cond}.ci95"] = f"the enrolled side is {NO_ENROLLED}"
        ev = evaluate_trials(
            enroll,
            test,
            scores[mask],
            y,
            utt2spk=None if probes is None else dict(zip(test, probes)),
            enroll2spk=None if enrolled is None else dict(zip(enroll, enrolled)),
            settings=trial_settings(metrics, n_boot=n_boot, seed=seed, bootstrap_unit=unit),
            per_speaker=False,
            panel_ci=panel_ci,
        )
        out[cond] = ev["overall"]
        curves[cond] = ev.curves
    return out, curves


def trial_block(ts, scores, stats: dict, conds: dict) -> OrderedDict:
    """One task and setting of one scorer: metrics per condition, trial counts, unscored trials."""
    unscored = [ts.records[i]["id"] for i in np.flatnonzero(~np.isfinite(scores))]
    return OrderedDict(
        conditions=conds,
        trials={
            "n": len(ts),
            "n_target": int(ts.labels.sum()),
            "n_nontarget": int((~ts.labels).sum()),
            "by_type": ts.type_counts(),
            "unique_texts": len(ts.texts),
            "unique_sides": len(ts.sides),
            "enrollments_short_of_L": int(ts.meta.get("enrollments_short_of_L", 0)),
            **stats,
            **({"sampled_from": ts.meta["sampled_from"]} if "sampled_from" in ts.meta else {}),
        },
        missing_scores=len(unscored),
        unscored=unscored,
    )


class _TextRun:
    """What one evaluation accumulates: results and curves per scorer, comparisons, timings."""

    def __init__(
        self,
        scorers,
        tasks,
        options: TextEvaluationOptions,
        out_dir,
        scoring: Optional[ScoringRunner] = None,
    ):
        self.scorers, self.options, self.out_dir, self.scoring = scorers, options, out_dir, scoring
        self.results = {s.name: OrderedDict((t, OrderedDict()) for t in tasks) for s in scorers}
        self.curves = {s.name: {t: OrderedDict() for t in tasks} for s in scorers}
        self.not_applicable = OrderedDict()
        self.comparisons = []
        self.timings = dict.fromkeys(
            ("shared_text", "trials", "scoring", "metrics", "comparisons"), 0.0
        )
        self.scoring_s = {}  # per scorer: what an LLM judge costs beside a TF-IDF one

    def unusable(self, task: str, key: str, why: str) -> None:
        for name in self.results:
            self.results[name][task][key] = None
        self.not_applicable[f"tasks.{task}.{key}"] = why

    def setting(self, task: str, key: str, ts, stats: dict) -> None:
        """Score one trial set with every scorer; metrics, score files, comparisons."""
        if self.out_dir is not None and self.options.save_trials:
            ts.write_jsonl(
                self.out_dir / "trials" / f"{task}_{key}.jsonl",
                with_text=self.options.trials_with_text,
            )
        scores = OrderedDict()
        for i, scorer in enumerate(self.scorers):
            scores[scorer.name] = self._one_scorer(i, scorer, task, key, ts, stats)
        if len(scores) > 1 and self.options.n_boot:
            t0 = time.perf_counter()
            self.comparisons += scorer_comparisons(
                ts,
                scores,
                where={"task": task, "setting": key},
                n_boot=self.options.n_boot,
                seed=self.options.seed,
                unit=self.options.bootstrap_unit,
            )
            self.timings["comparisons"] += time.perf_counter() - t0

    def _one_scorer(self, i: int, scorer, task: str, key: str, ts, stats: dict) -> np.ndarray:
        t0 = time.perf_counter()
        scores = score_trials(scorer, ts, self.scoring)
        took = time.perf_counter() - t0
        self.timings["scoring"] += took
        self.scoring_s[scorer.name] = self.scoring_s.get(scorer.name, 0.0) + took
        if self.out_dir is not None:
            folder = self.out_dir / "scores" / ("" if i == 0 else safe_name(scorer.name))
            scored_trials(ts, scores).write(
                folder / f"{task}_{key}.txt"
            )  # unscored trials left out
        where = f"tasks.{task}.{key}" if i == 0 else f"scorers.{scorer.name}.tasks.{task}.{key}"
        t0 = time.perf_counter()
        conds, curves = condition_metrics(
            ts,
            scores,
            n_boot=self.options.n_boot,
            seed=self.options.seed,
            task=task,
            where=f"{where}.conditions",
            not_applicable=self.not_applicable,
            bootstrap_unit=self.options.bootstrap_unit,
            panel_ci=self.options.panel_ci,
        )
        self.timings["metrics"] += time.perf_counter() - t0
        block = trial_block(ts, scores, stats, conds)
        if block["missing_scores"]:
            self.not_applicable[f"{where}.missing_scores"] = (
                f"{block['missing_scores']} of {len(ts)} trials have no score (no number in the reply, or the "
                "request failed after retries): left out of the metrics and the score file, listed in `unscored`"
            )
        self.results[scorer.name][task][key] = block
        self.curves[scorer.name][task][key] = curves
        comb = conds.get("combined")
        shown = "n/a" if comb is None else f"{comb['eer']:.3f}"
        logger.info(
            "[text] %s %s %s: %d trials, combined EER %s", scorer.name, task, key, len(ts), shown
        )
        return scores


def _check_request(settings, tasks, bootstrap_unit: str, protocol: str):
    settings = [(int(p), int(l_)) for p, l_ in settings]
    if not settings:
        raise DataError("no (P, L) settings to evaluate")
    tasks = list(tasks)
    if not tasks:
        raise DataError("no tasks to evaluate", hint="tasks: [speaker, sex, age, accent]")
    if bootstrap_unit not in BOOTSTRAP_UNITS:
        raise DataError(
            f"bootstrap_unit is one of {', '.join(BOOTSTRAP_UNITS)}, not {bootstrap_unit!r}"
        )
    try:
        check_protocol(protocol)
    except ValueError as err:
        raise DataError(str(err)) from None
    return settings, tasks


def _by_P(settings) -> OrderedDict:
    by_P = OrderedDict()
    for p, l_ in settings:
        by_P.setdefault(p, []).append(l_)
    return by_P


def scorer_deviations(scorer) -> dict:
    """A scorer's own departures from the paper (``deviations()``, when it has one)."""
    get = getattr(scorer, "deviations", None)
    return dict(get() or {}) if callable(get) else {}


def run_deviations(
    config: TrialConfig,
    protocol: str,
    *,
    topic_on: bool,
    topic_metadata: bool,
    shared,
    n_cut: int,
    unit: str,
    scorers,
) -> dict:
    """Every way this run departs from the paper's ``protocol``: {name: sentence}."""
    out = trial_build_deviations(
        config, protocol, topic_on=topic_on, topic_metadata=topic_metadata, n_cut=n_cut
    )
    if shared.settings["enabled"]:
        out["shared_text"] = (
            f"{shared.n_removed} of {shared.n_utterances} utterances made mostly of word "
            f"{shared.settings['n']}-grams that {shared.settings['min_speakers']} or more speakers "
            "say (read passages) were removed before building trials; SPARC's protocol removes "
            "nothing (`shared_text: False` keeps them)"
        )
    out.update(provenance.bootstrap_deviation(unit))
    return provenance.merge_deviations(out, *(scorer_deviations(s) for s in scorers))


def _headline(results_tasks: dict):
    for task, by_setting in results_tasks.items():
        for key, block in by_setting.items():
            if block and block["conditions"].get("combined"):
                return block["conditions"]["combined"], f"tasks.{task}.{key}.conditions.combined"
    return None, None


def _ablations(results: dict, settings: list, not_applicable: dict):
    base = setting_key(*BASE_SETTING)
    keys = [setting_key(p, l_) for p, l_ in settings]
    if base not in keys or len(keys) < 2:
        not_applicable["ablations"] = (
            f"the base setting {base} is not evaluated"
            if base not in keys
            else f"only the base setting {base} is evaluated"
        )
        return None
    return {"base": base, "by_scorer": ablation_deltas(results, base)}


@contextmanager
def heap_frozen():
    """The garbage collector kept out of the block: the objects alive now (the corpus and its
    appearances) frozen, and no automatic collection while trials are made and scored. Millions of
    plans and sides trigger full collections again and again, each walking every object made so
    far, a cost that grows faster than the corpus; the block makes few reference cycles, and the
    collector, enabled again after it, frees them."""
    gc.freeze()
    with collector_paused():
        try:
            yield
        finally:
            gc.unfreeze()


@contextmanager
def frozen_once_built():
    """The garbage collector paused while the block builds what the run keeps (the corpus), and
    everything alive at its end frozen (``gc.freeze``: left out of collections until unfrozen, as
    :func:`heap_frozen` does when trials are done; still freed when no longer referenced).
    Collections while loading walk every record read so far, again and again (a quarter of the
    load time at 1.5M utterances), and would walk them again right after."""
    with collector_paused():
        try:
            yield
        finally:
            gc.freeze()


@contextmanager
def collector_paused():
    """No automatic collection in the block; the collector as it was after it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _all_settings(run, clean, config, settings, tasks, usable) -> tuple:
    """Trials and results of every task at every (P, L); returns (topic control on, probes cut)."""
    topic_on, n_cut = False, 0
    for P, Ls in _by_P(settings).items():
        t0 = time.perf_counter()
        builder = TrialBuilder(clean, replace(config, P=P, L=max(Ls)), L_max=max(Ls))
        run.timings["trials"] += time.perf_counter() - t0
        topic_on, n_cut = topic_on or builder.topic_on, n_cut + builder.n_cut
        for task in tasks:
            if usable[task] is not None:
                for L in Ls:
                    run.unusable(task, setting_key(P, L), usable[task])
                continue
            t0 = time.perf_counter()
            sets = builder.build(task, Ls)
            stats = builder.stats(task)
            run.timings["trials"] += time.perf_counter() - t0
            for L in Ls:
                run.setting(task, setting_key(P, L), sets[L], stats)
        builder = sets = None  # freed before the next P's builder is made (not both held)
    return topic_on, n_cut


def _ready_scorers(scorer, manifest) -> list:
    """The scorers (one or a list), each checked by its ``preflight`` and against the corpus's
    language before any work: a missing API key or model, or an English-only scorer on a German
    corpus, fails here."""
    from ...data.languages import check_served

    scorers = scorer_list(scorer)
    for s in scorers:
        served = getattr(s, "languages", None)  # a scorer need not subclass TextScorer
        check_served(f"the {s.name} text scorer", manifest.language, served)
        s.preflight()
    logger.info(
        "[text] scorer %s; %d utterances", ", ".join(s.name for s in scorers), len(manifest)
    )
    return scorers


def evaluate_text(
    manifest,
    scorer,
    *,
    tasks=("speaker",),
    settings=((200, 20),),
    config: Optional[TrialConfig] = None,
    output_folder=None,
    options: TextEvaluationOptions = TextEvaluationOptions(),
    run_info: Optional[dict] = None,
    scoring: Optional[ScoringRunner] = None,
) -> dict:
    """Evaluate ``scorer`` (one, or a list scored on the same trials) on ``manifest``; returns the
    results dict (and writes it when ``output_folder`` is given: results.json, report.md,
    roc_<task>.png, trials/, scores/). ``options`` (:class:`~.settings.TextEvaluationOptions`):
    the bootstrap (``n_boot``, ``seed``, default the trial config's, ``bootstrap_unit``), the
    paper ``protocol`` that ``run.deviations`` are listed against (:mod:`.protocol`), the name in
    reports, what is written, and ``panel_ci`` (CIs for the panel beyond EER too). ``scoring``
    says how the trials are scored (:class:`~.ray_scoring.ScoringRunner`: locally or over Ray
    actors; None: at once, here)."""
    t_start = time.perf_counter()
    config = config or TrialConfig()
    options = options if options.seed is not None else replace(options, seed=config.seed)
    settings, tasks = _check_request(settings, tasks, options.bootstrap_unit, options.protocol)
    scorers = _ready_scorers(scorer, manifest)
    out_dir = Path(output_folder) if output_folder else None
    run = _TextRun(scorers, tasks, options, out_dir, scoring)
    clean, shared = _without_shared_text(run, manifest, config)
    usable = usable_tasks(tasks, clean.speaker_attributes())
    with heap_frozen():
        topic_on, n_cut = _all_settings(run, clean, config, settings, tasks, usable)
    deviations = run_deviations(
        config,
        options.protocol,
        topic_on=topic_on,
        topic_metadata=has_topic_metadata(clean),
        shared=shared,
        n_cut=n_cut,
        unit=options.bootstrap_unit,
        scorers=scorers,
    )
    request = (config, settings, tasks)
    doc = _document(run, manifest, request, shared, deviations, run_info, t_start)
    if out_dir is not None:
        write_outputs(out_dir, doc, run.curves, plots=options.plots, removed_ids=shared.removed_ids)
    return doc


def _without_shared_text(run, manifest, config: TrialConfig) -> tuple:
    """(the manifest without shared text, what was removed), timed and logged."""
    t0 = time.perf_counter()
    clean, shared = remove_shared_text(manifest, config.shared_text)
    run.timings["shared_text"] = time.perf_counter() - t0
    st = shared.settings
    logger.info(
        f"[text] shared text: removed {shared.n_removed} of {shared.n_utterances} utterances (n={st['n']}, "
        f"min_speakers={st['min_speakers']}, min_fraction={st['min_fraction']}, enabled={st['enabled']})"
    )
    return clean, shared


def _document(
    run: _TextRun, manifest, request: tuple, shared, deviations, run_info, t_start: float
) -> dict:
    """results.json as a dict (see the module docstring); ``request``: (trial config, (P, L)
    settings, tasks)."""
    config, settings, tasks = request
    scorers, options = run.scorers, run.options
    n_boot = options.n_boot
    na = run.not_applicable
    first = scorers[0].name
    headline, headline_from = _headline(run.results[first])
    if headline is None:
        na["overall"] = "no task and setting has both positive and negative trials"
    na["per_speaker"] = "text evaluation: metrics are per task, setting and condition"
    ablations = _ablations(run.results, settings, na)
    if len(scorers) > 1 and not n_boot:
        na["comparisons"] = "bootstrap disabled (n_boot = 0): no paired differences between scorers"
    run.timings["total"] = time.perf_counter() - t_start
    info = OrderedDict(
        dataset=options.dataset or getattr(manifest, "name", None),
        features="text",
        anonymizer=None,
        scenario=None,
        hparams=None,
        seed=options.seed,
        timings_s={k: round(v, 3) for k, v in run.timings.items()},
        scorer=first,
        scorers=[s.name for s in scorers],
        scorer_settings=scorers[0].settings(),
        scorer_report=scorers[0].report(),
        trial_config=config.to_dict(),
        settings=[setting_key(p, l_) for p, l_ in settings],
        tasks=tasks,
        n_boot=n_boot,
        bootstrap_unit=options.bootstrap_unit,
        protocol=options.protocol,
        overall_from=headline_from,
        environment=provenance.environment(),
        deviations=deviations,
        **provenance.versions(),
    )
    extra = dict(run_info or {})
    info["deviations"] = provenance.merge_deviations(
        info["deviations"], extra.pop("deviations", None)
    )
    info.update(extra)
    doc = OrderedDict(
        run=info, overall=headline, per_speaker=None, segments={}, tasks=run.results[first]
    )
    if len(scorers) > 1:
        doc["scorers"] = OrderedDict(
            (
                s.name,
                {
                    "settings": s.settings(),
                    "report": s.report(),
                    "scoring_s": round(run.scoring_s.get(s.name, 0.0), 3),
                    "tasks": run.results[s.name],
                },
            )
            for s in scorers
        )
    doc.update(
        ablations=ablations,
        comparisons=run.comparisons,
        shared_text=shared.stats(),
        not_applicable=na,
    )
    return _json_safe(doc)


def _json_safe(obj):
    from ...metrics.results import json_safe as safe

    return safe(obj)


def check_column_mapping(manifest, columns) -> None:
    """A SPARC column mapping must name columns that exist: every mapped optional field must
    have at least one value (required fields are checked by the loader)."""
    if not columns:
        return
    if isinstance(columns, (str, Path)):
        from ...data.corpora.sparc import read_column_mapping

        mapping = read_column_mapping(columns)
        import yaml

        given = yaml.safe_load(Path(columns).read_text(encoding="utf-8")) or {}
        columns = {k: mapping[k] for k in given}
    field_of = {
        "sex": lambda u: u.sex,
        "age": lambda u: u.age,
        "accent": lambda u: u.accent,
        "series": lambda u: u.series,
    }
    for fld, col in columns.items():
        if fld in ("id", "speaker", "episode", "text", "audio", "extra_columns"):
            continue
        get = field_of.get(fld, lambda u, f=fld: u.extra.get(f))
        if not any(get(u) is not None for u in manifest):
            raise DataError(
                f"the column mapping names {col!r} for {fld!r}, but no row has a value there",
                hint="check the column names of the export (a misspelt or missing column)",
            )


def load_text_corpus(settings: TextRunSettings):
    """(manifest, deviations): the corpus as the text attackers read it (the words the speech
    says, :mod:`sparc_eval.data.words`), and the departure that ``words: reference`` names."""
    from ...data.corpora import load_corpus

    with frozen_once_built():  # millions of records, no reference cycle, alive all run long
        manifest = load_corpus(settings.data_folder, columns=settings.columns)
    check_column_mapping(manifest, settings.columns)
    manifest = manifest.with_language(settings.language)
    if settings.anonymized:  # a corpus anonymized by another tool: its utterances say so
        manifest = mark_anonymized(manifest, keeps_words=settings.anon_keeps_words)
    deviations = reference_text_deviation(manifest, settings.words)
    return spoken_manifest(manifest, settings.words), deviations


def evaluate_from_settings(settings: TextRunSettings) -> Path:
    """What ``recipes/evaluate_text.py`` runs: load the corpus, evaluate, write; returns results.json."""
    for scorer in settings.scorers:
        scorer.preflight()  # before loading anything
    manifest, words_deviation = load_text_corpus(settings)
    evaluate_text(
        manifest,
        list(settings.scorers),
        tasks=list(settings.tasks),
        settings=list(settings.pl_settings),
        config=settings.trial_config,
        output_folder=settings.output_folder,
        options=settings.evaluation_options(),
        run_info=settings.run_info(words_deviation),
        scoring=settings.scoring,
    )
    return settings.output_folder / "results.json"


def evaluate_from_hparams(hparams: dict) -> Path:
    """:func:`evaluate_from_settings` of ``TextRunSettings.from_hparams(hparams)`` (a shorthand for
    callers that hold an hparams dict; the recipe reads the settings itself)."""
    return evaluate_from_settings(TextRunSettings.from_hparams(hparams))
