"""Phone recognition speed and accuracy on the real LibriSpeech samples.

Recognises every utterance of a corpus (default: ``$SPARC_EVAL_DATA/librispeech_samples``, 100
test-other FLAC files, 12.8 min) with PocketSphinx ``allphone`` and with forced alignment of the
transcripts, pinned to at most 2 CPU cores, and prints:

- the real-time factor of each backend, RTF = processing time / audio duration: the baseline is
  real time itself (RTF 1), the target is RTF <= 0.1; set-up (decoder creation, and for
  alignment the G2P pronunciations of out-of-dictionary words) is timed apart, and so is
  reading the audio (a second baseline, the floor any recognizer pays);
- the phone error rate (PER, silence removed, see sparc_eval.phones.per) of allphone against two
  references: the forced-alignment phones, and the project's G2P of the transcripts;
- the PER of forced alignment against the dictionary pronunciation of the transcripts (it can
  only differ where PocketSphinx picks a pronunciation variant such as ``don't(2)``), and
  against the G2P.

    python benchmarks/bench_phone_recognition.py [--data DIR] [--limit N] [--json OUT] [--strict]

The PER bounds in ``PER_BOUNDS`` are always checked (exit status 1 when exceeded);
``--strict`` also exits with status 1 when a backend misses the RTF target. Wall-clock RTF depends
on what else runs on the machine; CPU-time RTF is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sparc_eval.data.corpora import load_corpus  # noqa: E402
from sparc_eval.phones.per import phone_error_rate  # noqa: E402
from sparc_eval.phones.recognizer import make_recognizer, phones_of, validate_segments  # noqa: E402
from sparc_eval.speech.audio import read_utterance  # noqa: E402

TARGET_RTF = 0.1
# Accuracy bounds (deterministic, so always checked): measured over the 100 samples with the
# default settings (allphone vs forced alignment 0.629, alignment vs dictionary 0.040) plus margin.
PER_BOUNDS = {"allphone_vs_forced alignment": 0.73, "align_vs_dictionary": 0.10}
DATA = Path(os.environ.get("SPARC_EVAL_DATA", REPO.parent / "shared" / "data"))


def pin_cores(n: int = 2) -> int:
    """Restrict this process to at most n CPU cores (the target's machine); returns the count."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) > n:
            os.sched_setaffinity(0, cpus[:n])
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def corpus_per(pairs) -> tuple:
    errors = total = 0
    for ref, hyp in pairs:
        e, n = phone_error_rate(ref, hyp)
        errors += e
        total += n
    return (errors / total if total else float("nan")), errors, total


def run_backend(recognizer, audio, *, with_text: bool) -> dict:
    t0 = time.perf_counter()
    recognizer.decoder  # noqa: B018 - build the decoder outside the timed loop
    if with_text:  # ... and load the G2P for out-of-dictionary words (several seconds) there too
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for utt, _, _ in audio:
                recognizer.prepare_words(utt.text)
    init_s = time.perf_counter() - t0
    outputs, wall, cpu = {}, 0.0, 0.0
    for utt, wav, sr in audio:
        w0, c0 = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            segs = (
                recognizer.recognize(wav, sr, text=utt.text)
                if with_text
                else recognizer.recognize(wav, sr)
            )
        wall += time.perf_counter() - w0
        cpu += time.process_time() - c0
        validate_segments(segs, duration=len(wav) / sr)
        outputs[utt.id] = segs
    return {"init_s": init_s, "wall_s": wall, "cpu_s": cpu, "outputs": outputs}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA / "librispeech_samples"))
    parser.add_argument("--limit", type=int, default=None, help="first N utterances only")
    parser.add_argument("--json", default=None, help="also write the numbers here")
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when the RTF target is missed"
    )
    args = parser.parse_args(argv)

    if not Path(args.data).exists():
        print(f"skipped: no data at {args.data} (set SPARC_EVAL_DATA)")
        return 0
    cores = pin_cores(2)
    audio, seconds, read_s = read_corpus(args.data, args.limit)
    print(
        f"corpus: {args.data}: {len(audio)} utterances, {seconds:.0f} s of audio "
        f"({seconds / 3600:.3f} h), {cores} CPU core(s)"
    )
    print(
        f"baseline real time: RTF 1.0; reading+decoding the FLAC files: RTF {read_s / seconds:.4f}"
    )
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None

    results = {
        "utterances": len(audio),
        "audio_s": seconds,
        "cores": cores,
        "read_rtf": read_s / seconds,
        "target_rtf": TARGET_RTF,
    }
    allphone = make_recognizer("pocketsphinx")
    align = make_recognizer("align")
    runs, missed = time_backends(audio, seconds, results, allphone, align)
    report_load(load_before, results)

    hyp = {k: phones_of(v) for k, v in runs["pocketsphinx"]["outputs"].items()}
    aligned = {k: phones_of(v) for k, v in runs["align"]["outputs"].items()}
    refs = references(audio, aligned, align)
    pers = phone_error_rates(refs, hyp, aligned, [u.id for u, _, _ in audio])
    results["per"] = pers

    failed = [
        f"{k} PER {pers[k]:.3f} > {bound}"
        for k, bound in PER_BOUNDS.items()
        if k in pers and pers[k] > bound
    ]
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    if failed:
        print(f"PER bound exceeded: {'; '.join(failed)}")
        return 1
    if missed and args.strict:
        print(f"RTF target missed by: {', '.join(missed)}")
        return 1
    return 0


