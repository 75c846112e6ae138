"""Anonymize a whole corpus: 16 kHz wav files plus a manifest, resumable, shardable.

``anonymize_corpus(manifest, anonymizer, out_dir)`` writes::

    out_dir/wav/<speaker>/<id>.wav      16 kHz PCM_16 mono, each written atomically
    out_dir/manifest.jsonl              same ids, speakers, attributes and reference text;
                                        audio -> the new files (relative paths), duration of the
                                        new audio, extra.anonymizer, extra.keeps_words (the
                                        anonymizer's declaration, see sparc_eval.data.words),
                                        extra.anonymization_key (the ledger key: what made
                                        the audio), and what it recorded (extra.asr_text for
                                        STT-TTS)
    out_dir/failures.jsonl              one line per utterance that failed: id, error, reason
    out_dir/anonymization.json          counts, timings and real-time factors
    out_dir/.done.jsonl                 the ledger: one line per finished utterance with its key

The cache key of an utterance hashes its input audio's content, its segment, and the
anonymizer's settings (:func:`settings_of`: its ``settings()`` and the options it was built
with; an object that cannot say them is never reused, with a warning); an utterance whose key is in the ledger and whose wav file is there
is not redone, so a re-run, or the run after an interruption, does only what is missing, and
changing a setting redoes everything it affects. One bad utterance (unreadable audio, an empty
transcript, text the TTS cannot speak, a failing backend) is listed in ``failures.jsonl`` and the
run goes on; a full disk stops the run with :class:`~sparc_eval.speech.backends.DiskFull` and keeps
everything finished.

With ``shard=(i, n)`` (0-based) the run does every n-th utterance starting at i and writes
``manifest.shard-i-of-n.jsonl``, ``failures.shard-i-of-n.jsonl`` and
``anonymization.shard-i-of-n.json``; when all n shards are there (same input, same settings),
``manifest.jsonl`` is merged automatically in input order (or later with :func:`merge_shards`).

``runner="ray"`` spreads utterances over Ray actors (one anonymizer each; ``num_gpus`` per
actor), on the cluster that ``ray.init`` joined (or a local one); workers write the wav files,
so ``out_dir`` must be on storage they share.
"""

from __future__ import annotations

import copy
import errno
import hashlib
import io
import json
import os
import re
import time
import uuid
import warnings
from pathlib import Path

import numpy as np
import soundfile as sf

from ..atomic import atomic_open, write_json
from ..cache import kept_path, restore, set_aside
from ..data.manifest import AudioRef, Manifest

# keys are digest(..., n=None, default=repr): full length, repr() for what JSON cannot hold, as the
# ledgers and shard reports of earlier runs were made
from ..digest import UNKNOWN_STATE, FileDigests, content_digest, digest
from ..errors import DataError
from ..speech.audio import read_utterance, resample
from ..speech.backends import AnonymizerOutputError, DiskFull
from .options import RunnerOptions

SAMPLE_RATE = 16000
SUBTYPE = "PCM_16"
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


# ------------------------------------------------------------------------------------------------
# small pieces


def parse_shard(value) -> tuple:
    """``"i/n"`` or ``(i, n)`` -> ``(i, n)`` with 0 <= i < n."""
    if value is None:
        return 0, 1
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", value)
        if not match:
            raise DataError(f"shard {value!r} is not of the form i/n (0-based, e.g. 0/4)")
        value = (int(match.group(1)), int(match.group(2)))
    i, n = (int(v) for v in value)
    if n < 1 or not 0 <= i < n:
        raise DataError(f"shard {i}/{n}: need 0 <= i < n (shards are 0-based)")
    return i, n


def _suffix(shard) -> str:
    i, n = shard
    return "" if n == 1 else f".shard-{i}-of-{n}"


def safe_name(value: str) -> str:
    """A file-name-safe form of an id or speaker (unchanged when already safe)."""
    value = str(value)
    cleaned = _SAFE.sub("_", value).lstrip(".") or "_"
    if cleaned != value:
        cleaned += "-" + hashlib.sha1(value.encode("utf-8")).hexdigest()[:8]
    return cleaned


def output_relpath(utt) -> str:
    return f"wav/{safe_name(utt.speaker)}/{safe_name(utt.id)}.wav"


def build_anonymizer(anonymizer, options=None):
    """The anonymizer object: ``anonymizer`` itself, or one built from a registered name / dotted
    path with ``options``, which it then carries so that they are always in its key."""
    from ..plugins import load_anonymizer

    if not isinstance(anonymizer, str):
        if options:
            raise DataError("anonymizer_options need an anonymizer name, not an object")
        return anonymizer
    built = load_anonymizer(anonymizer, **dict(options or {}))
    if options:
        try:
            setattr(built, _BUILT_WITH, dict(options))
        except AttributeError:  # __slots__: its settings() must say it all
            pass
    return built


