"""results.json and report.md: the library entry point other parts call.

:func:`evaluate_trials` turns trials (enrollment id, test id, score, label) into the
``overall`` / ``per_speaker`` / ``segments`` / ``not_applicable`` parts of results.json
(:doc:`/contracts`); :func:`write_report` writes ``results.json``, ``report.md`` and the plots
atomically. A metric that cannot be computed is ``None`` (JSON ``null``) and the reason goes into
``not_applicable``; nothing is ever NaN.

``not_applicable`` keys: ``overall`` (one class), ``overall.ci95`` (bootstrap disabled),
``overall.ci95.dropped`` (resamples left with one class, speaker bootstrap),
``overall.eer_threshold`` (convex-hull EER), ``per_speaker`` (no utt2spk),
``per_speaker.<spk>.eer``, ``segments`` (no attributes / no utt2spk),
``segments.<attribute>.<value>`` (fewer than 3 speakers: skipped),
``segments.<attribute>.<value>.intra_eer|inter_eer``, ``segments.accent_left_out.<label>`` (an
accent label in no segment: missing or naming no accent), and ``plots.<name>``.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple, Optional

import numpy as np

from ..atomic import write_json, write_text
from ..errors import DataError
from ..provenance import report_lines, versions
from .bootstrap import SPEAKER_UNITS, UNIT_WORDS, bootstrap_metrics, sorted_codes
from .breakdown import per_speaker_eer, segment_eers
from .core import (
    Counts,
    MetricSettings,
    SortedTrials,
    check_trials,
    compact,
    fpr_key,
    group_counts,
    point_metrics,
    roc_points,
    sort_trials,
    thin_curve,
)
from .panel import (
    empty_panel,
    low_fpr,
    mean_speaker_eer,
    panel_ci_hook,
    panel_point,
    topn_linkability,
    worst_speakers,
)
from .scores import LABEL_WORDS, map_ids
from .settings import BootstrapSettings, EvaluationSettings, SegmentSettings, trial_settings
from .small import effective_speakers, small_evaluation, small_note

RUN_KEYS = ("dataset", "features", "anonymizer", "scenario", "hparams", "seed", "timings_s")


class Evaluation(dict):
    """The results.json parts (a plain dict to ``json``), plus attributes json ignores:
    ``curves`` (thinned ROC points for the plots), ``details`` (thresholds, both EER variants,
    bootstrap settings) and ``timings_s``."""

    curves: Optional[dict] = None
    details: Optional[dict] = None
    timings_s: Optional[dict] = None


def labels_to_bool(labels) -> np.ndarray:
    """Booleans from booleans, 0/1, or the words ``target``/``nontarget``."""
    y = np.asarray(labels)
    if y.dtype.kind in "USO":
        words = y.astype(str)
        bad = ~np.isin(words, list(LABEL_WORDS))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"label {i} (0-based) is {words[i]!r}", hint="labels are 'target' or 'nontarget'"
            )
        return words == "target"
    return y


def _none_if_nan(x):
    if x is None:
        return None
    x = float(x)
    return None if not np.isfinite(x) else x


def evaluate_trials(
    enroll_ids,
    test_ids,
    scores,
    labels,
    *,
    utt2spk: Optional[dict] = None,
    speakers: Optional[dict] = None,
    weights=None,
    enroll2spk: Optional[dict] = None,
    settings: Optional[EvaluationSettings] = None,
    llr: Optional[bool] = None,
    per_speaker: bool = True,
    panel_ci: bool = True,
) -> Evaluation:
    """Every metric of a trial list, as the results.json parts.

    - ``enroll_ids``, ``test_ids``: per trial; enrollment ids are speaker ids (speaker-level
      enrollment) or utterance ids found in ``utt2spk``.
    - ``labels``: booleans, 0/1 or ``target``/``nontarget`` words.
    - ``utt2spk``: test id -> speaker; enables ``per_speaker`` and segments (a test id missing
      from it is a DataError).
    - ``speakers``: speaker -> raw attributes (sex, age, accent, ...), turned into segment
      values by :func:`sparc_eval.data.attributes.segment_table`; every trial speaker (test and
      enrollment) must be listed (DataError naming the missing ids); accents are grouped by
      ``settings.segments.accent_grouping``, and labels that form no segment (missing, or saying
      nothing about the accent) are listed in ``not_applicable``.
    - ``settings``: an :class:`~sparc_eval.metrics.settings.EvaluationSettings` (default:
      :func:`~sparc_eval.metrics.settings.trial_settings`, the trial unit): the metrics (EER
      method, TPR@FPR targets, minDCF), the bootstrap (``n_boot`` resamples, 0 disabling CIs, of
      its unit: ``two_way``, ``speaker``, ``trial``, :mod:`sparc_eval.metrics.bootstrap`), the
      segments and ``min_verdict_speakers``. The speaker units need ``utt2spk``; two-way needs
      each enrollment id's speaker (a speaker of ``utt2spk``, an utterance it maps, or
      ``enroll2spk``) and otherwise holds the enrolled side fixed, saying so in
      ``details["bootstrap"]["enrollment_side"]``; what ran is in ``details["bootstrap"]``.
      Below ``min_verdict_speakers`` test speakers, or with a degenerate EER interval,
      ``overall["small_evaluation"]`` says so, with the counts and a resampling-free bound
      (:mod:`sparc_eval.metrics.small`); otherwise it is None.
    - ``per_speaker``: False skips the per-speaker EERs (None) where a caller reads only the
      overall metrics (the text evaluation: one EER loop per speaker and condition otherwise).
    - ``llr``: the scores are log-likelihood ratios (then ``act_cllr``; otherwise the same number
      is ``act_cllr_scores_as_llrs``); ``panel_ci``: False leaves the panel's metrics without CIs
      (:mod:`sparc_eval.metrics.panel`).

    Returns an :class:`Evaluation` (a dict) with ``overall``, ``per_speaker``, ``segments`` and
    ``not_applicable``.
    """
    settings = settings or trial_settings()
    metrics, boot, seg = settings.metrics, settings.bootstrap, settings.segments
    timings = {}
    t0 = time.perf_counter()
    tr = _checked_trials(enroll_ids, test_ids, scores, labels, weights, utt2spk, enroll2spk)
    na = {}
    out = Evaluation(overall=None, per_speaker=None, segments={}, not_applicable=na)
    details = {"settings": metrics, "n_boot": boot.n_boot, "bootstrap_unit": boot.unit}
    details.update(seed=boot.seed, level=boot.level, accent_grouping=seg.accent_grouping)
    one_class = _one_class(tr.c)
    out["overall"], out.curves = _overall(
        tr, (enroll_ids, test_ids), metrics, boot, na, details, (timings, t0), llr, panel_ci
    )
    out["overall"]["small_evaluation"] = _small(out["overall"], tr, settings.min_verdict_speakers)
    # the panel beyond EER, after the keys it extends (all null for one class)
    out["overall"].update(out["overall"].pop("_panel"))

    t2 = time.perf_counter()
    out["per_speaker"] = _per_speaker(tr, metrics.eer_method, na) if per_speaker else None
    _speaker_panel(out, tr, test_ids, boot, metrics.eer_method, na, one_class)
    t3 = time.perf_counter()
    out["segments"] = _segments(tr, speakers, seg, metrics.eer_method, na, details)
    timings.update(per_speaker=t3 - t2, segments=time.perf_counter() - t3)
    out.details, out.timings_s = details, timings
    return out


def _small(overall: dict, tr, min_verdict_speakers: int) -> Optional[dict]:
    """``overall["small_evaluation"]``, counting test speakers and their effective number."""
    n_speakers = n_eff = None
    if tr.test_spk is not None:  # one sort of the speaker ids; n_eff then counts integer codes
        uniq, codes = np.unique(tr.test_spk, return_inverse=True)
        n_speakers, n_eff = int(uniq.size), effective_speakers(codes, tr.y, tr.w)
    return small_evaluation(overall, n_speakers, min_verdict_speakers, n_eff=n_eff)


class _Trials(NamedTuple):
    """Checked trials: scores ``s``, labels ``y``, weights ``w`` (None: unweighted), their sort
    ``st`` and compact count table ``c``; test and enrollment speakers (None without utt2spk)."""

    s: np.ndarray
    y: np.ndarray
    w: Optional[np.ndarray]
    st: SortedTrials
    c: Counts
    test_spk: Optional[np.ndarray]
    enroll_spk: Optional[np.ndarray]
    enroll_known: bool = (
        False  # every enrollment id is a known speaker (a two-way bootstrap can run)
    )


def _checked_trials(
    enroll_ids, test_ids, scores, labels, weights, utt2spk: Optional[dict], enroll2spk=None
) -> _Trials:
    """Checks the trials (DataError on bad labels, shapes or ids missing from ``utt2spk``),
    sorts them by score and maps the ids to speakers (enrollment ids through ``enroll2spk``
    first, then ``utt2spk``; a speaker id stays as it is)."""
    s, y, w = check_trials(scores, labels_to_bool(labels), weights, allow_one_class=True)
    enroll_ids = np.asarray(enroll_ids)  # made str only where mapped (map_ids): 0.3 s per 10^6 ids
    test_ids = np.asarray(test_ids)
    if enroll_ids.shape != s.shape or test_ids.shape != s.shape:
        raise DataError(
            f"{s.size} scores but {enroll_ids.size} enrollment ids and {test_ids.size} test ids"
        )
    st = sort_trials(s, y)
    t, n = group_counts(st, w)
    c = compact(Counts(st.unique, t, n))
    test_spk = enroll_spk = None
    known = False
    if utt2spk is not None:
        test_spk = map_ids(test_ids, utt2spk, what="test ids in utt2spk")
        mapping = {**utt2spk, **(enroll2spk or {})}
        enroll_spk = map_ids(enroll_ids, mapping, what="enrollment ids", keep_unmapped=True)
        speakers = {str(v) for v in mapping.values()}
        known = all(e in speakers for e in sorted_codes(enroll_spk)[0].tolist())
    return _Trials(s, y, w, st, c, test_spk, enroll_spk, known)


def _overall(
    tr, ids, settings, boot: BootstrapSettings, na: dict, details: dict, clock: tuple, llr, panel_ci
):
    """``(overall, curves)``: the overall block of one- or two-class trials, with the panel beyond
    EER under ``"_panel"`` for the caller to place after the keys it extends; ``clock`` is
    (timings, start) of the metrics stage."""
    if _one_class(tr.c):
        overall = _one_class_overall(tr.c, settings, na)
        overall["_panel"] = empty_panel()
        return overall, None
    overall, curves, panel = _two_class_overall(
        tr, settings, boot, na, details, *clock, llr, panel_ci
    )
    panel["linkability_topn"] = topn_linkability(*ids, tr.y, tr.s, na)
    overall["_panel"] = panel
    return overall, curves


def _speaker_panel(
    out, tr, test_ids, boot: BootstrapSettings, method: str, na: dict, one_class: bool
) -> None:
    """``overall["mean_speaker_eer"]`` (per-speaker EERs clipped at 0.5, with its CI) and
    ``overall["worst_speakers"]`` (picked and measured on different halves)."""
    overall, per = out["overall"], out["per_speaker"]
    mean, ci = mean_speaker_eer(per, boot.n_boot, boot.seed, boot.level)
    overall["mean_speaker_eer"] = mean
    if overall.get("ci95") is not None:
        overall["ci95"]["mean_speaker_eer"] = ci
    overall["worst_speakers"] = (
        worst_speakers(tr.st, tr.test_spk, test_ids, tr.w, boot.seed, na, method)
        if per is not None and not one_class
        else None
    )


def _one_class(c: Counts) -> bool:
    return c.t.sum() <= 0 or c.n.sum() <= 0


def _one_class_overall(c: Counts, settings: MetricSettings, na: dict) -> dict:
    """``overall`` of one-class trials: every metric None, the reason in ``na``."""
    n_t, n_n = c.t.sum(), c.n.sum()
    which = "target" if n_t <= 0 else "non-target"
    na["overall"] = f"only one class: no {which} trials, so no metric can be computed"
    return {
        "eer": None,
        "eer_threshold": None,
        "auc": None,
        "tpr_at_fpr": {fpr_key(x): None for x in settings.fpr_targets},
        "min_dcf": None,
        "n_target": _count(n_t),
        "n_nontarget": _count(n_n),
        "ci95": None,
    }


def _two_class_overall(
    tr: _Trials,
    settings: MetricSettings,
    boot: BootstrapSettings,
    na: dict,
    details: dict,
    timings: dict,
    t0: float,
    llr: Optional[bool] = None,
    panel_ci: bool = True,
):
    """``(overall, curves, panel)``: point metrics with bootstrap CIs, the thinned ROC/DET curves
    and the panel beyond EER (its CIs in ``overall["ci95"]``); thresholds and bootstrap settings
    go into ``details``, the times since ``t0`` into ``timings``."""
    pm = point_metrics(tr.c, settings)
    overall = pm.as_dict()
    panel = panel_point(tr.c, llr, na)
    panel["fpr_attained"] = low_fpr(overall, tr.c, settings.fpr_targets, na)
    if pm.eer_threshold is None:
        na["overall.eer_threshold"] = (
            "the convex-hull (interpolated) EER lies between two operating "
            "points; it has no single threshold"
        )
    timings["metrics"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    overall["ci95"] = _bootstrap_ci(tr, settings, boot, na, details, panel_ci)
    if overall["ci95"] is not None:  # no interval for a TPR that too few non-targets support
        for key, value in overall["tpr_at_fpr"].items():
            if value is None:
                overall["ci95"]["tpr_at_fpr"][key] = [None, None]  # the [lo, hi] shape kept
    timings["bootstrap"] = time.perf_counter() - t1
    details.update(
        eer_speechbrain=pm.eer_speechbrain,
        eer_rocch=pm.eer_rocch,
        min_dcf_threshold=pm.min_dcf_threshold,
        tpr_thresholds={fpr_key(k): v for k, v in pm.tpr_thresholds.items()},
    )
    return overall, _curves(tr.c, pm.eer), panel


def _bootstrap_ci(
    tr: _Trials,
    settings: MetricSettings,
    boot: BootstrapSettings,
    na: dict,
    details: dict,
    panel_ci=True,
) -> Optional[dict]:
    """``overall["ci95"]`` drawn as ``boot`` says, None when ``n_boot`` is 0; what ran goes into
    ``details``, dropped resamples into ``na``."""
    n_boot, unit = boot.n_boot, boot.unit
    if not (n_boot and n_boot > 0):
        na["overall.ci95"] = "bootstrap disabled (n_boot = 0)"
        return None
    groups = tr.test_spk if unit in SPEAKER_UNITS else None
    if unit in SPEAKER_UNITS and groups is None:
        raise DataError("a speaker-level bootstrap needs utt2spk (test id -> speaker)")
    unit, side = _enrollment_side(tr, unit, na)
    extra = panel_ci_hook(tr.st.unique, *group_counts(tr.st, tr.w)) if panel_ci else None
    res = bootstrap_metrics(
        tr.s,
        tr.y,
        groups=groups,
        enroll_groups=tr.enroll_spk if unit == "two_way" else None,
        weights=tr.w,
        settings=settings,
        sorted_trials=tr.st,
        extra=extra,
        boot=replace(boot, unit=unit),
    )
    ci = res.ci()
    ci["tpr_at_fpr"] = {fpr_key(k): v for k, v in ci["tpr_at_fpr"].items()}
    details["n_valid_resamples"] = res.n_valid
    details["bootstrap"] = {**res.info(), **({"enrollment_side": side} if side else {})}
    if res.n_valid < n_boot:
        na["overall.ci95.dropped"] = (
            f"{n_boot - res.n_valid} of {n_boot} resamples had one class "
            "and were left out of the intervals"
        )
    return {
        "eer": ci["eer"],
        "auc": ci["auc"],
        "tpr_at_fpr": ci["tpr_at_fpr"],
        "min_dcf": ci["min_dcf"],
        **{k: res.extra_ci().get(k) for k in ("min_cllr", "dece", "linkability")},
    }


ENROLLED_UNKNOWN = (
    "held fixed: the enrollment ids are not speakers of utt2spk (give enroll2spk), so the "
    "intervals are too narrow wherever enrolled speakers are also tested"
)


def _enrollment_side(tr: _Trials, unit: str, na: dict) -> tuple:
    """``(unit, side)``: the unit that runs (two-way falls back to speaker when the enrolled
    speakers are unknown, said in ``na``) and what becomes of the enrolled side (None: trials)."""
    if unit == "two_way" and not tr.enroll_known:
        na["overall.ci95.enrollment_side"] = ENROLLED_UNKNOWN
        return "speaker", ENROLLED_UNKNOWN
    if unit == "two_way":
        return unit, "resampled with the tested side (two-way)"
    if unit == "speaker":
        return unit, "held fixed (bootstrap_unit: speaker)"
    return unit, None


def _curves(c: Counts, eer) -> dict:
    """Thinned ROC and DET points for the plots."""
    fpr, tpr, _ = roc_points(c)
    fx, fy = thin_curve(fpr, tpr)
    dx, dy = thin_curve(fpr, 1.0 - tpr, scale="logit")
    return {"fpr": fx, "tpr": fy, "det_far": dx, "det_frr": dy, "eer": eer}


def _per_speaker(tr: _Trials, method: str, na: dict) -> Optional[dict]:
    """``per_speaker`` (None without utt2spk); speakers without an EER go into ``na``."""
    if tr.test_spk is None:
        na["per_speaker"] = "no utt2spk given: test utterances cannot be mapped to speakers"
        return None
    per, reasons = per_speaker_eer(tr.st, tr.test_spk, weights=tr.w, method=method)
    for spk, why in reasons.items():
        na[f"per_speaker.{spk}.eer"] = why
    return per


def _segments(
    tr: _Trials,
    speakers: Optional[dict],
    seg: SegmentSettings,
    method: str,
    na: dict,
    details: dict,
) -> dict:
    """``segments`` (empty without speaker attributes or utt2spk, the reason in ``na``); skipped
    segments and missing EERs go into ``na``, the skipped counts into ``details``."""
    if speakers is None:
        na["segments"] = "no speaker attributes given"
        return {}
    if tr.test_spk is None:
        na["segments"] = "speaker attributes need utt2spk to map test utterances to speakers"
        return {}
    table = _segment_table(speakers, tr.test_spk, tr.enroll_spk, seg.accent_grouping, na)
    segs, skipped, reasons = segment_eers(
        tr.st,
        tr.enroll_spk,
        tr.test_spk,
        table,
        weights=tr.w,
        method=method,
        min_speakers=seg.min_speakers,
    )
    for (attr, value), k in skipped.items():
        na[f"segments.{attr}.{value}"] = (
            f"{k} trial speaker{'s' if k != 1 else ''} (fewer than {seg.min_speakers}): skipped"
        )
    for (attr, value, key), why in reasons.items():
        na[f"segments.{attr}.{value}.{key}"] = why
    if not segs and not skipped:
        na["segments"] = "the speaker attributes give no segment values for the trial speakers"
    details["segments_skipped"] = {f"{a}={v}": k for (a, v), k in skipped.items()}
    return segs


def _segment_table(speakers: dict, test_spk, enroll_spk, accent_grouping: str, na: dict) -> dict:
    """Segment values of every trial speaker (a DataError names the unlisted ones); accent labels
    in no segment (missing, or naming no accent) go to ``na``."""
    from ..data.attributes import accent_groups, segment_table

    table = segment_table(speakers, accent_grouping)
    trial_speakers = set(test_spk.tolist()) | set(enroll_spk.tolist())
    listed = {k: v for k, v in speakers.items() if str(k) in trial_speakers and "accent" in v}
    for label, why in accent_groups(listed, accent_grouping)[1].items():
        n = why["n_speakers"]
        na[f"segments.accent_left_out.{label}"] = (
            f"{n} speaker{'s' if n != 1 else ''} in no segment: {why['reason']}"
        )
    _check_listed(np.unique(np.concatenate([test_spk, enroll_spk])), table)
    return table


def _check_listed(speaker_ids, table: dict) -> None:
    missing = [s for s in speaker_ids.tolist() if s not in table]
    if missing:
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        raise DataError(
            f"{len(missing)} trial speaker(s) missing from the speaker attributes: {shown}",
            hint="list every test and enrollment speaker in the speaker file",
        )


def _count(x):
    x = float(x)
    return int(round(x)) if abs(x - round(x)) < 1e-9 else x


# ----------------------------------------------------------------------------- results.json


def build_results(results: dict, run_info: Optional[dict] = None) -> dict:
    """The full results.json dict: ``run`` (the keys of :doc:`/contracts`, missing ones null) and
    the parts."""
    run_info = dict(run_info or {})
    run = {key: run_info.pop(key, None) for key in RUN_KEYS}
    if run["timings_s"] is None:
        run["timings_s"] = {}
    run.update(run_info)  # extra run keys the caller chose to add
    run.update(versions())
    doc = {"run": run}
    for key in ("overall", "per_speaker", "segments", "not_applicable"):
        doc[key] = results.get(key)
    if doc["segments"] is None:
        doc["segments"] = {}
    if doc["not_applicable"] is None:
        doc["not_applicable"] = {}
    if results.get("lists") is not None:  # VoicePrivacy trial lists, one row each
        doc["lists"] = results["lists"]
    return _json_safe(doc)


def _json_safe(obj):
    """Plain JSON types; NaN/inf become None (they should not occur; this is a last guard)."""
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return _none_if_nan(obj)
    if isinstance(obj, np.ndarray):
        return _json_safe(obj.tolist())
    if isinstance(obj, MetricSettings):
        return {
            "eer_method": obj.eer_method,
            "fpr_targets": list(obj.fpr_targets),
            "p_target": obj.p_target,
            "c_miss": obj.c_miss,
            "c_fa": obj.c_fa,
        }
    if obj is None or isinstance(obj, str):
        return obj
    return str(obj)


json_safe = _json_safe  # public name; ``_json_safe`` stays for existing callers


# ----------------------------------------------------------------------------- report.md


def _f(x, digits: int = 4) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def _ci(pair, pct: bool = True) -> str:
    if not pair or pair[0] is None:
        return "n/a"
    fmt = _pct if pct else _f
    return f"[{fmt(pair[0])}, {fmt(pair[1])}]"


def render_report(doc: dict, details: Optional[dict] = None, plots: Optional[list] = None) -> str:
    """report.md text for a results.json dict (``details`` adds thresholds and settings)."""
    details = details or {}
    run = doc.get("run", {})
    lines = ["# Verification metrics", ""]
    for key in ("dataset", "features", "anonymizer", "scenario", "seed"):
        if run.get(key) is not None:
            lines.append(f"- {key}: {run[key]}")
    lines += list_table_lines(doc.get("lists"))
    lines += _overall_lines(doc.get("overall") or {}, details)
    lines += _per_speaker_lines(doc.get("per_speaker"))
    lines += _segment_lines(doc.get("segments") or {}, details.get("segments_skipped") or {})
    na = doc.get("not_applicable") or {}
    if na:
        lines += ["", "## Not applicable", ""] + [f"- `{k}`: {v}" for k, v in na.items()]
    lines += _definition_lines(details)
    if run.get("deviations") is not None or run.get("environment"):
        lines += report_lines(run)
    if plots:
        lines += ["", "## Plots", ""] + [f"![{Path(p).stem}]({Path(p).name})" for p in plots]
    return "\n".join(lines) + "\n"


def _pct_ci(value, ci) -> str:
    if value is None:
        return "n/a"
    text = f"{100 * value:.2f}%"
    return text + (f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "")


def list_table_lines(lists: Optional[dict]) -> list:
    """The challenge-shaped table (one row per trial list) under its label, when there is one."""
    if not lists:
        return []
    lines = [
        "",
        f"## {lists['label']}",
        "",
        "| dataset | enrollment | trial list | sex | EER [95% CI] | min Cllr | targets | non-targets | speakers |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in lists["rows"]:
        cllr = (r.get("overall") or {}).get("min_cllr")
        lines.append(
            f"| {r['dataset']} | {r['enrollment']} | {r['trial_list']} | {r['sex']} | "
            f"{_pct_ci(r.get('eer'), r.get('ci95'))} | {'n/a' if cllr is None else f'{cllr:.3f}'} | "
            f"{r.get('n_target', 0)} | {r.get('n_nontarget', 0)} | {r.get('n_speakers') or 'n/a'} |"
        )
    return lines + [
        "",
        "Each row: the list's own trials and enrollment rule; the sections below pool them.",
    ]


def _overall_lines(ov: dict, details: dict) -> list:
    """The overall table: EER, its threshold, AUC, TPR at each FPR, minDCF, with 95% CIs."""
    lines = [
        "",
        "## Overall",
        "",
        f"{ov.get('n_target', 0)} target and {ov.get('n_nontarget', 0)} non-target trials.",
        "",
        "| metric | value | 95% CI |",
        "|---|---|---|",
    ]
    ci = ov.get("ci95") or {}
    small = ov.get("small_evaluation")
    degenerate = " (small evaluation: see below)" if small else ""
    lines.append(f"| EER | {_pct(ov.get('eer'))} | {_ci(ci.get('eer'))}{degenerate} |")
    lines.append(f"| EER threshold | {_f(ov.get('eer_threshold'), 6)} | |")
    lines.append(f"| AUC | {_f(ov.get('auc'))} | {_ci(ci.get('auc'), pct=False)} |")
    for k, v in (ov.get("tpr_at_fpr") or {}).items():
        lines.append(
            f"| TPR at FPR {float(k):g} | {_pct(v)} | {_ci((ci.get('tpr_at_fpr') or {}).get(k))} |"
        )
    lines.append(f"| minDCF | {_f(ov.get('min_dcf'))} | {_ci(ci.get('min_dcf'), pct=False)} |")
    lines += _panel_rows(ov, ci)
    if small:
        lines += ["", f"**Small evaluation.** {small_note(small)}."]
    if details.get("eer_speechbrain") is not None:
        lines += [
            "",
            f"EER, SpeechBrain definition: {_pct(details['eer_speechbrain'])}; "
            f"convex-hull (ROCCH) interpolated EER: {_pct(details.get('eer_rocch'))}.",
        ]
    return lines


def _panel_rows(ov: dict, ci: dict) -> list:
    """The panel beyond EER (sparc_eval.metrics.panel) as rows of the overall table."""
    if "min_cllr" not in ov:
        return []
    rows = [("min Cllr (bits)", _f(ov.get("min_cllr")), _ci(ci.get("min_cllr"), pct=False))]
    if ov.get("act_cllr") is not None:
        rows.append(("act Cllr (bits)", _f(ov["act_cllr"]), ""))
    elif ov.get("act_cllr_scores_as_llrs") is not None:
        rows.append(("act Cllr, scores taken as LLRs", _f(ov["act_cllr_scores_as_llrs"]), ""))
    rows.append(("ZEBRA D_ECE (bits)", _f(ov.get("dece")), _ci(ci.get("dece"), pct=False)))
    zebra, worst = ov.get("zebra_worst_case"), ov.get("worst_speakers")
    if zebra:
        value = f"{_f(zebra['max_abs_log10_lr'], 3)} ({zebra['tag']}; cap {_f(zebra['cap'], 3)})"
        rows.append(("ZEBRA worst case, max abs log10 LR", value, ""))
    rows.append(
        ("linkability D<->sys", _f(ov.get("linkability")), _ci(ci.get("linkability"), pct=False))
    )
    rows.append(("linkability, VoicePrivacy integration", _f(ov.get("linkability_vpc")), ""))
    rows += [
        (f"top-N' linkability, N' = {k}", _f(v), "")
        for k, v in (ov.get("linkability_topn") or {}).items()
    ]
    if worst:
        value = f"{_pct(worst['held_out_eer'])} (on the halves that picked them {_pct(worst['in_sample_eer'])})"
        rows.append((f"{worst['k']} most identifiable speakers, EER on held-out halves", value, ""))
    if ov.get("mean_speaker_eer") is not None:
        rows.append(
            (
                "mean per-speaker EER (clipped at 50%)",
                _pct(ov["mean_speaker_eer"]),
                _ci(ci.get("mean_speaker_eer")),
            )
        )
    return [f"| {name} | {value} | {interval} |" for name, value, interval in rows]


def _per_speaker_lines(per: Optional[dict]) -> list:
    """Per-speaker EER, best first; speakers without an EER last."""
    if not per:
        return []
    lines = [
        "",
        "## Per-speaker EER",
        "",
        "EER over the trials whose test utterance belongs to the speaker.",
        "",
        "| speaker | EER | target | non-target |",
        "|---|---|---|---|",
    ]
    order = sorted(per, key=lambda s: (per[s]["eer"] is None, per[s]["eer"] or 0.0, s))
    for spk in order:
        row = per[spk]
        lines.append(f"| {spk} | {_pct(row['eer'])} | {row['n_target']} | {row['n_nontarget']} |")
    return lines


def _segment_lines(segs: dict, skipped: dict) -> list:
    """Intra- and inter-EER per attribute value, and the segments too small to report."""
    lines = []
    if segs:
        lines += [
            "",
            "## Population segments",
            "",
            "Intra-EER: the segment's speakers as trial and enrollment speakers. Inter-EER: the "
            "segment's speakers as trial speakers against every enrollment speaker.",
            "",
            "| attribute | value | speakers | intra-EER | inter-EER |",
            "|---|---|---|---|---|",
        ]
        for attr, values in segs.items():
            for value, row in values.items():
                lines.append(
                    f"| {attr} | {value} | {row['n_speakers']} | {_pct(row['intra_eer'])} | "
                    f"{_pct(row['inter_eer'])} |"
                )
    if skipped:
        lines += [
            "",
            "Skipped segments (fewer than 3 speakers): "
            + ", ".join(f"{k} ({v})" for k, v in skipped.items())
            + ".",
        ]
    return lines


def _definition_lines(details: dict) -> list:
    """How each metric and CI is defined, with the settings of this run."""
    settings = details.get("settings")
    lines = [
        "",
        "## Definitions",
        "",
        "- EER (default, SpeechBrain / VoicePrivacy): thresholds at the distinct scores and the midpoints "
        "between them; FRR = share of target scores <= t, FAR = share of non-target scores > t; "
        "EER = (FAR + FRR) / 2 at the first threshold minimising |FAR - FRR|. The convex-hull EER is the "
        "interpolated alternative.",
        "- TPR@FPR: the largest TPR among thresholds whose FPR does not exceed the target (no interpolation).",
        "- AUC: P(target score > non-target score) + P(tie) / 2.",
    ]
    if isinstance(settings, MetricSettings):
        lines.append(
            f"- minDCF: normalised, p_target {settings.p_target}, C_miss {settings.c_miss}, "
            f"C_fa {settings.c_fa}. EER method in use: {settings.eer_method}."
        )
    if details.get("n_boot"):
        info = details.get("bootstrap") or {}
        unit = info.get("unit", details.get("bootstrap_unit", "trial"))
        lines.append(
            f"- 95% CIs: percentile intervals over {details['n_boot']} bootstrap resamples of "
            f"{UNIT_WORDS[unit]} (seed {details.get('seed')}){_unit_caveat(unit, info)}"
            + _binned_note(details.get("bootstrap"))
        )
    return lines


def _unit_caveat(unit: str, info: dict) -> str:
    """What the resampled unit leaves out, for the report's definitions."""
    if unit == "two_way":
        return "."
    if unit == "speaker":
        side = info.get("enrollment_side") or "held fixed"
        if side == ENROLLED_UNKNOWN:
            return f"; the enrolled side is {side}."
        return (
            f"; the enrolled side is {side}: a non-target score depends on both speakers, so "
            "these CIs are too narrow where enrolled speakers are also tested."
        )
    return (
        "; trials that share a speaker are not independent, so these CIs are too narrow "
        "(give --utt2spk to resample speakers)."
    )


