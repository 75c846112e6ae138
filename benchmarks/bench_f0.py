"""F0 trackers for rho_F0: time per utterance and agreement of the resulting rho_F0.

On pairs of original and McAdams-anonymized speech, each tracker of sparc_eval.utility.f0 (praat,
yaapt, pyin, yin) tracks both sides; the bench prints its seconds per utterance against pYIN's
(the tracker rho_F0 used before issue 31), and its rho_F0 (mean over pairs of Pearson's r over the
frames voiced in both, 95% CI resampling speakers) with its agreement against the named baseline,
praat (the tracker and settings of the VoicePrivacy 2022 evaluation code): the correlation of the
per-pair values, their mean absolute difference, and the difference of the means. praat is also
read the way the challenge code reads it (frames: vpc2022_code), to show what that procedure adds.

    python benchmarks/bench_f0.py [--limit N] [--trackers praat,pyin] [--json out.json]
    python benchmarks/bench_f0.py --original ORIGINAL.jsonl --anonymized ANONYMIZED.jsonl

Without manifests: the demo corpus (reading mode, built under --cache_folder as the card builds it)
and a seeded sample of --limit utterances anonymized in memory by McAdams (alpha 0.8, the card's
default anonymizer). With them: the pairs they share by id (a card's
anonymized/<name>/eval/manifest.jsonl against the corpus manifest), a seeded sample of --limit.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sparc_eval.utility import f0 as F0  # noqa: E402
from sparc_eval.utility.metrics import ci95, speaker_bootstrap  # noqa: E402

BASELINE = "praat"  # agreement is read against the VoicePrivacy 2022 code's tracker
TIME_BASELINE = "pyin"  # time is read against the tracker rho_F0 used before
OPTIONS = {"fmin": 75.0, "fmax": 500.0, "hop_s": 0.01}


def demo_pairs(cache_folder: str, limit: int, seed: int) -> list:
    """[(speaker, original wav, anonymized wav)] from the demo corpus and McAdams in memory."""
    from anonymizers.mcadams import McAdams
    from sparc_eval.data.corpora.specs import load_specs
    from sparc_eval.speech.audio import read_utterance

    corpus = load_specs("demo:reading", cache_folder=cache_folder)
    utts = list(corpus)
    pick = np.sort(np.random.default_rng(seed).permutation(len(utts))[:limit])
    mcadams, out = McAdams(alpha=0.8), []
    for i in pick:
        wav, sr = read_utterance(utts[i], sample_rate=16000)
        anonymized, _ = mcadams.anonymize(wav, sr, utts[i])
        out.append((utts[i].speaker, np.asarray(wav), np.asarray(anonymized)))
    return out


def manifest_pairs(original: str, anonymized: str, limit: int, seed: int) -> list:
    from sparc_eval.data.corpora import load_corpus
    from sparc_eval.speech.audio import read_utterance

    # the corpus loader resolves a manifest's relative audio paths against its folder
    by_id = load_corpus(anonymized).by_id()
    pairs = [(u, by_id[u.id]) for u in load_corpus(original) if u.id in by_id]
    if limit and len(pairs) > limit:
        pick = np.sort(np.random.default_rng(seed).permutation(len(pairs))[:limit])
        pairs = [pairs[i] for i in pick]
    return [
        (
            o.speaker,
            read_utterance(o, sample_rate=16000)[0],
            read_utterance(a, sample_rate=16000)[0],
        )
        for o, a in pairs
    ]


def run_tracker(name: str, pairs: list) -> dict:
    """Seconds per utterance and both contours of every pair."""
    F0.track(pairs[0][1][:16000], 16000, name, **OPTIONS)  # imports and first-call set-up, untimed
    start = time.perf_counter()
    contours = [
        (F0.track(o, 16000, name, **OPTIONS), F0.track(a, 16000, name, **OPTIONS))
        for _, o, a in pairs
    ]
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "per_utterance_s": seconds / (2 * len(pairs)), "contours": contours}


def rho(values, speakers, n_boot: int = 1000) -> dict:
    keep = [(s, v) for s, v in zip(speakers, values) if v is not None]
    if not keep:
        return {"value": None, "ci95": None, "pairs": 0}
    spk, vals = zip(*keep)
    draws = speaker_bootstrap(np.array(vals), np.ones(len(vals)), spk, n_boot=n_boot, seed=0)
    return {"value": float(np.mean(vals)), "ci95": ci95(draws), "pairs": len(vals)}


def agreement(values, baseline) -> dict:
    both = [(v, b) for v, b in zip(values, baseline) if v is not None and b is not None]
    if len(both) < 3:
        return {"pairs": len(both)}
    v, b = np.array(both).T
    return {
        "pairs": len(both),
        "r_with_baseline": float(np.corrcoef(v, b)[0, 1]),
        "mean_abs_diff": float(np.mean(np.abs(v - b))),
        "diff_of_means": float(v.mean() - b.mean()),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=60, help="pairs (a seeded sample; 0: all)")
    parser.add_argument("--trackers", default=",".join(F0.TRACKERS))
    parser.add_argument("--original", default=None, help="manifest of the original speech")
    parser.add_argument("--anonymized", default=None, help="manifest of the anonymized speech")
    parser.add_argument("--cache_folder", default="results/cache", help="where the demo corpus is")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the numbers here too")
    args = parser.parse_args(argv)
    names = [t for t in args.trackers.split(",") if t]
    if BASELINE not in names:
        names.insert(0, BASELINE)
    if args.original and args.anonymized:
        pairs = manifest_pairs(args.original, args.anonymized, args.limit, args.seed)
        source = f"{args.original} vs {args.anonymized}"
    else:
        pairs = demo_pairs(args.cache_folder, args.limit or 60, args.seed)
        source = "demo corpus (reading) vs McAdams alpha 0.8 in memory"
    speakers = [s for s, _, _ in pairs]
    seconds = sum((len(o) + len(a)) / 16000 for _, o, a in pairs)
    print(f"{len(pairs)} pairs ({seconds:.0f} s of audio, {len(set(speakers))} speakers): {source}")
    print(
        f"baseline: {BASELINE} (the VoicePrivacy 2022 code's tracker) for rho_F0; "
        f"{TIME_BASELINE} (rho_F0's tracker before) for time"
    )
    found = {n: run_tracker(n, pairs) for n in names}
    per_pair = {n: [F0.voiced_correlation(o, a) for o, a in found[n]["contours"]] for n in names}
    per_pair[f"{BASELINE} (vpc2022_code)"] = [
        F0.vpc2022_code_correlation(o, a) for o, a in found[BASELINE]["contours"]
    ]
    report = {"pairs": len(pairs), "audio_s": seconds, "source": source, "trackers": {}}
    t_base = found.get(TIME_BASELINE, {}).get("per_utterance_s")
    for label, values in per_pair.items():
        tracker = label.split(" ")[0]
        row = {
            "per_utterance_s": found[tracker]["per_utterance_s"],
            "time_vs_pyin": found[tracker]["per_utterance_s"] / t_base if t_base else None,
            "rho_f0": rho(values, speakers),
            "agreement": agreement(values, per_pair[BASELINE]),
        }
        report["trackers"][label] = row
        r, a = row["rho_f0"], row["agreement"]
        ci = r["ci95"]
        print(
            f"{label:22s} {1000 * row['per_utterance_s']:7.1f} ms/utt"
            + (f" ({row['time_vs_pyin']:.2f}x pyin)" if row["time_vs_pyin"] else "")
            + (
                f"  rho_F0 {r['value']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] on {r['pairs']} pairs"
                if r["value"] is not None
                else "  rho_F0 n/a"
            )
            + (
                f"  vs {BASELINE}: r {a['r_with_baseline']:.3f}, mean |diff| {a['mean_abs_diff']:.3f}, "
                f"diff of means {a['diff_of_means']:+.3f}"
                if "r_with_baseline" in a
                else ""
            )
        )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