_BUILT_WITH = "_sparc_eval_options"
_RUN_TOKEN = "_sparc_eval_unknown_state"


def settings_of(anonymizer) -> dict:
    """What keys an anonymizer's outputs: its ``settings()`` plus the options it was built with.
    An object whose state cannot be known (no ``settings()``, or a value in it with no settings of
    its own) gets a key of its own for this object's lifetime, with a warning: nothing made by
    another run is reused."""
    cls = type(anonymizer)
    settings = getattr(anonymizer, "settings", None)
    out = (
        dict(settings())
        if callable(settings)
        else {"class": f"{cls.__module__}.{cls.__qualname__}"}
    )
    options = getattr(anonymizer, _BUILT_WITH, None)
    if options:
        out["options"] = options
    files = getattr(anonymizer, "model_files", None)
    files = [f for f in files() if f is not None] if callable(files) else []
    if files:  # another model under the same name is another anonymizer (issue 62)
        out["model_files"] = content_digest(files)
    if not callable(settings) or UNKNOWN_STATE in json.dumps(out, default=repr):
        out["unknown_state"] = _run_token(anonymizer)
    return out


def _run_token(anonymizer) -> str:
    """One random token per object (and one warning): its outputs are never reused by a later run."""
    token = getattr(anonymizer, _RUN_TOKEN, None)
    if token is None:
        token = uuid.uuid4().hex
        cls = type(anonymizer).__name__
        warnings.warn(
            f"the anonymizer {cls} cannot say what it was built with (no settings(), or a setting "
            f"with no settings of its own): its outputs are keyed by this run alone, so a re-run "
            f"recomputes them. Give {cls} a settings() method returning its options to have them reused",
            stacklevel=3,
        )
        try:
            setattr(anonymizer, _RUN_TOKEN, token)
        except AttributeError:
            pass
    return token


def name_of(anonymizer) -> str:
    name = getattr(anonymizer, "display_name", None) or getattr(anonymizer, "name", None)
    return str(name or type(anonymizer).__name__.lower())


def _read_jsonl_lenient(path: Path) -> list:
    """Records of a JSON-lines file, skipping lines that do not parse (an interrupted append)."""
    if not path.is_file():
        return []
    records = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records


def utterance_key(utt, settings_hash: str, fingerprint) -> str:
    audio = utt.audio
    return digest(
        {
            "audio": fingerprint(audio.path),
            "start": audio.start,
            "stop": audio.stop,
            "settings": settings_hash,
            "rate": SAMPLE_RATE,
            "subtype": SUBTYPE,
        },
        n=None,
        default=repr,
    )


def _ledger_entries(out_dir: Path):
    for path in sorted(Path(out_dir).glob(".done*.jsonl")):
        for record in _read_jsonl_lenient(path):
            if isinstance(record, dict) and "id" in record and "key" in record:
                yield record


def read_ledger(out_dir: Path) -> dict:
    """id -> the latest ledger entry, over ``.done*.jsonl`` (all shards)."""
    return {record["id"]: record for record in _ledger_entries(out_dir)}


def _kept_entries(out_dir: Path) -> dict:
    """(id, key) -> the ledger entry of every file ever finished here: the current ones, and those
    set aside under ``.kept/`` when a setting changed (:mod:`sparc_eval.cache`)."""
    return {(record["id"], record["key"]): record for record in _ledger_entries(out_dir)}


def _finished(entry, key: str, out_dir: Path) -> bool:
    if entry is None or entry.get("key") != key:
        return False
    path = out_dir / entry["audio"]
    try:
        return path.stat().st_size == entry.get("bytes", path.stat().st_size)
    except OSError:
        return False