def read_corpus(data: str, limit) -> tuple:
    """([(utt, wav, sr)] of the first ``limit`` utterances, seconds of audio, seconds reading it)."""
    manifest = load_corpus(data)
    utts = list(manifest)[:limit] if limit else list(manifest)
    t0 = time.perf_counter()
    audio = [(u, *read_utterance(u)) for u in utts]
    read_s = time.perf_counter() - t0
    return audio, sum(len(w) / sr for _, w, sr in audio), read_s


def time_backends(audio, seconds: float, results: dict, allphone, align) -> tuple:
    """Run and time each backend, print its RTF and record it in ``results``; ``(runs by
    recognizer name, labels of the backends that missed the RTF target)``."""
    missed = []
    runs = {}
    for label, rec, with_text in (
        ("pocketsphinx allphone", allphone, False),
        ("pocketsphinx forced alignment", align, True),
    ):
        run = run_backend(rec, audio, with_text=with_text)
        runs[rec.name] = run
        rtf, cpu_rtf = run["wall_s"] / seconds, run["cpu_s"] / seconds
        ok = rtf <= TARGET_RTF
        if not ok:
            missed.append(label)
        print(
            f"{label}: RTF {rtf:.3f} (target <= {TARGET_RTF}; {'met' if ok else 'MISSED'}) over "
            f"{seconds:.0f} s of audio; CPU-time RTF {cpu_rtf:.3f}; set-up {run['init_s']:.2f} s; "
            f"{1 / rtf:.0f}x faster than real time"
        )
        results[rec.name] = {
            "rtf": rtf,
            "cpu_rtf": cpu_rtf,
            "init_s": run["init_s"],
            "settings": rec.settings(),
        }
    return runs, missed


def report_load(load_before, results: dict) -> None:
    """Print the load average around the timed runs: a busy machine inflates wall-clock RTF."""
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    if load_before is not None:
        busy = max(load_before, load_after) > (os.cpu_count() or 1)
        print(
            f"load average {load_before:.1f} before, {load_after:.1f} after, on {os.cpu_count()} CPU(s)"
            + (
                "; the machine was busy, so wall-clock RTF overstates the cost: see CPU-time RTF"
                if busy
                else ""
            )
        )
        results["load_average"] = [load_before, load_after]


def references(audio, aligned: dict, align) -> dict:
    """Reference phones by name: forced alignment, dictionary, and G2P (when it can be imported)."""
    dictionary = {u.id: align.dictionary_transcription(u.text) for u, _, _ in audio}
    refs = {"forced alignment": aligned, "dictionary": dictionary}
    try:
        from sparc_eval.phones.g2p import G2P

        g2p = G2P()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            refs["G2P"] = {u.id: g2p.phones(u.text) for u, _, _ in audio}
    except ImportError as err:
        print(f"G2P reference skipped: {err}")
    return refs


def phone_error_rates(refs: dict, hyp: dict, aligned: dict, ids: list) -> dict:
    """Print and return the corpus PERs of allphone and of forced alignment against each reference."""
    pers = {}
    for ref_name in ("forced alignment", "G2P"):
        if ref_name in refs:
            per, e, n = corpus_per((refs[ref_name][i], hyp[i]) for i in ids)
            pers[f"allphone_vs_{ref_name}"] = per
            print(
                f"PER pocketsphinx allphone vs {ref_name} phones: {per:.3f} ({e} errors / {n} phones)"
            )
    for ref_name in ("dictionary", "G2P"):
        if ref_name in refs:
            per, e, n = corpus_per((refs[ref_name][i], aligned[i]) for i in ids)
            pers[f"align_vs_{ref_name}"] = per
            print(
                f"PER forced alignment vs {ref_name} pronunciation: {per:.3f} ({e} errors / {n} phones)"
            )
    utt_pers = sorted(
        phone_error_rate(refs["forced alignment"][i], hyp[i])[0]
        / max(1, phone_error_rate(refs["forced alignment"][i], hyp[i])[1])
        for i in ids
    )
    print(
        f"allphone vs forced alignment, per utterance: median {utt_pers[len(utt_pers) // 2]:.3f}, "
        f"best {utt_pers[0]:.3f}, worst {utt_pers[-1]:.3f}"
    )
    return pers


if __name__ == "__main__":
    sys.exit(main())
