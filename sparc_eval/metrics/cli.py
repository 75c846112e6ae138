"""``sparc-eval metrics``: verification metrics, report and plots from a score file.

    sparc-eval metrics --scores FILE [--utt2spk FILE] [--enroll2spk FILE] [--speakers FILE] --out DIR

writes ``DIR/results.json`` (:doc:`/contracts`), ``DIR/report.md``, ``DIR/roc.png``,
``DIR/det.png`` and, when available, ``DIR/per_speaker_eer.png`` and ``DIR/segments.png``.
Imports only numpy (and matplotlib/scipy when plotting): never torch or SpeechBrain.
"""

from __future__ import annotations

import sys
import time

from .breakdown import MIN_SEGMENT_SPEAKERS
from .small import MIN_VERDICT_SPEAKERS


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "metrics",
        help="verification metrics and plots from a score file",
        description="EER, AUC, TPR@FPR, minDCF with bootstrap CIs, per-speaker and segment EERs, "
        "from a score file '<enroll-id> <test-id> <score> <target|nontarget>'.",
    )
    _input_arguments(p)
    _bootstrap_arguments(p)
    _metric_arguments(p)
    _report_arguments(p)
    p.set_defaults(func=run)


def _input_arguments(p) -> None:
    """The files read, and what their scores are."""
    p.add_argument(
        "--scores",
        required=True,
        help="score file: <enroll-id> <test-id> <score> <target|nontarget>",
    )
    p.add_argument(
        "--utt2spk", help="Kaldi utt2spk mapping test ids to speakers (enables per-speaker EER)"
    )
    p.add_argument(
        "--enroll2spk",
        help="Kaldi-style mapping of enrollment ids to speakers, for the two-way bootstrap when the "
        "enrollment ids are neither speakers of --utt2spk nor utterances it maps",
    )
    p.add_argument(
        "--speakers",
        help="speaker attributes, JSON lines or CSV with a 'speaker' column "
        "(enables segment EERs; needs --utt2spk)",
    )
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument(
        "--llr",
        action="store_true",
        help="the scores are log-likelihood ratios (PLDA): report the actual Cllr as such "
        "(SpAnE's llrs.npy always is)",
    )