def _binned_note(info: Optional[dict]) -> str:
    if not info or info.get("method") != "binned":
        return ""
    if info.get("exact_bins"):
        return f" Drawn as count tables over the {info['bins']} distinct scores (exact)."
    eer = (info.get("ci_error_bound") or {}).get("eer")
    return (
        f" Drawn as count tables over {info['bins']} score bins: each CI endpoint lies within the bounds in "
        f"results.json (run.bootstrap.ci_error_bound; EER {_pct(eer)}) of the exact bootstrap's."
    )


def write_report(
    out_dir,
    results: dict,
    run_info: Optional[dict] = None,
    plots: bool = True,
    curves: Optional[dict] = None,
    kept_plots: tuple = (),
) -> dict:
    """Write ``results.json``, ``report.md`` and (with ``plots``) roc.png, det.png,
    per_speaker_eer.png and segments.png into ``out_dir``, each atomically.

    ``results``: what :func:`evaluate_trials` returned (its ``curves`` attribute feeds the ROC
    and DET plots; pass ``curves`` for a plain dict). ``kept_plots``: plots already drawn from the
    same scores, linked by the report when ``plots`` is off. Returns ``{name: path}`` of what was
    written.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    details = getattr(results, "details", None) or {}
    curves = curves if curves is not None else getattr(results, "curves", None)
    written = {}
    plot_paths = [] if plots else list(kept_plots)
    na_extra = {}
    if plots:
        from .plots import write_plots

        t0 = time.perf_counter()
        plot_paths, na_extra = write_plots(out_dir, results, curves)
        run_info = dict(run_info or {})
        timings = dict(run_info.get("timings_s") or {})
        timings["plots"] = round(time.perf_counter() - t0, 4)
        run_info["timings_s"] = timings
    if (
        details.get("bootstrap") is not None
    ):  # which bootstrap made the CIs (exact, or binned with B bins)
        run_info = {"bootstrap": details["bootstrap"], **(run_info or {})}
    doc = build_results(results, run_info)
    doc["not_applicable"].update(na_extra)
    write_json(out_dir / "results.json", doc)
    written["results.json"] = out_dir / "results.json"
    write_text(out_dir / "report.md", render_report(doc, details, plot_paths))
    written["report.md"] = out_dir / "report.md"
    for p in plot_paths:
        written[Path(p).name] = Path(p)
    return written