def _wav_bytes(wav: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    sf.write(buffer, wav, SAMPLE_RATE, format="WAV", subtype=SUBTYPE)
    return buffer.getvalue()


def _check_output(result, utt) -> np.ndarray:
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise AnonymizerOutputError(
            f"utterance {utt.id!r}: anonymize() must return (wav, sr), got {type(result).__name__}"
        )
    wav, sr = result
    wav = np.asarray(wav, dtype=np.float32)
    if wav.ndim == 2:
        wav = wav.mean(axis=1) if wav.shape[1] <= 8 else wav.mean(axis=0)
    if wav.ndim != 1 or wav.size == 0:
        raise AnonymizerOutputError(
            f"utterance {utt.id!r}: the anonymizer returned no audio (shape {wav.shape})"
        )
    if not np.all(np.isfinite(wav)):
        raise AnonymizerOutputError(
            f"utterance {utt.id!r}: the anonymizer returned NaN or infinite samples"
        )
    try:
        sr = int(sr)
    except (TypeError, ValueError):
        raise AnonymizerOutputError(
            f"utterance {utt.id!r}: sample rate {sr!r} is not a number"
        ) from None
    if sr <= 0:
        raise AnonymizerOutputError(f"utterance {utt.id!r}: sample rate {sr} is not positive")
    return np.clip(resample(wav, sr, SAMPLE_RATE), -1.0, 1.0)


def _failure(utt, err) -> dict:
    return {
        "ok": False,
        "id": utt.id,
        "error": type(err).__name__,
        "reason": str(err),
        "input": None if utt.audio is None else utt.audio.path,
    }


def _is_disk_full(err) -> bool:
    return isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)


# ------------------------------------------------------------------------------------------------
# the work on one batch (runs in the driver, or in a Ray actor)


def process_batch(anonymizer, batch, out_dir) -> list:
    """Anonymize ``batch`` (a list of ``(utterance, key)``) and write the wav files; one result
    dict per utterance: ``ok`` with the ledger entry fields, or a failure."""
    out_dir = Path(out_dir)
    rate = getattr(anonymizer, "sample_rate", SAMPLE_RATE)
    results, ready = _read_inputs(batch, rate)
    if not ready:
        return results
    outputs = _anonymize_ready(anonymizer, ready)
    for (utt, key, wav, sr, work), (out, compute_s, err) in zip(ready, outputs):
        if err is not None:
            results.append(_failure(utt, err))
            continue
        try:
            audio, data, rel = _write_output(out, utt, out_dir)
        except Exception as err:  # noqa: BLE001
            results.append(_failure(utt, err))
            continue
        added = {k: v for k, v in work.extra.items() if k not in utt.extra or utt.extra[k] != v}
        results.append(
            {
                "ok": True,
                "id": utt.id,
                "key": key,
                "audio": rel,
                "bytes": len(data),
                "duration": round(audio.size / SAMPLE_RATE, 4),
                "input_s": round(wav.size / sr, 4),
                "compute_s": round(compute_s, 6),
                "extra": added,
            }
        )
    return results


def _read_inputs(batch, rate) -> tuple:
    """(failures of the unreadable, ``(utt, key, wav, sr, work copy)`` of the rest); the
    anonymizer gets the copy, so what it adds to ``extra`` can be told from the input's."""
    results, ready = [], []
    for utt, key in batch:
        try:
            wav, sr = read_utterance(utt, sample_rate=rate)
        except Exception as err:  # noqa: BLE001 - every failure is reported, the run goes on
            results.append(_failure(utt, err))
            continue
        ready.append((utt, key, wav, sr, copy.deepcopy(utt)))
    return results, ready


def _anonymize_ready(anonymizer, ready) -> list:
    """``(output, compute seconds, error or None)`` per item: one batch call when the anonymizer
    has ``anonymize_batch``, else (or when the batch call fails) one call per utterance."""
    outputs = None
    if len(ready) > 1 and callable(getattr(anonymizer, "anonymize_batch", None)):
        outputs = _anonymize_as_batch(anonymizer, ready)
    if outputs is None:
        outputs = _anonymize_one_by_one(anonymizer, ready)
    return outputs


def _anonymize_as_batch(anonymizer, ready):
    """The batch call's outputs with the time shared evenly, or None when it failed."""
    start = time.perf_counter()
    try:
        outputs = anonymizer.anonymize_batch([(wav, sr, work) for _, _, wav, sr, work in ready])
        if len(outputs) != len(ready):
            raise AnonymizerOutputError(
                f"anonymize_batch returned {len(outputs)} results for {len(ready)} inputs"
            )
        per_item = (time.perf_counter() - start) / len(ready)
        return [(out, per_item, None) for out in outputs]
    except Exception:  # noqa: BLE001 - find the bad one by running them one at a time
        for _, _, _, _, work in ready:  # fresh copies: a failed batch may have written extras
            work.extra.clear()
        return None


def _anonymize_one_by_one(anonymizer, ready) -> list:
    outputs = []
    for utt, _, wav, sr, work in ready:
        work.extra.clear()
        work.extra.update(copy.deepcopy(utt.extra))
        start = time.perf_counter()
        try:
            out = anonymizer.anonymize(wav, sr, work)
            outputs.append((out, time.perf_counter() - start, None))
        except Exception as err:  # noqa: BLE001
            outputs.append((None, time.perf_counter() - start, err))
    return outputs


