#!/usr/bin/env python3
"""Scaling of SPARC's two presets (hparams/text/naturalvoices.yaml and sporc.yaml) with corpus
size, stage by stage.

    python benchmarks/bench_scale.py [--sizes 10000,100000,1500000] [--presets naturalvoices,sporc]
                                     [--data PATH] [--cores 2] [--repeats 1] [--small-repeats 3]

The SPoRC corpus (``synthetic_sporc``) has the same speakers, labels and texts as the NaturalVoices
one, in single-speaker episodes: each speaker hosts a series of their own episodes, each episode with
a title (the series name and a few words), a description (1-2 bank sentences) and one category of
Apple Podcasts' 19 (two for a fifth of the series), repeated on every utterance as an export does;
the preset's metadata topic control, overlap and name screens and matched negatives then run on it.

For each size n (utterances) a synthetic corpus shaped like NaturalVoices is built: podcast series
of 2-10 episodes (mean 6), each episode two speakers (the series' host and a guest; guests return
in about two episodes), 16-64 utterances per speaker and episode (mean 40, so a 200-word probe
leaves a 20-utterance tail), speakers scaling with n (12,500 at 1.5x10^6), each with sex, age and a
Voxlect accent label (77% North America, as in SPARC). An utterance is 1-3 sentences (30/50/20%)
drawn from the real LibriSpeech and EdAcc transcripts under $SPARC_EVAL_DATA (about 33,000
sentences; half of a speaker's draws come from a window of the bank of its own, so TF-IDF has a
signal), so that texts are mostly unique, as in a real corpus (whole repeated sentences would cap
the unique texts TF-IDF fits and scores at the bank's size). The corpus is written as
manifest.jsonl and the preset then runs as ``recipes/evaluate_text.py`` runs it, the same library
calls in the same order (sparc_eval.jobs.text.evaluate.evaluate_text's body), one timed stage at a time:

- load: ``load_text_corpus`` reading the written manifest (JSON, Utterance records, validation);
- setup: the preset's shared-text step (off: nothing removed) and ``usable_tasks`` (speaker table);
- probes: ``TrialBuilder`` per P (appearances, eligibility codes, probes cut);
- pairing: ``TrialBuilder.plans`` per P and task (pools and partner draws), screen time taken out;
- screens: time inside ``TrialPairing.screen`` (the preset turns the overlap and name screens off,
  so this is what the calls cost); measured by wrapping the builder's bound method, its memory
  is within pairing's;
- materialise: ``TrialBuilder.materialise`` per P, task and L (``build`` is plans + materialise);
- scoring: ``score_trials`` (TF-IDF fit on the trial set's unique texts: n-gram counts taken once
  per text per run by the scorer, document frequencies and IDF per setting; trials scored in
  chunks of 4,096, their rows gathered in blocks under 16 MiB);
- metrics: ``condition_metrics`` (5 conditions, EER/AUC/TPR/minDCF, 1,000 speaker-bootstrap
  resamples) and ``trial_block``;
- outputs: the trial JSON lines and score files the preset writes (save_trials: True);
- report: ``run_deviations``, results.json, report.md and the ROC plots (``write_outputs``).

Not in the protocol total: building the corpus, writing manifest.jsonl (the export a user brings),
and shared-text detection (``detect_shared_text`` with the preset's n, min_speakers and
min_fraction, enabled; SPARC's protocol does not remove shared text), reported on its own.

Each size runs in two fresh subprocesses: one builds and writes the corpus, the other loads it
and runs the protocol (as the recipe runs, with no built corpus freed on its heap). Time: wall
clock (perf_counter), summed over a stage's calls. Memory: the resident set's high-water mark
(VmHWM), reset before each stage by writing 5 to /proc/self/clear_refs: "peak" is the process's
RSS peak during the stage, "delta" that peak less the RSS when the stage began; where clear_refs
is not writable, ru_maxrss (the peak so far, so a stage shows only what exceeds earlier stages).
Between sizes, each stage's growth exponent log(t2/t1)/log(n2/n1) (1 = linear); stages under 0.2 s
at the larger size are too short to judge. On a shared machine the same code can move a stage's
time at 10^5 by a third between runs, and its exponent by 0.1: ``--repeats N`` runs the sizes in
turn N times (each run in fresh processes, so that a slow spell of the machine falls on every size
rather than on one) and takes each stage's median time, and its largest peak RSS. The sizes below
the largest run at least ``--small-repeats`` times (3 by default): at 10^5 the preset's outputs
take half a second, and one run's jitter there moved a stage's exponent by up to 0.1, while the
largest size, minutes long, varies by a few percent. ``sync`` runs before each subprocess, so that
the pages the export (or the last size) left dirty are not written back during the protocol.

Goal (issues 16 and 33): each preset at 1.5x10^6 utterances in under 15 minutes and 6 GB on 2
cores, every stage's exponent at most 1.05. When the largest size run is below 1.5x10^6 the totals are
extrapolated and the verdict says so: time stage by stage from each stage's last exponent (and,
as a bound, with every stage at least linear), peak RSS by a straight line through the last two
sizes. Small sizes understate superlinear work whose per-item cost is tiny (numpy passes over all
appearances per probe), so the exponents at 10^4-10^5 are a floor for what 1.5x10^6 sees.

Before the presets, the run times exactly linear work (a numpy pass, gather and table write, and
Python object reads, one 8-byte element per utterance) at the last two sizes
(``bench_memory_floor.py``) and prints its exponents; the verdict names their range beside the
stages'. On the 2-core machine of docs/results/scale.md they ran from 1.0 to 1.5: what the caches
and the TLB add as the working set grows past them, which no stage's code can remove.

Pairing's work is also counted (``WORK``: candidates screened, TF-IDF rows read by the topic
views of drawn candidates, by whole-pool views and by category-bin listings) and printed per
utterance at each size with its exponent. A count is the same in every run on a corpus (fixed
seeds; repeated runs are checked to agree), so its growth is the code's alone: where a stage's
time grows faster than the work it counts, the machine made the difference.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import weakref
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "2")  # the goal's 2 cores

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np
from bench_memory_floor import print_floor

DEFAULT_DATA = Path(os.environ.get("SPARC_EVAL_DATA", REPO.parent / "shared" / "data"))
TOP_N, TOP_SPEAKERS = 1_500_000, 12_500
GOAL_S, GOAL_BYTES, MAX_EXPONENT = 15 * 60, 6e9, 1.05
MIN_JUDGED_S = 0.2  # shorter stages are dominated by noise and fixed costs
BANK = (
    "librispeech/spane_lists/ls-test-clean.txt",
    "librispeech/spane_lists/ls-dev-clean.txt",
    "librispeech/spane_lists/ls-test-other.txt",
    "librispeech/spane_lists/ls-dev-other.txt",
    "librispeech/spane_lists/ls-train-clean-5.txt",
    "librispeech/spane_lists/ls-dev-clean-2.txt",
    "edacc/spane_lists/edacc-test.txt",
    "edacc/spane_lists/edacc-dev.txt",
)
UTTS_PER_APPEARANCE = (16, 64)  # uniform, inclusive
EPISODES_PER_SERIES = 6  # mean; every series has at least one episode
SENTENCES_PER_UTT = ((1, 2, 3), (0.3, 0.5, 0.2))
HOME_WINDOW, HOME_SHARE = 1000, 0.5  # a speaker's own stretch of the sentence bank
OTHER_ACCENTS = (
    "English",
    "Irish",
    "Scottish",
    "Oceania",
    "South Asia",
    "East Asia",
    "Romance",
    "Germanic",
    "Slavic",
    "South African",
    "Southeast Asia",
    "Semitic",
    "Welsh",
)
#: Work counted in pairing (``counted_work``, ``timed_screens``): the same for a given corpus
#: and seed in every run, so their growth with the corpus is the code's, free of the machine's.
WORK = ("screened candidates", "topic rows drawn", "topic rows, whole views", "category bin rows")

PROTOCOL_STAGES = (
    "load",
    "setup",
    "probes",
    "pairing",
    "screens",
    "materialise",
    "scoring",
    "metrics",
    "outputs",
    "report",
)
EXTRA_STAGES = ("corpus", "write manifest", "shared-text detection")


# ----------------------------------------------------------------------------- memory and time


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


class Meter:
    """Wall time and peak RSS per named stage (see the module docstring for the method)."""

    def __init__(self):
        self.rows = {}
        self.work = dict.fromkeys(WORK, 0)  # counted_work and timed_screens add to it
        self.resettable = _reset_hwm()
        self.method = (
            "RSS high-water mark (VmHWM), reset per stage via /proc/self/clear_refs"
            if self.resettable
            else "ru_maxrss (process peak so far: not reset per stage)"
        )

    def _row(self, name: str) -> dict:
        return self.rows.setdefault(name, {"t": 0.0, "peak": 0, "delta": 0, "calls": 0})

    def _peak_bytes(self) -> int:
        if self.resettable:
            return _status_kib("VmHWM") * 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    @contextmanager
    def stage(self, name: str):
        if self.resettable:
            _reset_hwm()
        rss0 = _status_kib("VmRSS") * 1024
        t0 = time.perf_counter()
        try:
            yield
        finally:
            dt = time.perf_counter() - t0
            peak = self._peak_bytes()
            row = self._row(name)
            row["t"] += dt
            row["calls"] += 1
            row["peak"] = max(row["peak"], peak)
            row["delta"] = max(row["delta"], peak - rss0)

    def move(self, src: str, dst: str, seconds: float) -> None:
        """Time measured inside ``src`` that belongs to ``dst`` (whose memory stays in ``src``)."""
        self._row(src)["t"] -= seconds
        row = self._row(dst)
        row["t"] += seconds
        row["calls"] += 1
        row["peak"] = row["delta"] = None


# ----------------------------------------------------------------------------- synthetic corpus


def sentence_bank(data: Path) -> list:
    """The distinct transcripts of LibriSpeech and EdAcc, lower-cased (LibriSpeech's are upper case)."""
    seen = {}
    for rel in BANK:
        path = data / rel
        if not path.is_file():
            continue
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    text = " ".join(str(json.loads(line).get("text") or "").lower().split())
                    if text:
                        seen.setdefault(text, None)
    return list(seen)


def appearance_sizes(n: int, rng) -> np.ndarray:
    """Utterances per (speaker, episode), summing to exactly n: host and guest alternate."""
    lo, hi = UTTS_PER_APPEARANCE
    sizes = rng.integers(lo, hi + 1, size=2 * (n // lo + 2))
    stop = int(np.searchsorted(np.cumsum(sizes), n)) + 1
    sizes = sizes[:stop]
    sizes[-1] -= int(sizes.sum()) - n
    if len(sizes) % 2:  # every episode has two speakers: the last appearance gets a partner
        sizes[-1] -= 1
        sizes = np.r_[sizes, 1]
    return sizes


def cast(n_speakers: int, n_episodes: int, rng):
    """(series, host, guest) per episode: hosts own a series, guests are spread over episodes."""
    n_hosts = max(1, min(n_speakers - 1, round(n_episodes / EPISODES_PER_SERIES)))
    extra = rng.integers(0, n_hosts, size=max(0, n_episodes - n_hosts))
    series = np.sort(np.r_[np.arange(min(n_hosts, n_episodes)), extra])
    guests = n_hosts + rng.permutation(np.resize(np.arange(n_speakers - n_hosts), n_episodes))
    return series, series.copy(), guests  # host i owns series i


def speaker_table(n_speakers: int, rng) -> list:
    """(sex, age, accent) per speaker: SPARC's labels (77% North American accents)."""
    sex = rng.choice(["F", "M"], size=n_speakers)
    age = rng.integers(18, 76, size=n_speakers)
    north = rng.random(n_speakers) < 0.77
    other = rng.choice(OTHER_ACCENTS, size=n_speakers)
    return [
        (str(s), float(a), "North America" if na else str(o))
        for s, a, na, o in zip(sex, age, north, other)
    ]


def utterance_texts(spk: np.ndarray, bank: list, n_speakers: int, rng) -> list:
    """1-3 bank sentences per utterance; half of them from the speaker's own window of the bank."""
    k = rng.choice(SENTENCES_PER_UTT[0], size=len(spk), p=SENTENCES_PER_UTT[1])
    owner = np.repeat(spk, k)
    home = rng.integers(0, len(bank), size=n_speakers)[owner]
    own = rng.random(len(owner)) < HOME_SHARE
    idx = np.where(
        own,
        (home + rng.integers(0, HOME_WINDOW, size=len(owner))) % len(bank),
        rng.integers(0, len(bank), size=len(owner)),
    )
    ends = np.cumsum(k)
    return [" ".join(bank[i] for i in idx[e - c : e]) for e, c in zip(ends.tolist(), k.tolist())]


def synthetic_manifest(n: int, bank: list, seed: int = 0):
    """A NaturalVoices-shaped Manifest of exactly n utterances (see the module docstring)."""
    from sparc_eval.data.manifest import Manifest

    rng = np.random.default_rng(seed)
    n_speakers = max(8, round(TOP_SPEAKERS * n / TOP_N))
    sizes = appearance_sizes(n, rng).reshape(-1, 2)
    series, host, guest = cast(n_speakers, len(sizes), rng)
    rows = []  # (episode, speaker) per utterance, in conversation order
    for ep, (h, g) in enumerate(sizes.tolist()):
        turns = rng.permutation(np.r_[np.zeros(h, dtype=np.int64), np.ones(g, dtype=np.int64)])
        rows.append(np.c_[np.full(h + g, ep), np.where(turns == 0, host[ep], guest[ep])])
    rows = np.concatenate(rows)
    texts = utterance_texts(rows[:, 1], bank, n_speakers, rng)
    attrs = speaker_table(n_speakers, rng)
    utts, k, prev = [], 0, -1
    for i, (ep, spk) in enumerate(rows.tolist()):
        k, prev = (k + 1 if ep == prev else 0), ep
        utts.append(utterance("nv", ep, k, spk, series[ep], texts[i], attrs))
    return Manifest(utts, name=f"synthetic-naturalvoices-{n}")


def utterance(prefix: str, ep: int, k: int, spk: int, series: int, text: str, attrs, extra=None):
    """Utterance k of episode ep by speaker spk, in series ``series``, with the speaker's labels."""
    from sparc_eval.data.manifest import Utterance

    sex, age, accent = attrs[spk]
    return Utterance(
        id=f"{prefix}-{ep:06d}-{k:04d}",
        speaker=f"spk{spk:05d}",
        text=text,
        episode=f"{prefix}-ep{ep:06d}",
        series=f"{prefix}-s{series:05d}",
        sex=sex,
        age=age,
        accent=accent,
        extra=extra or {},
    )


CATEGORIES = (
    "Arts",
    "Business",
    "Comedy",
    "Education",
    "Fiction",
    "Government",
    "History",
    "Health & Fitness",
    "Kids & Family",
    "Leisure",
    "Music",
    "News",
    "Religion & Spirituality",
    "Science",
    "Society & Culture",
    "Sports",
    "Technology",
    "True Crime",
    "TV & Film",
)  # Apple Podcasts' top-level categories, as SPoRC's episodes carry them


def sporc_metadata(n_episodes: int, series: np.ndarray, bank: list, rng) -> list:
    """(title, description, category) per episode: a series name and 1 category (2 for a fifth
    of them) per series
    (episodes of a series share them), an episode title of the series name and a few words, and a
    description of 1-2 bank sentences."""
    n_series = int(series.max()) + 1
    name_at = rng.integers(0, len(bank), size=n_series)
    n_cats = 1 + (rng.random(n_series) < 0.2)  # most podcasts list one category
    cats = [", ".join(rng.choice(CATEGORIES, size=k, replace=False)) for k in n_cats.tolist()]
    words_at = rng.integers(0, len(bank), size=n_episodes)
    n_desc = rng.integers(1, 3, size=n_episodes)
    out = []
    for ep, s in enumerate(series.tolist()):
        name = " ".join(bank[name_at[s]].split()[:3])
        title = f"{name}: " + " ".join(bank[words_at[ep]].split()[:6])
        desc = " ".join(bank[i] for i in rng.integers(0, len(bank), size=n_desc[ep]).tolist())
        out.append((title, desc, cats[s]))
    return out


def synthetic_sporc(n: int, bank: list, seed: int = 0):
    """A SPoRC-shaped Manifest of exactly n utterances: single-speaker episodes (16-64 utterances),
    each speaker hosting one series of their own episodes (so positives come from the speaker's
    other episodes), episode titles, descriptions and categories in ``extra`` on every utterance
    (as an export repeats them), the NaturalVoices corpus's speakers, labels and texts."""
    from sparc_eval.data.manifest import Manifest

    rng = np.random.default_rng(seed)
    n_speakers = max(8, round(TOP_SPEAKERS * n / TOP_N))
    sizes = appearance_sizes(n, rng)
    host = np.sort(
        np.r_[
            np.arange(min(n_speakers, len(sizes))),
            rng.integers(0, n_speakers, size=max(0, len(sizes) - n_speakers)),
        ]
    )
    host = host[rng.permutation(len(host))]
    meta = sporc_metadata(len(sizes), host, bank, rng)  # series = the host's own series
    spk = np.repeat(host, sizes)
    texts = utterance_texts(spk, bank, n_speakers, rng)
    attrs = speaker_table(n_speakers, rng)
    utts, i = [], 0
    for ep, (size, h) in enumerate(zip(sizes.tolist(), host.tolist())):
        title, desc, cat = meta[ep]
        extra = {"title": title, "description": desc, "category": cat}
        for k in range(size):
            utts.append(utterance("sp", ep, k, h, h, texts[i], attrs, extra))
            i += 1
    return Manifest(utts, name=f"synthetic-sporc-{n}")


PRESETS = {
    "naturalvoices": (REPO / "hparams" / "text" / "naturalvoices.yaml", synthetic_manifest),
    "sporc": (REPO / "hparams" / "text" / "sporc.yaml", synthetic_sporc),
}


# ----------------------------------------------------------------------------- the preset, by stage


def preset_settings(preset: str, data_folder: Path, output_folder: Path):
    """The preset as the recipe reads it (hparams file -> TextRunSettings), on the written corpus."""
    from sparc_eval.hparams import load_hparams
    from sparc_eval.jobs.text.settings import TextRunSettings

    hp = load_hparams(
        PRESETS[preset][0], {"data_folder": str(data_folder), "output_folder": str(output_folder)}
    )
    return TextRunSettings.from_hparams(hp)


def timed_screens(builder, work: dict) -> list:
    """Wrap the builder's screen (its bound method: the library is unchanged); [seconds inside].
    Each call counts as one screened candidate in ``work``."""
    spent = [0.0]
    inner = weakref.WeakMethod(builder.screen)  # no cycle: the builder is freed when done

    def screen(plan, counts):
        t0 = time.perf_counter()
        try:
            return inner()(plan, counts)
        finally:
            spent[0] += time.perf_counter() - t0
            work["screened candidates"] += 1

    builder.screen = screen
    return spent


def counted_work(builder, work: dict) -> None:
    """Wrap the builder's topic reads (bound methods, as :func:`timed_screens`) to add the TF-IDF
    rows each reads to ``work``: a count of work, not a time, so its growth is the code's alone
    (the caches and the machine's drift do not move it)."""

    def wrap(name: str, kind: str, rows) -> None:
        inner = weakref.WeakMethod(getattr(builder, name))

        def counted(*args, **kwargs):
            out = inner()(*args, **kwargs)
            work[kind] += rows(args, out)
            return out

        setattr(builder, name, counted)

    wrap("topic_view", "topic rows drawn", lambda args, out: len(args[1]))
    wrap("topic_view_whole", "topic rows, whole views", lambda args, out: len(args[1]))
    wrap("category_bin_view", "category bin rows", lambda args, out: len(out[0]))


def build_task(builder, task: str, Ls: list, meter: Meter, screens: list) -> dict:
    """``TrialBuilder.build(task, Ls)`` as its two steps: plans once, materialise per L."""
    before = screens[0]
    with meter.stage("pairing"):
        plans = builder.plans(task)
    meter.move("pairing", "screens", screens[0] - before)
    sets = {}
    for L in Ls:
        with meter.stage("materialise"):
            sets[L] = builder.materialise(task, plans, L)
    return sets


def score_setting(run, task: str, key: str, ts, stats: dict, meter: Meter) -> None:
    """What ``_TextRun.setting`` and ``_one_scorer`` do for the preset's one scorer, step by step."""
    from sparc_eval.jobs.text.evaluate import (
        condition_metrics,
        score_trials,
        scored_trials,
        trial_block,
    )

    scorer = run.scorers[0]
    with meter.stage("outputs"):
        if run.options.save_trials:
            ts.write_jsonl(
                run.out_dir / "trials" / f"{task}_{key}.jsonl",
                with_text=run.options.trials_with_text,
            )
    with meter.stage("scoring"):
        scores = score_trials(scorer, ts, run.scoring)
    with meter.stage("outputs"):
        scored_trials(ts, scores).write(run.out_dir / "scores" / f"{task}_{key}.txt")
    with meter.stage("metrics"):
        conds, curves = condition_metrics(
            ts,
            scores,
            n_boot=run.options.n_boot,
            seed=run.options.seed,
            task=task,
            where=f"tasks.{task}.{key}.conditions",
            not_applicable=run.not_applicable,
            bootstrap_unit=run.options.bootstrap_unit,
        )
        run.results[scorer.name][task][key] = trial_block(ts, scores, stats, conds)
    run.curves[scorer.name][task][key] = curves


def run_trials(run, clean, s, usable: dict, meter: Meter) -> tuple:
    """evaluate_text's loop over P, task and L; returns (trials, n_cut, topic_on)."""
    from sparc_eval.jobs.text.evaluate import _by_P, setting_key
    from sparc_eval.text_trials.trials import TrialBuilder

    n_trials, n_cut, topic_on = 0, 0, False
    for P, Ls in _by_P(s.pl_settings).items():
        with meter.stage("probes"):
            builder = TrialBuilder(clean, replace(s.trial_config, P=P, L=max(Ls)), L_max=max(Ls))
        n_cut, topic_on = n_cut + builder.n_cut, topic_on or builder.topic_on
        screens = timed_screens(builder, meter.work)
        counted_work(builder, meter.work)
        for task in s.tasks:
            if usable[task] is not None:
                for L in Ls:
                    run.unusable(task, setting_key(P, L), usable[task])
                continue
            sets = build_task(builder, task, Ls, meter, screens)
            for L in Ls:
                n_trials += len(sets[L])
                score_setting(run, task, setting_key(P, L), sets[L], builder.stats(task), meter)
        builder = sets = None  # as evaluate_text frees them before the next P
    return n_trials, n_cut, topic_on


def staged_preset(manifest, s, meter: Meter) -> int:
    """``evaluate_text(manifest, ...)`` with the preset's settings, one timed stage at a time."""
    from sparc_eval.jobs.text.evaluate import (
        _document,
        _TextRun,
        heap_frozen,
        remove_shared_text,
        run_deviations,
        usable_tasks,
        write_outputs,
    )
    from sparc_eval.text_trials.trials import has_topic_metadata

    t_start = time.perf_counter()
    scorers, config = list(s.scorers), s.trial_config
    options = replace(s.evaluation_options(), dataset=manifest.name)
    run = _TextRun(scorers, list(s.tasks), options, s.output_folder, s.scoring)
    with meter.stage("setup"):
        clean, shared = remove_shared_text(manifest, config.shared_text)
        usable = usable_tasks(list(s.tasks), clean.speaker_attributes())
    with heap_frozen():
        n_trials, n_cut, topic_on = run_trials(run, clean, s, usable, meter)
    with meter.stage("report"):
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
        request = (config, list(s.pl_settings), list(s.tasks))
        doc = _document(run, manifest, request, shared, deviations, s.run_info({}), t_start)
        write_outputs(
            s.output_folder, doc, run.curves, plots=options.plots, removed_ids=shared.removed_ids
        )
    return n_trials


def export_corpus(preset: str, n: int, data: Path, folder: Path) -> dict:
    """Build the size-n corpus and write it as ``folder``/corpus/manifest.jsonl (the export a user
    brings); the rows and corpus facts for the parent."""
    meter = Meter()
    with meter.stage("corpus"):
        manifest = PRESETS[preset][1](n, sentence_bank(data))
    info = {"speakers": len(manifest.speakers()), "episodes": len(manifest.episodes())}
    with meter.stage("write manifest"):
        manifest.write_jsonl(folder / "corpus" / "manifest.jsonl")
    return {"rows": meter.rows, **info}


def one_size(preset: str, n: int, folder: Path) -> dict:
    """Every protocol stage of ``preset`` on the manifest under ``folder``, in this process (a
    fresh one, as the recipe runs: the built corpus is not on its heap); the rows for the parent."""
    import matplotlib  # noqa: F401  (imported before the first stage, so no stage pays for it)
    import sklearn.feature_extraction.text  # noqa: F401

    from sparc_eval.jobs.text.evaluate import load_text_corpus
    from sparc_eval.text_trials.shared_text import detect_shared_text

    meter = Meter()
    base = _status_kib("VmRSS") * 1024
    s = preset_settings(preset, folder / "corpus", folder / "results")
    with meter.stage("load"):
        manifest, _ = load_text_corpus(s)
    info = {"trials": staged_preset(manifest, s, meter)}
    with meter.stage("shared-text detection"):
        found = detect_shared_text(manifest, replace(s.trial_config.shared_text, enabled=True))
    info["shared_removed"] = found.n_removed
    return {
        "n": n,
        "rows": meter.rows,
        "work": meter.work,
        "method": meter.method,
        "base_rss": base,
        **info,
    }


# ----------------------------------------------------------------------------- driver and table


TRIAL_STAGES = ("materialise", "scoring", "outputs")  # work per trial (``per_trial``)


def exponent(t1, t2, n1, n2):
    if not t1 or not t2 or t1 <= 0 or t2 <= 0:
        return None
    return math.log(t2 / t1) / math.log(n2 / n1)


def run_child(preset: str, n: int, data: Path, cores: int) -> dict:
    """Size n in two fresh processes: one builds and writes the corpus, one runs the protocol."""
    with tempfile.TemporaryDirectory() as tmp:
        out, res = Path(tmp) / "result.json", {}
        for step in ("--export", "--one-size"):
            os.sync()  # the export's (and the last size's) dirty pages written back first
            cmd = [sys.executable, __file__, step, str(n), "--preset", preset]
            cmd += ["--data", str(data), "--folder", tmp, "--json", str(out), "--cores", str(cores)]
            subprocess.run(cmd, check=True, cwd=REPO)
            done = json.loads(out.read_text())
            res = {**res, **done, "rows": {**res.get("rows", {}), **done["rows"]}}
        return res


def median_of(runs: list) -> dict:
    """One size's repeated runs as one result: each stage's median time and largest peak RSS
    (the same corpus each time: it is built from a fixed seed, so the work counted agrees)."""
    if len(runs) == 1:
        return runs[0]
    differing = [r.get("work") for r in runs[1:] if r.get("work") != runs[0].get("work")]
    if differing:  # the counts' growth would no longer be the code's alone
        print(f"  (work counted differs between runs: {runs[0].get('work')} vs {differing[0]})")
    rows = {}
    for name, first in runs[0]["rows"].items():
        same = [r["rows"][name] for r in runs]
        peaks = [r["peak"] for r in same if r["peak"] is not None]
        deltas = [r["delta"] for r in same if r["delta"] is not None]
        rows[name] = {
            **first,
            "t": float(np.median([r["t"] for r in same])),
            "peak": max(peaks) if peaks else None,
            "delta": max(deltas) if deltas else None,
        }
    return {**runs[0], "rows": rows}


def print_size(res: dict) -> None:
    rows = res["rows"]
    print(
        f"\nn={res['n']:,} utterances: {res['speakers']:,} speakers, {res['episodes']:,} episodes, "
        f"{res['trials']:,} trials (4 tasks x 4 settings); shared-text detection would remove "
        f"{res['shared_removed']:,}",
        flush=True,
    )
    for name in (*EXTRA_STAGES[:2], *PROTOCOL_STAGES, EXTRA_STAGES[2]):
        r = rows.get(name)
        if r is None:
            continue
        mem = (
            "memory within pairing"
            if r["peak"] is None
            else f"peak RSS {r['peak'] / 1e9:.2f} GB (delta {r['delta'] / 1e9:+.2f} GB)"
        )
        print(f"  {name:<22} {r['t']:8.2f} s  {mem}  [{r['calls']} call(s)]", flush=True)


def stage_table(results: list) -> dict:
    """Print the per-stage table; returns {stage: last exponent} for the verdict."""
    ns = [r["n"] for r in results]
    head = "".join(f"{f't@{n:,}':>13}" for n in ns)
    pairs = list(zip(range(len(ns) - 1), range(1, len(ns))))
    head += "".join(f"{f'exp {ns[i]:,}->{ns[j]:,}':>26}" for i, j in pairs)
    print(f"\n{'stage':<24}{head}{'peak RSS@' + f'{ns[-1]:,}':>20}")
    last = {}
    for name in (*PROTOCOL_STAGES, "TOTAL (protocol)", *EXTRA_STAGES):
        ts = [
            protocol_total(r) if name.startswith("TOTAL") else r["rows"].get(name, {}).get("t")
            for r in results
        ]
        exps = [exponent(ts[i], ts[j], ns[i], ns[j]) for i, j in pairs]
        cells = "".join(f"{t:13.2f}" if t is not None else f"{'-':>13}" for t in ts)
        for (_i, j), e in zip(pairs, exps):
            short = ts[j] is not None and ts[j] < MIN_JUDGED_S
            mark = (
                "" if e is None else (" (short)" if short else (" !" if e > MAX_EXPONENT else ""))
            )
            cells += f"{('-' if e is None else f'{e:.2f}') + mark:>26}"
        peak = None if name.startswith("TOTAL") else results[-1]["rows"].get(name, {}).get("peak")
        cells += f"{'-' if peak is None else f'{peak / 1e9:.2f} GB':>20}"
        print(f"{name:<24}{cells}")
        if exps and not (ts[-1] is not None and ts[-1] < MIN_JUDGED_S):
            last[name] = exps[-1]
    return last


def work_table(results: list) -> dict:
    """Print the work counted in pairing (``WORK``), per utterance at each size, and its exponent
    between the last two sizes; returns {kind: that exponent} for the verdict."""
    ns = [r["n"] for r in results]
    if len(ns) < 2 or not all("work" in r for r in results):
        return {}
    head = "".join(f"{f'per utt @{n:,}':>20}" for n in ns)
    print(f"\n{'work in pairing':<24}{head}{f'count @{ns[-1]:,}':>18}{'exp':>8}")
    found = {}
    for kind in WORK:
        counts = [r["work"][kind] for r in results]
        found[kind] = exponent(counts[-2], counts[-1], ns[-2], ns[-1])
        cells = "".join(f"{c / n:20.3f}" for c, n in zip(counts, ns))
        e = "-" if found[kind] is None else f"{found[kind]:.2f}"
        print(f"{kind:<24}{cells}{counts[-1]:>18,}{e:>8}")
    return {k: round(e, 2) for k, e in found.items() if e is not None}


def protocol_total(res: dict) -> float:
    return sum(res["rows"][s]["t"] for s in PROTOCOL_STAGES if s in res["rows"])


def protocol_peak(res: dict) -> int:
    return max(res["rows"][s]["peak"] or 0 for s in PROTOCOL_STAGES if s in res["rows"])


def predicted_time(top: dict, last_exp: dict, floor: float) -> float:
    """The protocol's time at TOP_N from the largest size, each stage grown with its last exponent
    (at least ``floor``; unjudged stages, too short to measure, as linear)."""
    scale = TOP_N / top["n"]
    return sum(
        top["rows"][s]["t"] * scale ** max(floor, last_exp.get(s, 1.0) or 0.0)
        for s in PROTOCOL_STAGES
        if s in top["rows"]
    )


def predicted_peak(results: list):
    """(peak RSS at TOP_N, exponent): a straight line through the last two sizes' protocol peaks
    (a fixed part, the interpreter and libraries, and a part that grows with n)."""
    top = results[-1]
    if len(results) < 2:
        return top["base_rss"] + (protocol_peak(top) - top["base_rss"]) * TOP_N / top["n"], None
    prev = results[-2]
    p1, p2 = protocol_peak(prev), protocol_peak(top)
    slope = (p2 - p1) / (top["n"] - prev["n"])
    return p2 + slope * (TOP_N - top["n"]), exponent(p1, p2, prev["n"], top["n"])


def verdict(results: list, last_exp: dict, floor=None, work=None) -> None:
    """Totals at (or extrapolated to) 1.5x10^6 against the goal; exponents against MAX_EXPONENT
    (and, beside them, the exponents of linear work on this machine, ``floor``, and of the work
    counted in pairing, ``work``)."""
    top = results[-1]
    t_pred, t_linear = predicted_time(top, last_exp, 0.0), predicted_time(top, last_exp, 1.0)
    m_pred, m_exp = predicted_peak(results)
    how = "measured" if top["n"] >= TOP_N else f"extrapolated from n={top['n']:,}"
    print(f"\ngoal at n={TOP_N:,} ({how}):")
    print(
        f"  time   {t_pred:9.1f} s   / {GOAL_S} s  = {t_pred / GOAL_S:6.2f}  {'PASS' if t_pred < GOAL_S else 'FAIL'}"
        + (
            ""
            if top["n"] >= TOP_N
            else f"  (each stage at its last exponent; with every stage at least linear "
            f"{t_linear:.0f} s = {t_linear / GOAL_S:.2f})"
        )
    )
    print(
        f"  memory {m_pred / 1e9:9.2f} GB  / {GOAL_BYTES / 1e9:.0f} GB  = {m_pred / GOAL_BYTES:6.2f}  "
        f"{'PASS' if m_pred < GOAL_BYTES else 'FAIL'}  (protocol peak RSS"
        + ("" if top["n"] >= TOP_N else ", straight line through the last two sizes")
        + (f"; RSS exponent {m_exp:.2f}" if m_exp is not None else "")
        + ")"
    )
    judged = {s: e for s, e in last_exp.items() if s in PROTOCOL_STAGES and e is not None}
    over = {s: round(e, 2) for s, e in judged.items() if e > MAX_EXPONENT}
    print(
        f"  exponents (last pair of sizes, stages >= {MIN_JUDGED_S} s): max "
        f"{max(judged.values(), default=float('nan')):.2f} / {MAX_EXPONENT}  "
        f"{'PASS' if judged and not over else 'FAIL' if over else 'n/a'}"
        + (f"; over: {over}" if over else "")
    )
    print_floor_range(floor)
    if work:
        print(f"  work counted in pairing (rows read, candidates screened): exponents {work}")
    per_trial(results, last_exp)
    st = last_exp.get("shared-text detection")
    if st is not None:
        print(f"  shared-text detection (not in the protocol): exponent {st:.2f}")


def print_floor_range(floor) -> None:
    """A diagnostic beside the verdict (which it does not change): the range of exponents that
    exactly linear work showed on this machine between the same sizes (bench_memory_floor.py)."""
    if not floor:
        return
    low = min(floor, key=lambda k: floor[k][2])
    high = max(floor, key=lambda k: floor[k][2])
    print(
        f"  linear work on this machine, same sizes: exponent {floor[low][2]:.2f} ({low}) "
        f"to {floor[high][2]:.2f} ({high})"
    )


def per_trial(results: list, last_exp: dict) -> None:
    """A diagnostic beside the verdict (which it does not change): the trials a corpus yields grow
    faster than its utterances (larger pools match more positives), so a stage whose work is per
    trial shows that growth; its exponent per trial takes it out."""
    if len(results) < 2:
        return
    prev, top = results[-2], results[-1]
    grew = exponent(prev["trials"], top["trials"], prev["n"], top["n"])
    if grew is None:
        return
    found = {
        s: round(last_exp[s] - (grew - 1.0), 2) for s in TRIAL_STAGES if last_exp.get(s) is not None
    }
    print(f"  trials grew with exponent {grew:.2f}; per trial: {found}")


def pin_cores(cores: int) -> None:
    """Run on ``cores`` CPUs (the goal's budget) where the machine has more."""
    if cores and hasattr(os, "sched_setaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
        if len(allowed) > cores:
            os.sched_setaffinity(0, allowed[:cores])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--sizes", default=f"10000,100000,{TOP_N}", help="utterance counts, comma-separated"
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--cores", type=int, default=2, help="CPUs to run on (0: all)")
    ap.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="runs per size; the table and verdict take each stage's median time (default 1)",
    )
    ap.add_argument(
        "--small-repeats",
        type=int,
        default=3,
        help="runs of each size but the largest, if more than --repeats (default 3)",
    )
    ap.add_argument(
        "--presets", default=",".join(PRESETS), help=f"comma-separated, of {', '.join(PRESETS)}"
    )
    ap.add_argument("--preset", default="naturalvoices", help=argparse.SUPPRESS)
    ap.add_argument("--export", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--one-size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--json", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.small_repeats < 1:
        ap.error("--repeats and --small-repeats: at least one run per size")
    pin_cores(args.cores)
    if args.export or args.one_size:
        res = (
            export_corpus(args.preset, args.export, args.data, args.folder)
            if args.export
            else one_size(args.preset, args.one_size, args.folder)
        )
        args.json.write_text(json.dumps(res))
        return 0
    if not sentence_bank(args.data):
        print(
            f"bench_scale: no LibriSpeech/EdAcc transcripts under {args.data} (set SPARC_EVAL_DATA); skipped"
        )
        return 0
    sizes = sorted(int(float(x)) for x in args.sizes.split(","))
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    unknown = sorted(set(presets) - set(PRESETS))
    if unknown:
        ap.error(f"unknown presets {unknown}; known: {', '.join(PRESETS)}")
    floor = print_floor(*sizes[-2:]) if len(sizes) >= 2 else None
    for preset in presets:
        bench_preset(preset, sizes, args, floor)
    return 0


def bench_preset(preset: str, sizes: list, args, floor) -> None:
    """Every size of one preset, each in a fresh process; the table and the verdict."""
    path = PRESETS[preset][0]
    print(
        f"\n{'=' * 100}\n{preset} preset ({path.relative_to(REPO)}) on synthetic {preset}-shaped "
        f"corpora; {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()} "
        f"CPU(s) (--cores {args.cores}), load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    wanted = {n: max(args.repeats, args.small_repeats) for n in sizes}
    wanted[sizes[-1]] = args.repeats
    runs = {n: [] for n in sizes}
    for turn in range(max(wanted.values())):  # sizes in turn: a slow spell hits each size
        for n in sizes:
            if turn < wanted[n]:
                runs[n].append(run_child(preset, n, args.data, args.cores))
                print_size(runs[n][-1])
    results = [median_of(runs[n]) for n in sizes]
    if max(wanted.values()) > 1:
        counts = ", ".join(f"{len(runs[n])} at {n:,}" for n in sizes)
        print(f"\n(the table: each stage's median time over the runs: {counts})", flush=True)
    print(f"\ntime: wall clock; memory: {results[0]['method']}")
    last_exp = stage_table(results)
    work = work_table(results)
    verdict(results, last_exp, floor, work)


if __name__ == "__main__":
    sys.exit(main())
