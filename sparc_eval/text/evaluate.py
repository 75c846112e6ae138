"""Run a transcript scorer over tasks x (P, L) settings x conditions; write results and report.

:func:`evaluate_text` is the library entry point (the recipe ``recipes/evaluate_text.py``
only parses hparams and calls :func:`evaluate_from_hparams`). For each setting it builds the
trials (:mod:`.trials`, after removing shared text, :mod:`.shared_text`), fits the scorer on
the unique utterance texts of that task and setting, scores the trials, and computes the
metric block of GUIDE section 4 (EER, AUC, TPR at 1% and 0.1% FPR, minDCF, bootstrap CIs,
from :func:`sparc_eval.metrics.evaluate_trials`) per condition. ``results.json``::

    {"run": {...}, "overall": <headline block>, "per_speaker": null, "segments": {},
     "tasks": {"speaker": {"P200_L20": {"conditions": {"combined": {...}, "easy": {...},
                                                       "hard": null, ...},
                                        "trials": {...counts...}, "missing_scores": 0}}},
     "shared_text": {...}, "not_applicable": {"tasks.speaker.P200_L20.hard": "why", ...}}

A condition without both positive and negative trials is ``null`` and its reason is in
``not_applicable``; so is a task that no speaker has a label for. ``overall`` repeats the
first task's ``combined`` block at the first setting (named in ``run.overall_from``).
Trials with no score (an LLM reply without a number, a failed request) are left out of the
metrics and counted in ``missing_scores``.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Optional

import numpy as np

from ..atomic import write_json, write_text
from ..errors import DataError
from .shared_text import SharedTextConfig, detect_shared_text
from .trials import CONDITIONS, TRIAL_TYPES, TYPE_CONDITIONS, TrialBuilder, TrialConfig, task_labeller

CONDITION_TYPES = {c: tuple(t for t in TRIAL_TYPES if c in TYPE_CONDITIONS[t]) for c in CONDITIONS}


def setting_key(P: int, L: int) -> str:
    return f"P{int(P)}_L{int(L)}"


def parse_settings(P=None, L=None, settings=None) -> list:
    """[(P, L), ...]: explicit ``settings`` pairs, else every combination of ``P`` x ``L``."""
    if settings:
        out = []
        for s in settings:
            if isinstance(s, str):
                m = re.fullmatch(r"P(\d+)_L(\d+)", s.strip())
                if not m:
                    raise DataError(f"setting {s!r} is not P<P>_L<L>")
                out.append((int(m.group(1)), int(m.group(2))))
            else:
                p, l_ = s
                out.append((int(p), int(l_)))
        return out
    Ps = [int(x) for x in np.atleast_1d(P if P is not None else [200])]
    Ls = [int(x) for x in np.atleast_1d(L if L is not None else [20])]
    return [(p, l_) for p in Ps for l_ in Ls]


def remove_shared_text(manifest, config: SharedTextConfig):
    """(manifest without the detected shared text, SharedTextResult)."""
    result = detect_shared_text(manifest, config)
    if not result.removed_ids:
        return manifest, result
    gone = set(result.removed_ids)
    return manifest.subset(lambda u: u.id not in gone), result


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "scorer"


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
    return f"no {which} trials in condition {condition} ({have}){why}; a condition needs both classes"


def condition_metrics(trials, scores, *, n_boot: int, seed: int, task: str, where: str, not_applicable: dict,
                      fpr_targets=(0.01, 0.001)):
    """{condition: block|None}, {condition: curves}: metrics of each condition of one trial set."""
    from ..metrics import evaluate_trials

    finite = np.isfinite(scores)
    types = trials.types
    out, curves = OrderedDict(), {}
    for cond in CONDITIONS:
        mask = trials.condition_mask(cond) & finite
        counts = {t: int(((types == t) & mask).sum()) for t in CONDITION_TYPES[cond]}
        y = trials.labels[mask]
        if y.size == 0 or y.all() or not y.any():
            out[cond] = None
            not_applicable[f"{where}.{cond}"] = _reason(task, cond, counts)
            continue
        idx = np.flatnonzero(mask)
        enroll = [trials.records[i]["enroll"]["id"] for i in idx]
        test = [trials.records[i]["probe"]["id"] for i in idx]
        ev = evaluate_trials(enroll, test, scores[mask], y, n_boot=n_boot, seed=seed, fpr_targets=fpr_targets)
        out[cond] = ev["overall"]
        curves[cond] = ev.curves
    return out, curves


def write_score_file(path, trials, scores) -> None:
    """Kaldi-style ``<enroll-id> <test-id> <score> <target|nontarget>`` (``nan`` for no score)."""
    from ..atomic import atomic_open

    with atomic_open(path, "w", encoding="utf-8") as handle:
        for rec, s, y in zip(trials.records, scores, trials.labels):
            score = "nan" if not np.isfinite(s) else repr(float(s))
            handle.write(f"{rec['enroll']['id']} {rec['probe']['id']} {score} {'target' if y else 'nontarget'}\n")


def evaluate_text(manifest, scorer, *, tasks=("speaker",), settings=((200, 20),), config: Optional[TrialConfig] = None,
                  output_folder=None, n_boot: int = 1000, seed: int = 0, dataset: Optional[str] = None,
                  plots: bool = True, save_trials: bool = True, trials_with_text: bool = False,
                  run_info: Optional[dict] = None, log=print) -> dict:
    """Evaluate ``scorer`` on ``manifest``; returns the results dict (and writes it when
    ``output_folder`` is given: results.json, report.md, roc_<task>.png, trials/, scores/)."""
    t_start = time.perf_counter()
    config = config or TrialConfig()
    settings = [(int(p), int(l_)) for p, l_ in settings]
    if not settings:
        raise DataError("no (P, L) settings to evaluate")
    tasks = list(tasks)
    if not tasks:
        raise DataError("no tasks to evaluate", hint="tasks: [speaker, sex, age, accent]")
    scorer.preflight()  # a missing API key or model fails here, before any work
    out_dir = Path(output_folder) if output_folder else None
    timings = {}
    log(f"[text] scorer {scorer.name}; {len(manifest)} utterances")

    t0 = time.perf_counter()
    clean, shared = remove_shared_text(manifest, config.shared_text)
    timings["shared_text"] = time.perf_counter() - t0
    log(f"[text] shared text: removed {shared.n_removed} of {shared.n_utterances} utterances "
        f"(n={config.shared_text.n}, min_speakers={config.shared_text.min_speakers}, "
        f"min_fraction={config.shared_text.min_fraction}, enabled={config.shared_text.enabled})")

    not_applicable = OrderedDict()
    results_tasks = OrderedDict((t, OrderedDict()) for t in tasks)
    all_curves = {t: OrderedDict() for t in tasks}
    by_P = OrderedDict()
    for p, l_ in settings:
        by_P.setdefault(p, []).append(l_)
    attributes = clean.speaker_attributes()
    usable = {}
    for task in tasks:
        try:
            labels = task_labeller(task, attributes)
        except DataError as err:
            usable[task] = str(err)
            continue
        n_known = sum(v is not None for v in labels.values())
        usable[task] = None if n_known >= 2 else f"{n_known} speaker(s) have a {task} label; the task needs two"
    timings["trials"] = timings["scoring"] = timings["metrics"] = 0.0
    for P, Ls in by_P.items():
        t0 = time.perf_counter()
        builder = TrialBuilder(clean, replace(config, P=P, L=max(Ls)), L_max=max(Ls))
        timings["trials"] += time.perf_counter() - t0
        for task in tasks:
            if usable[task] is not None:
                for L in Ls:
                    results_tasks[task][setting_key(P, L)] = None
                    not_applicable[f"tasks.{task}.{setting_key(P, L)}"] = usable[task]
                continue
            t0 = time.perf_counter()
            sets = builder.build(task, Ls)
            stats = builder.stats(task)
            timings["trials"] += time.perf_counter() - t0
            for L in Ls:
                key = setting_key(P, L)
                ts = sets[L]
                where = f"tasks.{task}.{key}.conditions"
                if out_dir is not None and save_trials:
                    ts.write_jsonl(out_dir / "trials" / f"{task}_{key}.jsonl", with_text=trials_with_text)
                t0 = time.perf_counter()
                if len(ts):
                    scorer.fit(ts.texts)
                    scores = np.asarray(scorer.score(ts), dtype=float)
                else:
                    scores = np.zeros(0)
                if scores.shape != (len(ts),):
                    raise DataError(f"scorer {scorer.name} returned {scores.shape} scores for {len(ts)} trials")
                timings["scoring"] += time.perf_counter() - t0
                if out_dir is not None:
                    write_score_file(out_dir / "scores" / f"{task}_{key}.txt", ts, scores)
                t0 = time.perf_counter()
                conds, curves = condition_metrics(ts, scores, n_boot=n_boot, seed=seed, task=task, where=where,
                                                  not_applicable=not_applicable)
                timings["metrics"] += time.perf_counter() - t0
                missing = int((~np.isfinite(scores)).sum())
                if missing:
                    not_applicable[f"tasks.{task}.{key}.missing_scores"] = (
                        f"{missing} of {len(ts)} trials have no score (no number in the reply, or the request "
                        "failed after retries) and are left out of the metrics")
                results_tasks[task][key] = OrderedDict(
                    conditions=conds,
                    trials={"n": len(ts), "n_target": int(ts.labels.sum()), "n_nontarget": int((~ts.labels).sum()),
                            "by_type": ts.type_counts(), "unique_texts": len(ts.texts), "unique_sides": len(ts.sides),
                            **stats},
                    missing_scores=missing,
                )
                all_curves[task][key] = curves
                comb = conds.get("combined")
                shown = "n/a" if comb is None else f"{comb['eer']:.3f}"
                log(f"[text] {task} {key}: {len(ts)} trials, combined EER {shown}")

    headline, headline_from = None, None
    for task in tasks:
        for key, block in results_tasks[task].items():
            if block and block["conditions"].get("combined"):
                headline, headline_from = block["conditions"]["combined"], f"tasks.{task}.{key}.conditions.combined"
                break
        if headline:
            break
    if headline is None:
        not_applicable["overall"] = "no task and setting has both positive and negative trials"
    not_applicable["per_speaker"] = "text evaluation: metrics are per task, setting and condition"
    timings["total"] = time.perf_counter() - t_start
    run = OrderedDict(
        dataset=dataset or getattr(manifest, "name", None), features="text", anonymizer=None, scenario=None,
        hparams=None, seed=seed, timings_s={k: round(v, 3) for k, v in timings.items()},
        scorer=scorer.name, scorer_settings=scorer.settings(), scorer_report=scorer.report(),
        trial_config=config.to_dict(), settings=[setting_key(p, l_) for p, l_ in settings], tasks=tasks,
        n_boot=n_boot, overall_from=headline_from,
    )
    run.update(run_info or {})
    doc = OrderedDict(run=run, overall=headline, per_speaker=None, segments={}, tasks=results_tasks,
                      shared_text=shared.stats(), not_applicable=not_applicable)
    doc = _json_safe(doc)
    if out_dir is not None:
        write_outputs(out_dir, doc, all_curves, plots=plots, removed_ids=shared.removed_ids)
    return doc


def _json_safe(obj):
    from ..metrics.results import _json_safe as safe

    return safe(obj)


# ----------------------------------------------------------------------------- outputs


def write_outputs(out_dir, doc: dict, curves: dict, *, plots: bool = True, removed_ids=()) -> dict:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    if removed_ids:
        write_text(out_dir / "shared_text_removed.txt", "\n".join(removed_ids) + "\n")
    plot_files = {}
    if plots:
        for task, by_setting in curves.items():
            if any(by_setting.values()):
                path = out_dir / f"roc_{_safe(task)}.png"
                plot_roc_grid(path, by_setting, title=f"{doc['run'].get('scorer')}: {task}")
                plot_files[task] = path.name
                written[path.name] = path
    write_json(out_dir / "results.json", doc)
    written["results.json"] = out_dir / "results.json"
    write_text(out_dir / "report.md", render_report(doc, plot_files))
    written["report.md"] = out_dir / "report.md"
    return written


def plot_roc_grid(path, by_setting: dict, *, title: str = "") -> Path:
    """One panel per (P, L) setting, one ROC line per condition (matplotlib, Agg)."""
    import io

    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from ..atomic import atomic_open

    keys = [k for k, v in by_setting.items() if v]
    n = len(keys)
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 4.4 * rows), squeeze=False)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    for ax, key in zip(axes.ravel(), keys):
        for i, cond in enumerate(CONDITIONS):
            c = by_setting[key].get(cond)
            if not c:
                continue
            ax.plot(c["fpr"], c["tpr"], lw=1.4, color=f"C{i}", label=f"{cond} (EER {c['eer']:.3f})")
        ax.plot([0, 1], [0, 1], ls=":", c="grey", lw=1)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.01)
        ax.set_title(key)
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=7)
    if title:
        fig.suptitle(title)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    with atomic_open(path, "wb") as handle:
        handle.write(buf.getvalue())
    return Path(path)


def _f(x, d=3):
    return "n/a" if x is None else f"{x:.{d}f}"


def _ci(pair, d=3):
    if not pair or pair[0] is None:
        return ""
    return f" [{pair[0]:.{d}f}, {pair[1]:.{d}f}]"


def _cell(block) -> str:
    if block is None:
        return "n/a"
    ci = block.get("ci95") or {}
    tpr = block.get("tpr_at_fpr") or {}
    tci = ci.get("tpr_at_fpr") or {}
    parts = [f"EER {_f(block['eer'])}{_ci(ci.get('eer'))}", f"AUC {_f(block['auc'])}{_ci(ci.get('auc'))}"]
    for k in ("0.01", "0.001"):
        if k in tpr:
            parts.append(f"TPR@{float(k) * 100:g}%FPR {_f(tpr[k])}{_ci(tci.get(k))}")
    parts.append(f"n {block['n_target']}+/{block['n_nontarget']}-")
    return "<br>".join(parts)


def render_report(doc: dict, plot_files: Optional[dict] = None) -> str:
    run = doc["run"]
    st = doc.get("shared_text") or {}
    lines = [f"# SPARC transcript-only evaluation: {run.get('scorer')}", ""]
    lines += [f"- dataset: {run.get('dataset')}", f"- scorer: {run.get('scorer')} {run.get('scorer_settings')}",
              f"- settings: {', '.join(run.get('settings') or [])}; seed {run.get('seed')}; "
              f"bootstrap resamples {run.get('n_boot')}"]
    rep = run.get("scorer_report") or {}
    if rep:
        lines.append(f"- scorer counters: {rep}")
    settings = st.get("settings") or {}
    lines += ["", "## Shared text removed", ""]
    if settings.get("enabled", True):
        frac = st.get("fraction_removed", 0.0)
        lines.append(
            f"{st.get('n_removed', 0)} of {st.get('n_utterances', 0)} utterances ({100 * frac:.1f}%; "
            f"{st.get('n_words_removed', 0)} of {st.get('n_words', 0)} words) were removed before building probes "
            f"and enrollments: more than {settings.get('min_fraction')} of their distinct word "
            f"{settings.get('n')}-grams are spoken by {settings.get('min_speakers')} or more speakers "
            f"(read passages, scripted prompts). Settings: hparams `shared_text` (true/false), "
            f"`shared_text_n`, `shared_text_min_speakers`, `shared_text_min_fraction`; ids in "
            f"`shared_text_removed.txt`.")
        for ex in st.get("examples") or []:
            lines.append(f"- `{ex['id']}` ({ex['shared_fraction']:.2f}): {ex['text']}")
    else:
        lines.append("Shared-text detection is disabled (`shared_text: False`).")
    na = doc.get("not_applicable") or {}
    for task, by_setting in (doc.get("tasks") or {}).items():
        lines += ["", f"## Task: {task}", ""]
        lines += ["| setting | " + " | ".join(CONDITIONS) + " |", "|---|" + "---|" * len(CONDITIONS)]
        for key, block in by_setting.items():
            if block is None:
                lines.append(f"| {key} | " + " | ".join(["n/a"] * len(CONDITIONS)) + " |")
                continue
            lines.append(f"| {key} | " + " | ".join(_cell(block["conditions"].get(c)) for c in CONDITIONS) + " |")
        lines += ["", "Trials and what was skipped:", "",
                  "| setting | EP | HP | EN | HN | probes | cut | skipped (strict) | beyond cap | "
                  "appearances short for P / L | excluded overlap / name / topic | missing scores |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for key, block in by_setting.items():
            if block is None:
                continue
            t = block["trials"]
            bt = t["by_type"]
            lines.append(
                f"| {key} | {bt['easy_positive']} | {bt['hard_positive']} | {bt['easy_negative']} | "
                f"{bt['hard_negative']} | {t['probes']} | {t['probes_cut']} | {t['probes_skipped_strict']} | "
                f"{t['probes_beyond_cap']} | {t['appearances_too_short_for_P']} / {t['appearances_too_short_for_L']} "
                f"of {t['appearances']} | {t['excluded_overlap']} / {t['excluded_name']} / "
                f"{t['excluded_topic_similarity']} | {block['missing_scores']} |")
        notes = [(k, v) for k, v in na.items() if k.startswith(f"tasks.{task}.")]
        if notes:
            lines += ["", "Not applicable:", ""] + [f"- `{k}`: {v}" for k, v in notes]
        if plot_files and task in plot_files:
            lines += ["", f"![ROC {task}]({plot_files[task]})"]
    lines += [
        "", "## Definitions", "",
        "- Probe: whole utterances from the start of a (speaker, episode) until the word count is within P +- "
        "tolerance; an utterance that jumps over the window is cut at a word boundary to P words (or, with "
        "`strict`, the probe is skipped); further probes follow without overlap, up to `max_probes`.",
        "- Enrollment: same episode = the last L utterances of the partner in the probe's episode that are not "
        "in the probe; different episode = the first L utterances of the partner's appearance in another episode.",
        "- Trial types: EP same speaker/label, same episode; HP same speaker/label, other episode; EN different, "
        "other episode; HN different, same episode (attribute tasks pair different speakers only). Conditions: "
        "easy = EP+EN, hard = HP+HN, same_topic = EP+HN, different_topic = HP+EN, combined = all.",
        "- EER (SpeechBrain / VoicePrivacy definition), AUC, TPR at the largest threshold with FPR <= 1% and "
        "0.1% (no interpolation); 95% percentile bootstrap CIs over resampled trials. A condition without both "
        "classes is n/a, never a number.",
    ]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- hparams entry


TRIAL_KEYS = ("tolerance", "strict", "max_probes", "partners", "attribute_partners", "match_negatives",
              "negatives_cross_series", "overlap_min_words", "name_screen", "name_fields", "topic_control",
              "topic_max_similarity", "topic_sim_edges", "topic_jaccard_edges")


def trial_config_from_hparams(hparams: dict) -> TrialConfig:
    values = {k: hparams[k] for k in TRIAL_KEYS if k in hparams and hparams[k] is not None}
    if "match_negatives" in values:
        values["match_negatives"] = tuple(values["match_negatives"] or ())
    for k in ("topic_sim_edges", "topic_jaccard_edges", "name_fields"):
        if k in values:
            values[k] = tuple(values[k])
    shared = hparams.get("shared_text", True)
    shared_cfg = SharedTextConfig(
        enabled=bool(shared if not isinstance(shared, dict) else shared.get("enabled", True)),
        n=int(hparams.get("shared_text_n", 4)), min_speakers=int(hparams.get("shared_text_min_speakers", 5)),
        min_fraction=float(hparams.get("shared_text_min_fraction", 0.30)))
    try:
        return TrialConfig(seed=int(hparams.get("seed", 0)), shared_text=shared_cfg, **values)
    except (TypeError, ValueError) as err:
        raise DataError(f"trial settings: {err}") from None


def check_column_mapping(manifest, columns) -> None:
    """A SPARC column mapping must name columns that exist: every mapped optional field must
    have at least one value (required fields are checked by the loader)."""
    if not columns:
        return
    if isinstance(columns, (str, Path)):
        from ..corpora.sparc import read_column_mapping

        mapping = read_column_mapping(columns)
        import yaml

        given = yaml.safe_load(Path(columns).read_text(encoding="utf-8")) or {}
        columns = {k: mapping[k] for k in given}
    field_of = {"sex": lambda u: u.sex, "age": lambda u: u.age, "accent": lambda u: u.accent,
                "series": lambda u: u.series}
    for fld, col in columns.items():
        if fld in ("id", "speaker", "episode", "text", "audio", "extra_columns"):
            continue
        get = field_of.get(fld, lambda u, f=fld: u.extra.get(f))
        if not any(get(u) is not None for u in manifest):
            raise DataError(f"the column mapping names {col!r} for {fld!r}, but no row has a value there",
                            hint="check the column names of the export (a misspelt or missing column)")


def evaluate_from_hparams(hparams: dict, *, log=print) -> Path:
    """What ``recipes/evaluate_text.py`` runs: load the corpus, evaluate, write; returns results.json."""
    from ..corpora import load_corpus

    for need in ("data_folder", "output_folder", "scorer"):
        if hparams.get(need) in (None, ""):
            raise DataError(f"hparams: {need!r} is required")
    scorer = hparams["scorer"]
    scorer.preflight()  # before loading anything
    config = trial_config_from_hparams(hparams)
    settings = parse_settings(hparams.get("P"), hparams.get("L"), hparams.get("settings"))
    columns = hparams.get("columns")
    manifest = load_corpus(hparams["data_folder"], columns=columns)
    check_column_mapping(manifest, columns)
    out_dir = Path(hparams["output_folder"])
    digest = hashlib.sha256(repr(sorted((k, repr(v)) for k, v in hparams.items() if k != "scorer")).encode())
    doc = evaluate_text(
        manifest, scorer, tasks=hparams.get("tasks") or ["speaker"], settings=settings, config=config,
        output_folder=out_dir, n_boot=int(hparams.get("n_boot", 1000)), seed=int(hparams.get("seed", 0)),
        dataset=hparams.get("dataset") or str(hparams["data_folder"]), plots=bool(hparams.get("plots", True)),
        save_trials=bool(hparams.get("save_trials", True)),
        trials_with_text=bool(hparams.get("trials_with_text", False)),
        run_info={"hparams_file": hparams.get("hparams_file"), "overrides": hparams.get("overrides"),
                  "hparams_sha256": digest.hexdigest()[:16]}, log=log)
    del doc
    return out_dir / "results.json"
