"""Batched and parallel against per-file transcription, the same faster-whisper model (issue 31).

Baseline: the per-file loop (``FasterWhisperASR.transcribe`` on each utterance, one model with
every core's threads: what the WER metric did before). Measured: ``transcribe_many`` with
``batch_size`` utterances decoded per CTranslate2 ``generate`` call on ``num_workers`` parallel
streams (one thread each on 2 cores), the same weights, int8 and greedy decoding. The variants run
interleaved ``--repeats`` times (a busy machine slows all alike); each prints its median wall and
CPU seconds per utterance, its speed against the baseline, how many transcripts are identical to
the baseline's, how many utterances the batched path handed to the per-file path, and the WER of
each against the reference words.

    python benchmarks/bench_asr.py [--corpus demo:reading] [--limit 100]
        [--variants 1x2,16x1,16x2] [--repeats 2] [--model tiny.en] [--json out.json]

``--variants``: ``<batch_size>x<num_workers>`` each. ``--corpus``: any path ``sparc-eval corpus
info`` accepts, or ``demo:reading`` (built under ``--cache`` when absent); ``--limit`` utterances
are drawn with a fixed seed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sparc_eval.data.corpora.specs import load_spec  # noqa: E402
from sparc_eval.speech.asr import FasterWhisperASR  # noqa: E402
from sparc_eval.speech.audio import read_utterance  # noqa: E402
from sparc_eval.speech.backends import available_cores  # noqa: E402
from sparc_eval.utility.wer import wer_from_pairs  # noqa: E402

BASELINE = "per-file loop"


def sample(corpus: str, cache: str, limit: int, seed: int = 0) -> list:
    manifest = load_spec(corpus, cache_folder=cache)
    utterances = [u for u in manifest if u.audio is not None]
    pick = np.sort(np.random.default_rng(seed).permutation(len(utterances))[:limit])
    return [utterances[i] for i in pick]


def timed(call, audios) -> tuple:
    """(wall s, cpu s, transcripts) of ``call(audios)``."""
    wall, cpu = time.perf_counter(), time.process_time()
    texts = call(audios)
    return time.perf_counter() - wall, time.process_time() - cpu, texts


def variant(spec: str, model: str):
    """(name, an ASR) for ``<batch_size>x<num_workers>``."""
    size, workers = (int(x) for x in spec.lower().split("x"))
    asr = FasterWhisperASR(model, batch_size=size, num_workers=workers)
    how = "per-file" if size == 1 else f"batched {size}"
    default = " (default)" if size == 1 and workers == available_cores() else ""
    return f"{how}, {workers} stream{'s' if workers > 1 else ''}{default}", asr


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="demo:reading")
    parser.add_argument("--cache", default="results/cache", help="where demo:reading is built")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--variants", default="1x2,16x1,16x2")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    utterances = sample(args.corpus, args.cache, args.limit)
    audios = [read_utterance(u) for u in utterances]
    seconds = sum(w.size / sr for w, sr in audios)
    base = FasterWhisperASR(args.model)  # int8, greedy (beam_size 1), temperature 0
    calls = {BASELINE: lambda xs: [base.transcribe(w, sr) for w, sr in xs]}
    handed = {}
    for spec in [v for v in args.variants.split(",") if v]:
        name, asr = variant(spec, args.model)
        handed[name], decode = [], asr._decode
        asr._decode = lambda m, a, seen=handed[name], d=decode: seen.append(1) or d(m, a)
        calls[name] = asr.transcribe_many
    for call in calls.values():  # load the models and warm them up
        call(audios[:2])
    walls, cpus, texts = ({n: [] for n in calls} for _ in range(3))
    for _ in range(args.repeats):  # interleaved: load on the machine hits every variant alike
        for name, call in calls.items():
            handed.get(name, []).clear()
            wall, cpu, said = timed(call, audios)
            walls[name].append(wall)
            cpus[name].append(cpu)
            texts[name] = said
    n = len(audios)
    print(
        f"{n} utterances ({seconds:.0f} s of audio) from {args.corpus}; faster-whisper {args.model} "
        f"{base.compute_type}, beam {base.beam_size}, {available_cores()} cores; median of "
        f"{args.repeats} interleaved runs; baseline: {BASELINE} ({available_cores()} threads)"
    )
    rows = {}
    base_wall = statistics.median(walls[BASELINE])
    for name in calls:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        same = sum(x == y for x, y in zip(texts[BASELINE], texts[name]))
        wer = wer_from_pairs((u.id, u.text, t) for u, t in zip(utterances, texts[name]) if u.text)
        per_file = len(handed[name]) if name in handed else n
        rows[name] = {
            "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2),
            "s_per_utterance": round(wall / n, 3),
            "speed_vs_baseline": round(base_wall / wall, 2),
            "identical_to_baseline": same,
            "decoded_one_at_a_time": per_file,
            "wer": round(wer["wer"], 4),
        }
        print(
            f"  {name:<32} {wall:7.1f} s wall ({wall / n:.3f} s/utt, cpu {cpu:.1f} s)  "
            f"x{base_wall / wall:.2f} vs {BASELINE}  identical {same}/{n}  "
            f"one at a time {per_file}  WER {wer['wer']:.4f}"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"utterances": n, "audio_s": seconds, "variants": rows}, indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