def _write_output(out, utt, out_dir: Path) -> tuple:
    """Check one anonymizer output and write its wav atomically: ``(audio, wav bytes, relpath)``.
    A full disk raises :class:`DiskFull` (the run stops); other errors fail the utterance."""
    audio = _check_output(out, utt)
    data = _wav_bytes(audio)
    rel = output_relpath(utt)
    try:
        with atomic_open(out_dir / rel, "wb") as handle:
            handle.write(data)
    except OSError as os_err:
        if _is_disk_full(os_err):
            raise DiskFull(
                f"no space left writing {out_dir / rel}",
                hint="free space and run again: finished files are kept",
            ) from None
        raise
    return audio, data, rel


# ------------------------------------------------------------------------------------------------
# runners


def _batches(todo, size):
    for start in range(0, len(todo), size):
        yield todo[start : start + size]


def _run_local(anonymizer, todo, out_dir, batch_size, on_result):
    for batch in _batches(todo, batch_size):
        if on_result(process_batch(anonymizer, batch, out_dir)):
            return


class _RayWorker:
    def __init__(self, anonymizer):
        self.anonymizer = anonymizer
        setup = getattr(anonymizer, "setup", None)
        start = time.perf_counter()
        if callable(setup):
            setup()
        self.setup_s = time.perf_counter() - start

    def setup_time(self):
        return self.setup_s

    def process(self, batch, out_dir):
        return process_batch(self.anonymizer, batch, out_dir)


