"""Speed of the anonymizers against real time, and the utility cost of STT-TTS (WER).

On the 100 real LibriSpeech test-other samples ($SPARC_EVAL_DATA/librispeech_samples, default
../shared/data beside the repo): the real-time factor (processing seconds per second of audio;
baseline: real time = 1.0) of McAdams and of STT-TTS (faster-whisper tiny.en + Piper joe), each
against its target, and the WER of the original audio and of the STT-TTS output, both
transcribed by the same tiny.en.

    python benchmarks/bench_anonymizers.py [--limit N] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from anonymizers.mcadams import McAdams  # noqa: E402
from anonymizers.stt_tts import SttTts  # noqa: E402
from sparc_eval.data.corpora import load_kaldi_dir  # noqa: E402
from sparc_eval.data.manifest import Utterance  # noqa: E402
from sparc_eval.speech.asr import FasterWhisperASR  # noqa: E402
from sparc_eval.speech.audio import read_utterance  # noqa: E402
from sparc_eval.speech.backends import available_cores  # noqa: E402
from sparc_eval.speech.tts import PiperTTS  # noqa: E402
from sparc_eval.utility.wer import wer_from_pairs  # noqa: E402

TARGETS = {"mcadams": 0.05, "stt_tts": 0.3}


class Timed:
    """Wraps an ASR or TTS and adds up the seconds spent in it."""

    def __init__(self, inner, method):
        self.inner, self.method, self.seconds = inner, method, 0.0

    def __getattr__(self, name):
        if name != self.method:
            return getattr(self.inner, name)

        def call(*args):
            start = time.perf_counter()
            try:
                return getattr(self.inner, name)(*args)
            finally:
                self.seconds += time.perf_counter() - start

        return call


def run(anonymizer, items):
    """(seconds in anonymize, cpu seconds, outputs) over ``items`` = [(utt, wav, sr)]."""
    outputs, wall, cpu = [], 0.0, 0.0
    for utt, wav, sr in items:
        work = Utterance.from_dict(utt.to_dict())
        w0, c0 = time.perf_counter(), time.process_time()
        out, out_sr = anonymizer.anonymize(wav, sr, work)
        wall += time.perf_counter() - w0
        cpu += time.process_time() - c0
        outputs.append((work, out, out_sr))
    return wall, cpu, outputs


def line(label, rtf, target):
    verdict = "ok" if rtf <= target else "OVER TARGET"
    return (
        f"{label} RTF {rtf:.3f} (target <= {target}; baseline: real time = 1.0, "
        f"{1 / rtf:.0f}x faster than real time) {verdict}"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="only the first N samples")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)

    data = (
        Path(os.environ.get("SPARC_EVAL_DATA", REPO.parent / "shared" / "data"))
        / "librispeech_samples"
    )
    if not data.is_dir():
        print(f"skipped: no real data at {data} (set SPARC_EVAL_DATA)")
        return 0
    corpus = list(load_kaldi_dir(data))[: args.limit]
    items = [(u, *read_utterance(u)) for u in corpus]
    audio_s = sum(wav.size / sr for _, wav, sr in items)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{len(items)} LibriSpeech test-other utterances, {audio_s / 60:.1f} min of audio, "
        f"{available_cores()} CPU cores, load average {load:.1f} at the start (wall-clock RTFs grow "
        f"with other load; cpu-time RTFs much less)"
    )
    results = {
        "utterances": len(items),
        "audio_s": round(audio_s, 2),
        "cores": available_cores(),
        "load_avg": load,
    }

    # McAdams (warm once so the first call's one-off costs do not count)
    mcadams = McAdams()
    mcadams.anonymize(items[0][1][:16000], 16000, Utterance(id="warm", speaker="warm"))
    wall, cpu, _ = run(mcadams, items)
    results["mcadams"] = {
        "rtf": wall / audio_s,
        "cpu_rtf": cpu / audio_s,
        "target": TARGETS["mcadams"],
    }
    print(
        line("McAdams", wall / audio_s, TARGETS["mcadams"]) + f"; cpu-time RTF {cpu / audio_s:.3f}"
    )

    # STT-TTS: tiny.en + Piper
    whisper = FasterWhisperASR("tiny.en")
    t0 = time.perf_counter()
    asr, tts = Timed(whisper, "transcribe"), Timed(PiperTTS(), "synthesize")
    stt_tts = SttTts(asr=asr, tts=tts)
    stt_tts.setup()
    load_s = time.perf_counter() - t0
    stt_tts.anonymize(items[0][1][:32000], 16000, Utterance(id="warm", speaker="warm"))
    asr.seconds = tts.seconds = 0.0
    wall, cpu, outputs = run(stt_tts, items)
    out_s = sum(out.size / sr for _, out, sr in outputs)
    results["stt_tts"] = {
        "rtf": wall / audio_s,
        "cpu_rtf": cpu / audio_s,
        "asr_rtf": asr.seconds / audio_s,
        "tts_rtf": tts.seconds / audio_s,
        "load_s": load_s,
        "target": TARGETS["stt_tts"],
        "output_over_input_duration": out_s / audio_s,
    }
    print(
        line("STT-TTS (tiny.en + piper)", wall / audio_s, TARGETS["stt_tts"])
        + f"; ASR {asr.seconds / audio_s:.3f} + TTS {tts.seconds / audio_s:.3f}; cpu-time RTF {cpu / audio_s:.3f}; "
        f"models load in {load_s:.1f} s; output/input duration {out_s / audio_s:.2f}"
    )

    # utility: WER of the original audio and of the STT-TTS output, same tiny.en
    original = wer_from_pairs((u.id, u.text, whisper.transcribe(wav, sr)) for u, wav, sr in items)
    own = wer_from_pairs((w.id, w.text, w.extra["asr_text"]) for w, _, _ in outputs)
    again = wer_from_pairs((w.id, w.text, whisper.transcribe(out, sr)) for w, out, sr in outputs)
    results["wer"] = {
        "original": original["wer"],
        "stt_tts_retranscribed": again["wer"],
        "stt_tts_own_transcript": own["wer"],
        "words": original["words"],
    }
    print(
        f"WER (tiny.en, {original['words']} words; baseline: original audio): original "
        f"{100 * original['wer']:.1f}%, STT-TTS output re-transcribed {100 * again['wer']:.1f}% "
        f"({again['wer'] / original['wer']:.2f}x the original), STT-TTS's own transcript {100 * own['wer']:.1f}%"
    )
    results["load_avg_end"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"load average at the end: {results['load_avg_end']:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
