"""Where the anonymizer card's time goes, cold and warm (issue 31, item 5).

For each anonymizer (default: McAdams and STT-TTS, one card each, hparams/evaluate.yaml defaults):

- cold: fresh output and cache folders, the demo corpus built inside the run as the issue's
  figures had it (``plan data`` in the profile; ``--prebuilt-demo`` builds it once beforehand,
  outside the timing, and links it into each fresh cache);
- warm: the same folders again after a change of ``anonymizer_options`` (McAdams ``alpha`` 0.8 ->
  0.7; STT-TTS Piper ``length_scale`` 1.1), the re-run of a user tuning an anonymizer: the cells of
  the original speech, the trained models, the transcripts and embeddings of the original speech
  are reused; everything about the new anonymized speech is computed.

Each run is ``recipes/evaluate_anonymizer.py`` in its own process; the profile printed is the
wall time, ``run.timings_s`` (the five stages) and ``run.timings_s_detail`` (anonymization per
anonymizer, attacks per cell, utility per metric). Baseline: the cold run of the same anonymizer
measured in the same invocation (warm / cold), beside the issue's figures from before the change
(McAdams 14 min 12 s, STT-TTS 20 min 30 s, cold on the demo corpus, 2 cores).

    python benchmarks/bench_card.py [--anonymizers mcadams,stt_tts] [--modes cold,warm]
        [--work results/bench_card] [--hparams hparams/evaluate.yaml] [--json out.json]
        [--prebuilt-demo] [--keep] [-- --key=value ...]

Arguments after ``--`` go to every card run (SpeechBrain override syntax), e.g. a small check:
``-- --data_folder=/tmp/small_demo --attackers_enabled=[resemblyzer,tfidf_utterances]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WARM_OPTIONS = {
    "mcadams": "{mcadams: {alpha: 0.7}}",
    "stt_tts": "{stt_tts: {tts_options: {length_scale: 1.1}}}",
}
BEFORE_S = {"mcadams": 14 * 60 + 12, "stt_tts": 20 * 60 + 30}  # issue 31, cold, before the change
STAGES = ("anonymization", "attacks", "utility", "comparisons", "total")


def demo_corpus(extra: list, work: Path):
    """The demo corpus folder (built once under ``work``) when the card reads ``demo:``."""
    given = [a.split("=", 1)[1] for a in extra if a.startswith("--data_folder=")]
    spec = given[-1] if given else "demo:reading"
    if not spec.startswith("demo:"):
        return None
    from sparc_eval.demo import build_demo_corpus

    mode = spec.split(":", 1)[1] or "reading"
    folder = work / "demo_cache" / f"demo_{mode}"
    start = time.perf_counter()
    build_demo_corpus(folder, mode=mode, progress=False)
    print(f"demo corpus {folder}: ready in {time.perf_counter() - start:.0f} s (not timed)")
    return folder


def run_card(anonymizer: str, folder: Path, hparams: str, extra: list, options=None) -> dict:
    """One card in its own process: wall seconds, timings_s and timings_s_detail."""
    command = [
        sys.executable,
        str(REPO / "recipes" / "evaluate_anonymizer.py"),
        hparams,
        f"--anonymizer={anonymizer}",
        f"--output_folder={folder / 'out'}",
        f"--cache_folder={folder / 'cache'}",
        "--progress=False",
        *([f"--anonymizer_options={options}"] if options else []),
        *extra,
    ]
    log = folder / f"run_{int(time.time())}.log"
    start = time.perf_counter()
    with open(log, "w") as handle:
        code = subprocess.call(command, cwd=REPO, stdout=handle, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"{anonymizer}: the card failed (exit {code}); see {log}")
    run = json.loads((folder / "out" / "results.json").read_text())["run"]
    return {
        "wall_s": round(wall, 1),
        "timings_s": run["timings_s"],
        "timings_s_detail": run.get("timings_s_detail", {}),
        "log": str(log),
    }


def profile(name: str, found: dict, top: int = 6) -> list:
    """The lines that say where one run's time went."""
    t, detail = found["timings_s"], found["timings_s_detail"]
    lines = [
        f"{name}: {found['wall_s']:.0f} s wall ({found['wall_s'] / 60:.1f} min); "
        + ", ".join(f"{k} {t[k]:.0f} s" for k in STAGES if k in t)
        + f"; outside the stages (start-up, card.md, figures) {found['wall_s'] - t['total']:.0f} s"
    ]
    for stage, parts in detail.items():
        ranked = sorted(parts.items(), key=lambda kv: -kv[1])
        shown = ", ".join(f"{k} {v:.1f}" for k, v in ranked[:top])
        rest = sum(v for _, v in ranked[top:])
        more = f", {len(ranked) - top} more {rest:.1f}" if len(ranked) > top else ""
        lines.append(f"    {stage}: {shown}{more}")
        if stage == "attacks":
            original = sum(v for k, v in parts.items() if k.startswith("original/"))
            lines.append(f"    attacks on original speech (reused when warm): {original:.1f} s")
    return lines


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--anonymizers", default="mcadams,stt_tts")
    parser.add_argument("--modes", default="cold,warm")
    parser.add_argument("--work", default="results/bench_card")
    parser.add_argument("--hparams", default=str(REPO / "hparams" / "evaluate.yaml"))
    parser.add_argument("--json", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the card folders afterwards")
    parser.add_argument(
        "--prebuilt-demo", action="store_true", help="build the demo corpus outside the timing"
    )
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    demo = demo_corpus(extra, work) if args.prebuilt_demo else None
    print(f"{os.cpu_count()} cores; card {args.hparams} {' '.join(extra)}".rstrip())
    results = {}
    for anonymizer in [a for a in args.anonymizers.split(",") if a]:
        folder = work / anonymizer
        got = results[anonymizer] = {}
        if "cold" in modes:
            shutil.rmtree(folder, ignore_errors=True)
            (folder / "cache").mkdir(parents=True)
            if demo is not None:
                (folder / "cache" / demo.name).symlink_to(demo, target_is_directory=True)
            got["cold"] = run_card(anonymizer, folder, args.hparams, extra)
            for line in profile(f"{anonymizer} cold", got["cold"]):
                print(line, flush=True)
            before = BEFORE_S.get(anonymizer)
            if before and not extra and not args.prebuilt_demo:
                print(
                    f"    against the issue's cold {before / 60:.1f} min before the change: "
                    f"x{before / got['cold']['wall_s']:.2f}"
                )
        if "warm" in modes:
            if not (folder / "out" / "results.json").is_file():
                raise SystemExit(
                    f"{anonymizer}: warm needs a run in {folder} (add cold to --modes)"
                )
            options = WARM_OPTIONS.get(anonymizer)
            got["warm"] = run_card(anonymizer, folder, args.hparams, extra, options)
            for line in profile(f"{anonymizer} warm ({options})", got["warm"]):
                print(line, flush=True)
            if "cold" in got:
                ratio = got["cold"]["wall_s"] / got["warm"]["wall_s"]
                print(f"    warm against cold (baseline, this run): x{ratio:.2f} faster")
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