def _run_ray(
    anonymizer,
    todo,
    out_dir,
    batch_size,
    on_result,
    *,
    num_workers=None,
    num_gpus=0.0,
    num_cpus=1.0,
    ray_address=None,
):
    from collections import deque

    from ..speech.backends import require

    ray = require("ray", extra="ray", purpose="the Ray runner")
    if not ray.is_initialized():
        ray.init(address=ray_address, include_dashboard=False, ignore_reinit_error=True)
    resources = ray.cluster_resources()
    if num_workers is None:
        num_workers = max(1, int(resources.get("CPU", 1) // max(num_cpus, 1e-6)))
        if num_gpus:
            num_workers = min(num_workers, max(1, int(resources.get("GPU", 0) // num_gpus)))
    batches = deque(_batches(todo, batch_size))
    num_workers = max(1, min(int(num_workers), len(batches)))
    worker_cls = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus or 0)(_RayWorker)
    actors = [worker_cls.remote(anonymizer) for _ in range(num_workers)]
    try:
        try:
            setup_s = max(ray.get([a.setup_time.remote() for a in actors]))
        except ray.exceptions.RayError as err:
            raise DataError(f"the Ray workers could not set up the anonymizer: {err}") from None
        out = str(out_dir)
        idle = deque(actors * 2)  # two batches in flight per actor
        pending, dead = {}, set()
        while batches or pending:
            while idle and batches:
                actor, batch = idle.popleft(), batches.popleft()
                pending[actor.process.remote(batch, out)] = (actor, batch)
            ready, _ = ray.wait(list(pending), num_returns=1)
            actor, batch = pending.pop(ready[0])
            try:
                results = ray.get(ready[0])
                idle.append(actor)
            except ray.exceptions.RayError as err:
                # the call failed outside process_batch (a worker died): fail this batch; a dead
                # worker gets no more work, and with none left the rest fails too
                results = [_failure(utt, err) for utt, _ in batch]
                if isinstance(err, ray.exceptions.RayActorError):
                    dead.add(id(actor))
                    idle = deque(a for a in idle if id(a) not in dead)
                    if len(dead) == len(actors):
                        results += [_failure(utt, err) for b in batches for utt, _ in b]
                        batches.clear()
                else:
                    idle.append(actor)
            if on_result(results):
                break
    finally:
        for actor in actors:
            ray.kill(actor)
    return setup_s


# ------------------------------------------------------------------------------------------------
# the corpus run


def _manifest_records(items, done, out_dir, name, keeps_words=None) -> list:
    records = []
    for utt in items:
        entry = done.get(utt.id)
        if entry is None:
            continue
        out = copy.deepcopy(utt)
        out.audio = AudioRef(entry["audio"])
        out.duration = entry["duration"]
        out.extra = {
            **out.extra,
            **entry.get("extra", {}),
            "anonymizer": name,
            "keeps_words": keeps_words,
            "anonymization_key": entry["key"],
        }  # what made the audio: its input's bytes and the settings
        records.append(out.to_dict())
    return records


def _write_jsonl(path, records) -> None:
    with atomic_open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def _load_output_manifest(path: Path) -> Manifest:
    from ..data.corpora import load_manifest

    manifest = load_manifest(path)
    manifest.name = str(path)
    return manifest


def _check_language(manifest, anonymizer) -> None:
    """An anonymizer that speaks or transcribes some languages only (``languages``: STT-TTS)
    refuses a corpus in another before any work, naming itself and the language."""
    from ..data.languages import check_served

    served = getattr(anonymizer, "languages", None)
    if served is not None:
        check_served(
            f"the {name_of(anonymizer)} anonymizer",
            manifest.language,
            served,
            hint=f"give it the corpus's language where it takes one (language: {manifest.language})",
        )


def anonymize_corpus(
    manifest,
    anonymizer,
    out_dir,
    *,
    options: RunnerOptions = RunnerOptions(),
    shard=(0, 1),
    merge: bool = True,
    limit=None,
    anonymizer_options=None,
) -> Manifest:
    """Anonymize every utterance (of the shard) that is not already done; return the output
    manifest (absolute audio paths) with ``.report`` holding the counts and timings that
    ``anonymization.json`` records. ``manifest`` is a Manifest or any path ``load_corpus``
    reads; ``anonymizer`` is an object or a registered name / dotted path (built with
    ``anonymizer_options``); ``options`` (:class:`~.options.RunnerOptions`): how it runs
    (locally or on Ray, batch size, resources, progress bar)."""
    wall_start = time.perf_counter()
    manifest, anonymizer = _resolve_inputs(manifest, anonymizer, anonymizer_options)
    _check_language(manifest, anonymizer)
    runner = options.runner
    batch_size, shard = _check_run_options(runner, options.batch_size, shard)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    utterances, items = _shard_items(manifest, limit, shard)
    name = name_of(anonymizer)
    settings = settings_of(anonymizer)
    settings_hash = digest(settings, n=None, default=repr)
    suffix = _suffix(shard)

    done, failures, todo, cached = _split_done(items, settings_hash, out_dir, suffix)
    sink, setup_s = _run_todo(
        anonymizer,
        todo,
        out_dir,
        suffix,
        _ResultSink(done, failures),
        progress=options.progress,
        name=name,
        runner=runner,
        batch_size=batch_size,
        ray_options=options.ray_options(),
    )
    if sink.disk_full:
        _raise_disk_full(items, done, out_dir)

    # outputs of this run
    done_all = {u.id: done[u.id] for u in items if u.id in done}
    records = _manifest_records(
        items, done_all, out_dir, name, getattr(anonymizer, "keeps_words", None)
    )
    report = {
        **_report_head(
            anonymizer, name, settings, settings_hash, manifest, [u.id for u in utterances]
        ),
        **_report_counts(shard, runner, items, records, sink, cached),
        **_report_timings(sink.stats, setup_s, wall_start, done_all),
        "ids": [u.id for u in items],
    }
    path = _write_outputs(out_dir, suffix, failures, records, report)
    if (
        shard[1] > 1
        and merge
        and _all_shards_present(out_dir, shard[1], settings_hash, report["input_ids_hash"])
    ):
        merge_shards(out_dir, shard[1])
    result = _load_output_manifest(path) if records else Manifest([], name=str(path))
    result.report = report
    return result


def _shard_items(manifest: Manifest, limit, shard) -> tuple:
    """(the utterances the run reads, this shard's share of them), after checking the corpus."""
    if not manifest.has_audio:
        raise DataError(
            f"{manifest.name}: the corpus has no audio (text-only); nothing to anonymize"
        )
    manifest.validate()
    utterances = list(manifest)
    if limit is not None:
        utterances = utterances[: int(limit)]
    return utterances, [u for k, u in enumerate(utterances) if k % shard[1] == shard[0]]


def _write_outputs(out_dir: Path, suffix: str, failures, records, report) -> Path:
    """The shard's failures, manifest and report; returns the manifest's path."""
    _write_jsonl(out_dir / f"failures{suffix}.jsonl", failures)
    _write_jsonl(out_dir / f"manifest{suffix}.jsonl", records)
    write_json(out_dir / f"anonymization{suffix}.json", report)
    return out_dir / f"manifest{suffix}.jsonl"


def _resolve_inputs(manifest, anonymizer, anonymizer_options) -> tuple:
    """(Manifest, anonymizer object) from what the caller gave: objects, or a path and a name."""
    if not isinstance(manifest, Manifest):
        from ..data.corpora import load_corpus

        manifest = load_corpus(manifest)
    return manifest, build_anonymizer(anonymizer, anonymizer_options)


def _check_run_options(runner, batch_size, shard) -> tuple:
    """(batch size as an int, ``(i, n)`` shard), or a DataError for an unknown runner or a bad value."""
    if runner not in ("local", "ray"):
        raise DataError(f"runner {runner!r}: one of local, ray")
    if int(batch_size) < 1:
        raise DataError(f"batch_size must be >= 1, got {batch_size}")
    return int(batch_size), parse_shard(shard)


def _split_done(items, settings_hash: str, out_dir: Path, suffix: str = "") -> tuple:
    """(ledger entries by id, failures, ``(utt, key)`` still to do, count reused from the ledger).
    A file whose key no longer matches (new audio, new settings) is set aside under its key, and
    one made earlier under the new key is moved back (:func:`_restore_kept`); the rest is redone."""
    fingerprint = FileDigests(out_dir / ".fingerprints.jsonl")  # input files by content
    done, kept = read_ledger(out_dir), _kept_entries(out_dir)
    ledger = out_dir / f".done{suffix}.jsonl"
    failures, todo, cached = [], [], 0
    for utt in items:
        if utt.audio is None:
            failures.append(_failure(utt, DataError(f"utterance {utt.id!r} has no audio")))
            continue
        try:
            key = utterance_key(utt, settings_hash, fingerprint)
        except OSError as err:
            failures.append(
                _failure(
                    utt,
                    DataError(
                        f"utterance {utt.id!r}: cannot read {utt.audio.path} ({err.strerror})"
                    ),
                )
            )
            continue
        if _finished(done.get(utt.id), key, out_dir):
            cached += 1
        elif _restore_kept(done.pop(utt.id, None), kept.get((utt.id, key)), out_dir, ledger):
            done[utt.id] = kept[(utt.id, key)]
            cached += 1
        else:
            todo.append((utt, key))
    return done, failures, todo, cached


def _kept_suffix(entry: dict) -> str:
    """A kept file's name after its key: the id's digest too (two ids may share audio and key)."""
    return f"-{digest(entry['id'], n=12)}.wav"


def _restore_kept(current, wanted, out_dir: Path, ledger: Path) -> bool:
    """Set the current file (made under another key) aside, and move back the one made under the
    wanted key if it is kept: True when it was. The ledger names the wanted entry before its file
    comes back, so a run cut off in between finds it missing (and restores it), never another
    key's audio under its entry. A damaged file of the wanted key is deleted (it is redone)."""
    if current is not None and current.get("audio"):
        path = out_dir / current["audio"]
        if wanted is not None and current["key"] == wanted["key"]:
            path.unlink(missing_ok=True)
            return False
        set_aside(path, out_dir, current["key"], _kept_suffix(current))
    if wanted is None or not wanted.get("audio"):
        return False
    if not kept_path(out_dir, wanted["key"], _kept_suffix(wanted)).is_file():
        return False
    _append_ledger(ledger, [wanted])
    return restore(out_dir, wanted["key"], out_dir / wanted["audio"], _kept_suffix(wanted))


def _append_ledger(path: Path, entries: list) -> None:
    """Entries moved back from the store become the latest of their ids (on disk before we go)."""
    with open(path, "a", encoding="utf-8") as ledger:
        ledger.writelines(json.dumps(e, ensure_ascii=False) + "\n" for e in entries)
        _close_ledger(ledger)


class _ResultSink:
    """Takes each batch's results as they come: a finished utterance goes into the ledger at once
    (flushed, so an interruption keeps it) and ``done``, a failure into ``failures``. Called, it
    returns True to stop the run: the disk is full."""

    def __init__(self, done: dict, failures: list):
        self.done, self.failures = done, failures
        self.ledger = self.bar = None  # set by _run_todo while the run lasts
        self.stats = {"processed": 0, "input_s": 0.0, "output_s": 0.0, "compute_s": 0.0}
        self.disk_full = []

    def __call__(self, results) -> bool:
        for result in results:
            if result.pop("ok"):
                if not self._record(result):
                    return True
            else:
                self.failures.append(result)
                if result["error"] == "DiskFull":
                    self.disk_full.append(result["id"])
        if self.bar is not None:
            self.bar.update(len(results))
            self.bar.set_postfix(failed=len(self.failures))
        return bool(self.disk_full)

    def _record(self, result) -> bool:
        """Ledger line and counts of one finished utterance; False when the disk is full."""
        try:
            self.ledger.write(json.dumps(result, ensure_ascii=False) + "\n")
            self.ledger.flush()
        except OSError as err:
            if _is_disk_full(err):
                self.disk_full.append(result["id"])
                return False
            raise
        self.done[result["id"]] = result
        self.stats["processed"] += 1
        self.stats["input_s"] += result["input_s"]
        self.stats["output_s"] += result["duration"]
        self.stats["compute_s"] += result["compute_s"]
        return True


def _run_todo(
    anonymizer,
    todo,
    out_dir: Path,
    suffix: str,
    sink: _ResultSink,
    *,
    progress: bool,
    name: str,
    runner: str,
    batch_size: int,
    ray_options: dict,
) -> tuple:
    """Run ``todo`` through the runner into ``sink`` (with a progress bar and the ledger open);
    ``(sink, set-up seconds)``. The ledger is opened even with nothing to do, as a mark of the run."""
    if progress and todo:
        from tqdm.auto import tqdm

        sink.bar = tqdm(total=len(todo), desc=f"anonymize[{name}]", unit="utt", dynamic_ncols=True)
    sink.ledger = open(out_dir / f".done{suffix}.jsonl", "a", encoding="utf-8")
    setup_s = 0.0
    try:
        if todo:
            if runner == "ray":
                setup_s = _run_ray(anonymizer, todo, out_dir, batch_size, sink, **ray_options)
            else:
                setup_s = _set_up(anonymizer)
                _run_local(anonymizer, todo, out_dir, batch_size, sink)
    finally:
        if sink.bar is not None:
            sink.bar.close()
        _close_ledger(sink.ledger)
    return sink, setup_s


def _set_up(anonymizer) -> float:
    """Call the anonymizer's optional ``setup()`` (model loading); its seconds."""
    setup = getattr(anonymizer, "setup", None)
    start = time.perf_counter()
    if callable(setup):
        setup()
    return time.perf_counter() - start


def _close_ledger(ledger) -> None:
    try:
        ledger.flush()
        os.fsync(ledger.fileno())  # the ledger is what a resumed run trusts: on disk before we go
    except OSError:
        pass
    ledger.close()


def _raise_disk_full(items, done: dict, out_dir: Path):
    finished = sum(1 for u in items if u.id in done)
    raise DiskFull(
        f"disk full while writing to {out_dir}: {finished} of {len(items)} utterances are "
        f"finished and kept, {len(items) - finished} are not",
        hint="free space and run the same command again: it resumes",
    )


def _report_head(anonymizer, name, settings, settings_hash, manifest, all_ids) -> dict:
    """What the run was: the anonymizer and its settings, the input (ids hashed for merging)."""
    return {
        "anonymizer": name,
        "keeps_words": getattr(anonymizer, "keeps_words", None),
        "settings": settings,
        "settings_hash": settings_hash,
        "input": manifest.name,
        "read_passages": bool(
            getattr(manifest, "read_passages", False)
        ),  # the input loader's mark, kept
        "input_ids_hash": digest(all_ids, n=None, default=repr),
    }


def _report_counts(shard, runner, items, records, sink: _ResultSink, cached: int) -> dict:
    return {
        "shard": list(shard),
        "runner": runner,
        "utterances": len(items),
        "finished": len(records),
        "processed": sink.stats["processed"],
        "cached": cached,
        "failed": len({f["id"] for f in sink.failures}),
        "complete": len(records) == len(items),
        "sample_rate": SAMPLE_RATE,
    }


def _report_timings(stats, setup_s, wall_start, done_all) -> dict:
    """Audio seconds, timings and real-time factors: of this run (``rtf``, ``rtf_wall``) and of
    every finished utterance, reused ones included (``rtf_all``)."""
    all_compute = sum(e.get("compute_s", 0.0) for e in done_all.values())
    all_input = sum(e.get("input_s", 0.0) for e in done_all.values())
    return {
        "input_audio_s": round(stats["input_s"], 3),
        "output_audio_s": round(stats["output_s"], 3),
        "timings_s": {
            "setup": round(setup_s, 3),
            "anonymize": round(stats["compute_s"], 3),
            "wall": round(time.perf_counter() - wall_start, 3),
        },
        "rtf": round(stats["compute_s"] / stats["input_s"], 5) if stats["input_s"] else None,
        "rtf_wall": round((time.perf_counter() - wall_start) / stats["input_s"], 5)
        if stats["input_s"]
        else None,
        "rtf_all": round(all_compute / all_input, 5) if all_input else None,
        "finished_input_s": round(all_input, 3),
        "finished_compute_s": round(all_compute, 3),
    }


def _shard_reports(out_dir: Path, n: int) -> dict:
    reports = {}
    for i in range(n):
        path = out_dir / f"anonymization.shard-{i}-of-{n}.json"
        if path.is_file():
            try:
                reports[i] = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
    return reports


def _all_shards_present(out_dir: Path, n: int, settings_hash: str, ids_hash: str) -> bool:
    reports = _shard_reports(out_dir, n)
    return len(reports) == n and all(
        r.get("settings_hash") == settings_hash and r.get("input_ids_hash") == ids_hash
        for r in reports.values()
    )


def merge_shards(out_dir, n=None) -> Manifest:
    """Merge ``manifest.shard-i-of-n.jsonl`` (all i) into ``manifest.jsonl`` in input order, with
    ``failures.jsonl`` and a summed ``anonymization.json``. ``n`` is found when there is one
    shard count in the folder."""
    out_dir = Path(out_dir)
    if n is None:
        n = _shard_count(out_dir)
    reports = _finished_shard_reports(out_dir, n)
    by_id, failures = _read_shard_outputs(out_dir, n)
    order = _input_order(reports, n)
    records = [by_id[i] for i in order if i in by_id]
    _write_jsonl(out_dir / "failures.jsonl", failures)
    _write_jsonl(out_dir / "manifest.jsonl", records)
    merged = _merged_report(reports, n, order)
    write_json(out_dir / "anonymization.json", merged)
    manifest = (
        _load_output_manifest(out_dir / "manifest.jsonl")
        if records
        else Manifest([], name=str(out_dir))
    )
    manifest.report = merged
    return manifest


def _shard_count(out_dir: Path) -> int:
    """The one shard count of the shard reports in ``out_dir``; none or several is an error."""
    counts = {
        int(m.group(1))
        for p in out_dir.glob("anonymization.shard-*-of-*.json")
        if (m := re.search(r"-of-(\d+)\.json$", p.name))
    }
    if len(counts) != 1:
        raise DataError(
            f"{out_dir}: found shard counts {sorted(counts) or 'none'}; give n",
            hint="sparc-eval anonymize --merge --out DIR --shard 0/N names n",
        )
    return counts.pop()


def _finished_shard_reports(out_dir: Path, n: int) -> dict:
    """The reports of all n shards, which must all be there and agree on settings and input."""
    reports = _shard_reports(out_dir, n)
    missing = [i for i in range(n) if i not in reports]
    if missing:
        raise DataError(
            f"{out_dir}: shards {missing} of {n} have not finished",
            hint="run them (--shard i/n) before merging",
        )
    first = reports[0]
    for i, r in reports.items():
        if r.get("settings_hash") != first.get("settings_hash") or r.get(
            "input_ids_hash"
        ) != first.get("input_ids_hash"):
            raise DataError(
                f"{out_dir}: shard {i} was run with other settings or another input than shard 0",
                hint="re-run every shard with the same anonymizer, settings and input",
            )
    return reports


def _read_shard_outputs(out_dir: Path, n: int) -> tuple:
    """``(manifest records by id, failure records)`` of all n shards, shard by shard."""
    by_id, failures = {}, []
    for i in range(n):
        for record in _read_jsonl_lenient(out_dir / f"manifest.shard-{i}-of-{n}.jsonl"):
            by_id[record["id"]] = record
        failures.extend(_read_jsonl_lenient(out_dir / f"failures.shard-{i}-of-{n}.jsonl"))
    return by_id, failures


def _input_order(reports: dict, n: int) -> list:
    """The ids of all shards in input order."""
    # shard i holds input positions i, i + n, ...: interleave back to input order
    order = []
    longest = max(len(r["ids"]) for r in reports.values())
    for k in range(longest):
        for i in range(n):
            ids = reports[i]["ids"]
            if k < len(ids):
                order.append(ids[k])
    return order


def _merged_report(reports: dict, n: int, order: list) -> dict:
    """One ``anonymization.json`` for all shards: shard 0's settings, summed counts and timings."""
    first = reports[0]
    total = {
        key: sum(r.get(key) or 0 for r in reports.values())
        for key in (
            "utterances",
            "finished",
            "processed",
            "cached",
            "failed",
            "input_audio_s",
            "output_audio_s",
        )
    }
    compute = sum(r["timings_s"]["anonymize"] for r in reports.values())
    return {
        **{
            k: first.get(k)
            for k in (
                "anonymizer",
                "keeps_words",
                "settings",
                "settings_hash",
                "input",
                "read_passages",
                "input_ids_hash",
                "runner",
            )
        },
        "shards": n,
        **total,
        "complete": total["finished"] == total["utterances"],
        "sample_rate": SAMPLE_RATE,
        "timings_s": {
            "anonymize": round(compute, 3),
            "wall_max_shard": max(r["timings_s"]["wall"] for r in reports.values()),
        },
        "rtf": round(compute / total["input_audio_s"], 5) if total["input_audio_s"] else None,
        "rtf_all": _ratio(
            sum(r.get("finished_compute_s") or 0 for r in reports.values()),
            sum(r.get("finished_input_s") or 0 for r in reports.values()),
        ),
        "ids": order,
    }


def _ratio(num, den):
    return round(num / den, 5) if den else None