def _bootstrap_arguments(p) -> None:
    """How the 95% CIs resample (:mod:`sparc_eval.metrics.bootstrap`)."""
    from .bootstrap import AUTO_EXACT_MAX_TRIALS, BOOTSTRAP_METHODS, BOOTSTRAP_UNITS, DEFAULT_BINS

    p.add_argument(
        "--n-boot", type=int, default=1000, help="bootstrap resamples for the 95%% CIs (0: none)"
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument(
        "--bootstrap-unit",
        choices=BOOTSTRAP_UNITS,
        default=None,
        help="two_way: resample the speakers on both sides of the trials, enrolled and tested (the "
        "default with --utt2spk when the enrolled speakers are known: a non-target score depends "
        "on both); speaker: test speakers only, the enrolled side held fixed (the default when "
        "they are not); trial: trials, stratified by label (the default without --utt2spk)",
    )
    p.add_argument(
        "--bootstrap-method",
        choices=BOOTSTRAP_METHODS,
        default="auto",
        help="draw each resample's count table over score bins (binned: O(bins) per resample, CI "
        "error bounded and recorded in results.json), from the trials themselves (exact: O(trials)), "
        f"or binned above {AUTO_EXACT_MAX_TRIALS:,} trials (auto, default)",
    )
    p.add_argument(
        "--bootstrap-bins",
        type=int,
        default=None,
        metavar="B",
        help=f"most score bins of the binned bootstrap (default {DEFAULT_BINS['trial']} resampling "
        f"trials, {DEFAULT_BINS['speaker']} resampling speakers; exact when there are at most B "
        "distinct scores)",
    )


def _metric_arguments(p) -> None:
    """The metrics' definitions and targets."""
    p.add_argument(
        "--eer",
        choices=("speechbrain", "rocch"),
        default="speechbrain",
        help="EER definition: SpeechBrain/VoicePrivacy (default) or the convex-hull interpolated EER",
    )
    p.add_argument(
        "--fpr",
        type=float,
        nargs="+",
        default=[0.01, 0.001],
        metavar="RATE",
        help="FPR targets for TPR@FPR (default 0.01 0.001)",
    )
    p.add_argument(
        "--p-target", type=float, default=0.01, help="minDCF target prior (default 0.01)"
    )
    p.add_argument("--c-miss", type=float, default=1.0, help="minDCF miss cost (default 1)")
    p.add_argument("--c-fa", type=float, default=1.0, help="minDCF false-alarm cost (default 1)")


def _report_arguments(p) -> None:
    """What the report breaks down and records."""
    p.add_argument(
        "--min-segment-speakers",
        type=int,
        default=MIN_SEGMENT_SPEAKERS,
        help="report a segment only with at least this many trial speakers "
        f"(default {MIN_SEGMENT_SPEAKERS})",
    )
    p.add_argument(
        "--min-verdict-speakers",
        type=int,
        default=MIN_VERDICT_SPEAKERS,
        help="fewer test speakers than this (or a degenerate EER interval): the report says the "
        f"evaluation is small and prints a resampling-free bound (default {MIN_VERDICT_SPEAKERS})",
    )
    p.add_argument(
        "--accent-grouping",
        choices=("coarse", "fine"),
        default="coarse",
        help="accent segments: coarse groups (default) or each self-reported accent, normalised",
    )
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    for key in ("dataset", "features", "anonymizer", "scenario"):
        p.add_argument(f"--{key}", help=f"recorded as run.{key} in results.json")


def _read_inputs(args):
    """``(trials, utt2spk, speakers, enroll2spk)`` from the files named; SpAnE's ``llrs.npy``
    brings its own speakers and makes the scores LLRs (``args.llr``)."""
    from ..errors import DataError
    from .scores import read_scores, read_spane_llrs, read_speakers, read_utt2spk

    utt2spk = read_utt2spk(args.utt2spk) if args.utt2spk else None
    enroll2spk = read_utt2spk(args.enroll2spk) if args.enroll2spk else None
    if str(args.scores).endswith(".npy"):  # SpAnE's raw scores: PLDA LLRs, speakers named
        trials, spane_utt2spk = read_spane_llrs(args.scores)
        utt2spk, args.llr = utt2spk or spane_utt2spk, True
    else:
        trials = read_scores(args.scores)
    speakers = read_speakers(args.speakers) if args.speakers else None
    if enroll2spk is not None and utt2spk is None:
        raise DataError(
            "--enroll2spk needs --utt2spk", hint="the two-way bootstrap draws the test speakers too"
        )
    return trials, utt2spk, speakers, enroll2spk


def _checked_settings(args, utt2spk):
    """The evaluation settings of the options (DataError on a bad one); the bootstrap unit
    defaults to two-way with --utt2spk (speakers when the enrolled ones are unknown:
    :func:`_said_unit`), else trials, said on stderr."""
    from ..errors import DataError
    from .core import MetricSettings
    from .settings import EvaluationSettings, evaluation_settings

    try:
        settings = MetricSettings(
            eer_method=args.eer,
            fpr_targets=tuple(args.fpr),
            p_target=args.p_target,
            c_miss=args.c_miss,
            c_fa=args.c_fa,
        )
    except ValueError as err:
        raise DataError(f"bad metric option: {err}") from None
    if args.n_boot < 0:
        raise DataError("--n-boot must be >= 0")
    if args.bootstrap_bins is not None and args.bootstrap_bins < 2:
        raise DataError("--bootstrap-bins must be >= 2")
    if args.bootstrap_unit is None:
        args.bootstrap_unit = "two_way" if utt2spk is not None else "trial"
        if args.n_boot and utt2spk is None:
            print(
                "sparc-eval metrics: CIs resample trials (no --utt2spk: trials sharing a speaker "
                "are treated as independent, so the CIs are too narrow)",
                file=sys.stderr,
            )
    given = vars(args)  # the options are named after the hparams keys they set
    return evaluation_settings(
        settings, **{k: given[k] for k in EvaluationSettings.keys() if k in given}
    )


def _said_unit(args, results) -> str:
    """The unit that ran (two-way falls back to speaker when the enrolled speakers are unknown),
    said on stderr with what became of the enrolled side."""
    info = (getattr(results, "details", None) or {}).get("bootstrap") or {}
    unit = info.get("unit", args.bootstrap_unit)
    side = info.get("enrollment_side")
    if args.n_boot and side:
        print(
            f"sparc-eval metrics: CIs resample {'speakers on both sides' if unit == 'two_way' else 'test speakers'}; "
            f"the enrolled side is {side}",
            file=sys.stderr,
        )
    return unit


def run(args) -> int:
    from .results import evaluate_trials, write_report

    t0 = time.perf_counter()
    trials, utt2spk, speakers, enroll2spk = _read_inputs(args)
    t_read = time.perf_counter() - t0
    settings = _checked_settings(args, utt2spk)
    results = evaluate_trials(
        trials.enroll,
        trials.test,
        trials.scores,
        trials.labels,
        utt2spk=utt2spk,
        enroll2spk=enroll2spk,
        speakers=speakers,
        settings=settings,
        llr=args.llr,
    )
    timings = {
        "read": round(t_read, 4),
        **{k: round(v, 4) for k, v in (results.timings_s or {}).items()},
    }
    run_info = _run_info(args, _said_unit(args, results), timings)
    written = write_report(args.out, results, run_info, plots=not args.no_plots)
    _say(results)
    print(written["results.json"])
    return 0


# the command line's settings recorded as run.hparams, under these names
HPARAMS = {
    "utt2spk": "utt2spk",
    "enroll2spk": "enroll2spk",
    "speakers": "speakers",
    "n_boot": "n_boot",
    "bootstrap_unit": "bootstrap_unit",
    "bootstrap_method": "bootstrap_method",
    "bootstrap_bins": "bootstrap_bins",
    "eer_method": "eer",
    "fpr_targets": "fpr",
    "p_target": "p_target",
    "c_miss": "c_miss",
    "c_fa": "c_fa",
    "min_segment_speakers": "min_segment_speakers",
    "min_verdict_speakers": "min_verdict_speakers",
    "accent_grouping": "accent_grouping",
    "llr": "llr",
}


def _run_info(args, unit_run: str, timings: dict) -> dict:
    """results.json's ``run``: what was given, the unit that ran, and the environment."""
    from ..provenance import bootstrap_deviation, environment

    hparams = {"scores": str(args.scores)}
    hparams.update({key: getattr(args, name) for key, name in HPARAMS.items()})
    hparams["fpr_targets"] = list(args.fpr)
    return {
        **{key: getattr(args, key) for key in ("dataset", "features", "anonymizer", "scenario")},
        "hparams": hparams,
        "seed": args.seed,
        "timings_s": timings,
        "bootstrap_unit": unit_run,
        "deviations": bootstrap_deviation(unit_run) if args.n_boot else {},
        "environment": environment(),
    }


def _say(results) -> None:
    """The headline on stdout; a missing EER or a small evaluation on stderr."""
    from .small import small_note

    ov = results["overall"]
    if ov.get("eer") is None:
        print(
            f"sparc-eval metrics: warning: {results['not_applicable'].get('overall')}",
            file=sys.stderr,
        )
        return
    print(
        f"EER {100 * ov['eer']:.2f}%  AUC {ov['auc']:.4f}  minDCF {ov['min_dcf']:.4f}  "
        f"({ov['n_target']} target / {ov['n_nontarget']} non-target trials)"
    )
    if ov.get("small_evaluation"):
        print(f"sparc-eval metrics: {small_note(ov['small_evaluation'])}", file=sys.stderr)
