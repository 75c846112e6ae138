"""The built-in demo corpus: synthetic speakers reading or talking, made by the project itself.

``build_demo_corpus(out_dir, mode="reading", n_speakers=48, utts_per_speaker=20, seed=0)``
writes::

    out_dir/settings.json        what was asked for (a rerun with the same settings reuses the corpus)
    out_dir/wav/<speaker>/<id>.wav   16 kHz mono PCM_16, each written atomically
    out_dir/manifest.jsonl       one utterance per line, absolute audio paths

The manifest's format is in :doc:`/contracts`.

Speakers are distinct espeak-ng voices (a language voice for the accent, a variant for the
sex, and their own pitch, pitch range and speaking rate), with sex, age and accent attributes
balanced so that every value has several speakers. The same seed gives the same speakers in
both modes; only what they say changes:

- ``reading``: each speaker reads two or three chapters (episodes ``spk07-ch1``...) of their
  own "book" (:class:`~sparc_eval.demo.grammar.Book`), like a LibriSpeech speaker;
- ``conversation``: speakers talk in pairs (episodes ``conv05``), both about the episode's
  topic and everyday things, after each reading the same short passage once
  (``extra["scripted"] = True``), like EdAcc.

Everything is deterministic from the seed, including the audio bytes (each utterance is
synthesized in a fresh copy of the synthesizer, see :mod:`sparc_eval.speech.espeak`), so an
interrupted build resumes: utterances whose wav is already complete are not synthesized again.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from ..atomic import write_json
from ..data.attributes import AGE_GROUPS, age_group
from ..data.corpora.specs import DEMO_CORPUS_MARK
from ..data.manifest import AudioRef, Manifest, Utterance
from ..errors import DataError
from . import grammar
from .grammar import TOPIC_NAMES, Book, Conversation, Style
from .speakers import AGE_RANGES, FEMALE_VARIANTS, MALE_VARIANTS, Speaker

ENGLISH_MODES = ("reading", "conversation")
# the German, French and Spanish corpora (sparc_eval.demo.multilingual): a mode named by its language
LANGUAGE_MODES = ("de", "fr", "es")
MODES = ENGLISH_MODES + LANGUAGE_MODES
# a language corpus's default size: its three books hold thirty sentences
LANGUAGE_DEFAULTS = {"n_speakers": 12, "utts_per_speaker": 8}
SAMPLE_RATE = 16000
# Bump when a change to the grammar, lexicon or voice design changes what a seed produces:
# corpora stamped with another version are rebuilt.
GENERATOR_VERSION = 1

# espeak-ng English voice -> accent attribute (free text, like EdAcc's; see sparc_eval.data.attributes)
ACCENTS = (
    ("en-us", "American"),
    ("en-us-nyc", "American (New York City)"),
    ("en", "British"),
    ("en-gb-x-rp", "British (Received Pronunciation)"),
    ("en-gb-x-gbclan", "British (Lancaster)"),
    ("en-gb-x-gbcwmd", "British (West Midlands)"),
    ("en-gb-scotland", "Scottish"),
    ("en-029", "Caribbean"),
)
NORTH_AMERICAN_VOICES = frozenset({"en-us", "en-us-nyc"})


def design_speakers(n_speakers: int, seed: int) -> list:
    """``n_speakers`` distinct voices with balanced sex x accent x age group, in id order.

    Speaker ``i`` of the balanced design has sex ``i % 2``, accent ``(i // 2) % 8`` and age
    group ``(i // 16) % 3``: 48 speakers give every (sex, accent, age group) cell one speaker,
    hence 24 per sex, 6 per accent and 16 per age group. Ids are assigned in a seeded random
    order so that ``spk00`` is not always the same kind of speaker.
    """
    rng = np.random.default_rng([seed, 0])
    width = max(2, len(str(n_speakers - 1)))
    ids = [f"spk{k:0{width}d}" for k in rng.permutation(n_speakers)]
    female_order = list(rng.permutation(len(FEMALE_VARIANTS)))
    male_order = list(rng.permutation(len(MALE_VARIANTS)))
    seen = set()
    speakers = []
    counts = Counter()
    for i in range(n_speakers):
        sex = "F" if i % 2 == 0 else "M"
        voice, accent = ACCENTS[(i // 2) % len(ACCENTS)]
        group = AGE_GROUPS[(i // (2 * len(ACCENTS))) % len(AGE_GROUPS)]
        # rotate the variants so that speakers sharing an accent and sex get different ones
        k = counts[(sex, voice)] + (i // 2) % len(ACCENTS)
        counts[(sex, voice)] += 1
        if sex == "F":
            variant = FEMALE_VARIANTS[female_order[k % len(FEMALE_VARIANTS)]]
        else:
            variant = MALE_VARIANTS[male_order[k % len(MALE_VARIANTS)]]
        low, high = AGE_RANGES[group]
        age = int(rng.integers(low, high + 1))
        while True:
            pitch = int(rng.integers(35, 81) if sex == "F" else rng.integers(20, 61))
            pitch_range = int(rng.integers(25, 86))
            rate = int(rng.integers(145, 196)) - (10 if group == "60+" else 0)
            key = (voice, variant, pitch, rate, pitch_range)
            if key not in seen:
                seen.add(key)
                break
        speakers.append(Speaker(ids[i], sex, age, accent, voice, variant, rate, pitch, pitch_range))
    return sorted(speakers, key=lambda s: s.id)


# ------------------------------------------------------------------------------------------------
# what everyone says


@dataclass
class _Planned:
    utt: Utterance
    speaker: Speaker


def _base_extra(spk: Speaker, topic: str) -> dict:
    return {
        "voice": spk.voice_name,
        "rate": spk.rate,
        "pitch": spk.pitch,
        "pitch_range": spk.pitch_range,
        "topic": topic,
    }


def _plan_reading(speakers: list, utts: int, seed: int) -> list:
    rng = np.random.default_rng([seed, 1])
    topics = [TOPIC_NAMES[k] for k in rng.permutation(len(TOPIC_NAMES))]
    leads = [grammar.lx.GIVEN_NAMES[k] for k in rng.permutation(len(grammar.lx.GIVEN_NAMES))]
    planned = []
    for k, spk in enumerate(speakers):
        srng = np.random.default_rng([seed, 2, k])
        topic = topics[k % len(topics)]
        second = topics[(k + 1 + int(srng.integers(len(topics) - 1))) % len(topics)]
        book = Book.create(topic, srng, second_topic=second, lead=leads[k % len(leads)])
        n_chapters = int(srng.integers(2, 4)) if utts >= 4 else 1
        # chapter c holds utterances [bounds[c], bounds[c + 1])
        bounds = np.linspace(0, utts, n_chapters + 1).round().astype(int)
        for i in range(utts):
            chapter = int(np.searchsorted(bounds, i, side="right"))
            episode = f"{spk.id}-ch{chapter}"
            planned.append(
                _Planned(
                    _utterance(
                        spk,
                        f"{episode}-{i:04d}",
                        episode,
                        "reading",
                        grammar.reading_utterance(book, srng),
                        _base_extra(spk, topic),
                    ),
                    spk,
                )
            )
    return planned


def _plan_conversation(speakers: list, utts: int, seed: int) -> list:
    rng = np.random.default_rng([seed, 3])
    topics = [TOPIC_NAMES[k] for k in rng.permutation(len(TOPIC_NAMES))]
    order = [speakers[k] for k in rng.permutation(len(speakers))]
    groups = [order[i : i + 2] for i in range(0, len(order), 2)]
    if len(groups) > 1 and len(groups[-1]) == 1:  # an odd speaker joins the last pair
        groups[-2].append(groups.pop()[0])
    width = max(2, len(str(len(groups) - 1)))
    planned = []
    for g, members in enumerate(groups):
        crng = np.random.default_rng([seed, 4, g])
        episode = f"conv{g:0{width}d}"
        topic = topics[g % len(topics)]
        conversation = Conversation(topic)
        styles = {
            s.id: Style.create(
                crng, american=s.voice in NORTH_AMERICAN_VOICES, age_group=s.age_group
            )
            for s in members
        }
        turn = 0
        for round_ in range(utts):
            for spk in members:
                if round_ == 0:
                    text = grammar.SCRIPTED_PASSAGE
                    extra = {**_base_extra(spk, topic), "scripted": True}
                else:
                    text = conversation.turn(styles[spk.id], crng, first=(round_ == 1))
                    extra = _base_extra(spk, topic)
                planned.append(
                    _Planned(
                        _utterance(
                            spk, f"{episode}-{turn:04d}", episode, "conversation", text, extra
                        ),
                        spk,
                    )
                )
                turn += 1
    return sorted(planned, key=lambda p: p.utt.id)


def _utterance(
    spk: Speaker, utt_id: str, episode: str, mode: str, text: str, extra: dict
) -> Utterance:
    return Utterance(
        id=utt_id,
        speaker=spk.id,
        text=text,
        episode=episode,
        series=mode,
        sex=spk.sex,
        age=float(spk.age),
        accent=spk.accent,
        extra=extra,
    )


def plan_demo_corpus(
    *, mode: str = "reading", n_speakers: int = 48, utts_per_speaker: int = 20, seed: int = 0
) -> list:
    """The corpus without audio: ``(Utterance, Speaker)`` pairs in id order (cheap: no synthesis)."""
    _check_args(mode, n_speakers, utts_per_speaker, seed)
    if mode in LANGUAGE_MODES:
        from .multilingual import plan_language

        return plan_language(mode, n_speakers, utts_per_speaker, seed)
    speakers = design_speakers(n_speakers, seed)
    plan = _plan_reading if mode == "reading" else _plan_conversation
    return [(p.utt, p.speaker) for p in plan(speakers, utts_per_speaker, seed)]


def _check_args(mode, n_speakers, utts_per_speaker, seed):
    if mode not in MODES:
        raise DataError(
            f"demo corpus: unknown mode {mode!r}", hint=f"use one of {', '.join(MODES)}"
        )
    for name, value, low in (
        ("n_speakers", n_speakers, 1),
        ("utts_per_speaker", utts_per_speaker, 1),
    ):
        if not isinstance(value, (int, np.integer)) or value < low:
            raise DataError(f"demo corpus: {name} must be an integer >= {low}, got {value!r}")
    if mode == "conversation" and n_speakers < 2:
        raise DataError("demo corpus: conversation mode needs at least 2 speakers")
    if not isinstance(seed, (int, np.integer)):
        raise DataError(f"demo corpus: seed must be an integer, got {seed!r}")


# ------------------------------------------------------------------------------------------------
# audio


def _wav_frames(path: Path) -> Optional[int]:
    """Frames of a complete 16 kHz mono PCM_16 wav, or None if it is missing or not complete."""
    import soundfile as sf

    try:
        with open(path, "rb") as handle:
            head = handle.read(12)
        size = path.stat().st_size
        # the RIFF header's size is written last: a cut-off file disagrees with it
        if (
            head[:4] != b"RIFF"
            or head[8:12] != b"WAVE"
            or int.from_bytes(head[4:8], "little") + 8 != size
        ):
            return None
        info = sf.info(str(path))
    except Exception:
        return None
    if (
        info.samplerate != SAMPLE_RATE
        or info.channels != 1
        or info.frames <= 0
        or info.subtype != "PCM_16"
    ):
        return None
    if size < 44 + 2 * info.frames:
        return None
    return int(info.frames)


def _synthesize_to(path: Path, speaker: Speaker, text: str) -> int:
    import soundfile as sf

    audio, sr = speaker.synth().synthesize(text)
    if audio.size == 0:
        raise DataError(f"espeak-ng produced no audio for {path.stem} ({text[:50]!r})")
    pcm = np.round(np.clip(audio, -1.0, 1.0) * 32767.0).astype(np.int16)
    # temp file + rename: a reader never sees half a wav. No fsync: after a power cut a file may
    # be empty or short, which _wav_frames rejects, so a rerun synthesizes it again.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_path(path)
    try:
        sf.write(str(tmp), pcm, sr, format="WAV", subtype="PCM_16")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return int(pcm.size)


def _temp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def _remove_orphan_temp_files(wav_root: Path) -> None:
    """Delete temp wavs left by builds that were killed (their process no longer exists)."""
    if not wav_root.is_dir():
        return
    for tmp in wav_root.glob("*/.*.wav.*.tmp"):
        try:
            pid = int(tmp.name.split(".wav.", 1)[1].split(".")[0])
            os.kill(pid, 0)
            alive = pid != os.getpid()
        except (ValueError, IndexError, ProcessLookupError):
            alive = False
        except OSError:  # e.g. no permission to signal it: some process has that id
            alive = True
        if not alive:
            tmp.unlink(missing_ok=True)


def _settings(mode, n_speakers, utts_per_speaker, seed) -> dict:
    from ..speech.espeak import engine_version

    return {
        "corpus": DEMO_CORPUS_MARK,
        "generator_version": GENERATOR_VERSION,
        "mode": mode,
        "n_speakers": int(n_speakers),
        "utts_per_speaker": int(utts_per_speaker),
        "seed": int(seed),
        "sample_rate": SAMPLE_RATE,
        "espeak_ng": engine_version(),
    }


def build_demo_corpus(
    out_dir,
    *,
    mode: str = "reading",
    n_speakers: int = 48,
    utts_per_speaker: int = 20,
    seed: int = 0,
    progress: bool = True,
    workers: Optional[int] = None,
) -> Manifest:
    """Build (or reuse) the demo corpus under ``out_dir`` and return its manifest.

    A directory already stamped with the same settings is reused: only utterances whose wav is
    missing or incomplete are synthesized. A directory stamped with other settings has its
    ``wav/`` folder and manifest replaced. ``workers``: synthesis threads, each driving its own
    espeak-ng helper process (default: one per core, at most 4).
    """
    _check_args(mode, n_speakers, utts_per_speaker, seed)
    started = time.perf_counter()
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    wav_root = out_dir / "wav"
    manifest_path = out_dir / "manifest.jsonl"
    _stamp_settings(out_dir, _settings(mode, n_speakers, utts_per_speaker, seed), progress)

    _remove_orphan_temp_files(wav_root)
    plan = plan_demo_corpus(
        mode=mode, n_speakers=n_speakers, utts_per_speaker=utts_per_speaker, seed=seed
    )
    frames, todo = _existing_audio(plan, wav_root)
    if todo:
        workers = workers or max(1, min(4, os.cpu_count() or 1))
        bar = _announce_synthesis(len(todo), len(plan), out_dir, mode) if progress else None
        frames.update(_synthesize_all(todo, workers, bar))

    utterances = []
    for utt, _ in plan:
        utt.duration = frames[utt.id] / SAMPLE_RATE
        utterances.append(utt)
    manifest = Manifest(utterances, name=str(manifest_path)).validate(require_text=True)
    manifest.write_jsonl(manifest_path)
    if progress:
        print(
            f"demo corpus: {len(todo)} utterances synthesized, {len(plan) - len(todo)} reused, "
            f"{time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    return manifest


def demo_spec(mode: str, *, cache_folder: Path) -> Manifest:
    """``demo:MODE`` (registered in ``sparc_eval.corpus_specs``): the demo corpus of that mode
    (``reading`` when empty; ``de``, ``fr``, ``es``: a language's, at its default size), built under
    ``cache_folder``."""
    mode = mode or "reading"
    sizes = LANGUAGE_DEFAULTS if mode in LANGUAGE_MODES else {}
    return build_demo_corpus(
        Path(cache_folder) / f"demo_{mode}", mode=mode, progress=False, **sizes
    )


def _stamp_settings(out_dir: Path, settings: dict, progress: bool) -> None:
    """Write ``settings.json``; a folder built with other settings loses its wav files and
    manifest first, and one with a manifest but no settings (not a demo corpus) is refused."""
    settings_path = out_dir / "settings.json"
    manifest_path = out_dir / "manifest.jsonl"
    old = None
    if settings_path.is_file():
        try:
            old = json.loads(settings_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = None
        if old != settings:
            if progress:
                print(
                    f"demo corpus: {out_dir} was built with other settings; rebuilding it",
                    file=sys.stderr,
                )
            shutil.rmtree(out_dir / "wav", ignore_errors=True)
            manifest_path.unlink(missing_ok=True)
    elif manifest_path.exists():
        raise DataError(
            f"{out_dir} holds a manifest.jsonl but no demo corpus settings.json",
            hint="choose an empty or a demo corpus directory",
        )
    if old != settings:
        write_json(settings_path, settings)


def _existing_audio(plan, wav_root: Path) -> tuple:
    """Point each planned utterance at its wav; ``({id: frames} of the complete ones,
    [(utt, speaker, path)] still to synthesize)``."""
    frames: dict = {}
    todo = []
    for utt, spk in plan:
        path = wav_root / spk.id / f"{utt.id}.wav"
        utt.audio = AudioRef(str(path))
        done = _wav_frames(path)
        if done is None:
            todo.append((utt, spk, path))
        else:
            frames[utt.id] = done
    return frames, todo


def _announce_synthesis(n_todo: int, n_planned: int, out_dir: Path, mode: str):
    """Print what is about to be synthesized; the progress bar to update (closed by the caller)."""
    from tqdm import tqdm

    print(
        f"demo corpus: synthesizing {n_todo} of {n_planned} utterances into {out_dir}",
        file=sys.stderr,
        flush=True,
    )
    # a bar only on a terminal (disable=None): logs get the two summary lines
    return tqdm(
        total=n_todo,
        desc=f"demo corpus ({mode})",
        unit="utt",
        file=sys.stderr,
        leave=False,
        disable=None,
    )


def _synthesize_all(todo, workers: int, bar) -> list:
    """Synthesize every ``(utt, speaker, path)`` of ``todo`` on ``workers`` threads;
    ``[(id, frames)]`` in ``todo``'s order. ``bar``: a progress bar to update and close, or None."""

    def run(job):
        utt, spk, path = job
        n = _synthesize_to(path, spk, utt.text)
        if bar is not None:
            bar.update(1)
        return utt.id, n

    pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
    try:
        return [run(job) for job in todo] if pool is None else list(pool.map(run, todo))
    finally:
        if pool is not None:  # on Ctrl-C, drop what has not started
            pool.shutdown(wait=True, cancel_futures=True)
        if bar is not None:
            bar.close()


# ------------------------------------------------------------------------------------------------
# summary


def summarise(manifest: Manifest) -> dict:
    """Counts for the CLI: utterances, speakers, episodes, hours, and per-speaker attribute counts."""
    table = manifest.speaker_attributes()
    hours = manifest.hours()
    return {
        "utterances": len(manifest),
        "speakers": len(table),
        "episodes": len(manifest.episodes()),
        "hours": None if hours is None else round(hours, 3),
        "sex": dict(sorted(Counter(row["sex"] for row in table.values()).items())),
        "age": {
            g: n
            for g in AGE_GROUPS
            if (n := sum(1 for row in table.values() if age_group(row["age"]) == g))
        },
        "accent": dict(sorted(Counter(row["accent"] for row in table.values()).items())),
    }
