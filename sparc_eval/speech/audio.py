"""Audio access for manifests: durations, checks, and reading segments at a target rate."""

from __future__ import annotations

import warnings
from math import gcd

import numpy as np
import soundfile as sf

from ..errors import DataError


def _info(utt):
    try:
        return sf.info(utt.audio.path)
    except (RuntimeError, sf.LibsndfileError) as err:
        raise DataError(
            f"utterance {utt.id!r}: cannot read audio {utt.audio.path} ({err})",
            hint="the file is corrupt or not audio; replace or drop it",
        ) from None


def fill_durations(utterances, *, keep_unreadable: bool = False) -> list:
    """Set ``duration`` from the audio headers where it is missing (on utterances a loader has just
    made, before they are in a manifest). A file whose header cannot be read is an error naming
    it, or with ``keep_unreadable`` (the anonymizer's loading: it lists such utterances in
    failures.jsonl and goes on) keeps an unknown duration, with one warning. Returns their ids."""
    unreadable = []
    for utt in utterances:
        if utt.audio is None or utt.duration is not None:
            continue
        if utt.audio.start is not None and utt.audio.stop is not None:
            utt.duration = utt.audio.stop - utt.audio.start
            continue
        try:
            info = _info(utt)
        except DataError as err:
            if not keep_unreadable:
                raise
            unreadable.append((utt.id, str(err)))
            continue
        utt.duration = info.frames / info.samplerate
    if unreadable:
        warnings.warn(
            f"{len(unreadable)} audio file(s) cannot be read, e.g. {unreadable[0][1]}; their duration "
            "is unknown",
            stacklevel=2,
        )
    return [u for u, _ in unreadable]


def check_audio(manifest, *, sample_rate: int | None = 16000, tolerance_s: float = 0.05) -> None:
    """Open every file's header: unreadable files, another sample rate, or a duration that
    disagrees with the manifest raise DataError naming the utterance."""
    for utt in manifest:
        if utt.audio is None:
            continue
        info = _info(utt)
        if sample_rate is not None and info.samplerate != sample_rate:
            raise DataError(
                f"utterance {utt.id!r}: {utt.audio.path} is {info.samplerate} Hz, expected {sample_rate} Hz",
                hint="resample the corpus (sparc-eval anonymize --anonymizer identity writes 16 kHz copies)",
            )
        if utt.audio.start is None and utt.duration is not None:
            actual = info.frames / info.samplerate
            if abs(actual - utt.duration) > tolerance_s:
                raise DataError(
                    f"utterance {utt.id!r}: audio lasts {actual:.3f} s but the manifest says "
                    f"{utt.duration:.3f} s",
                    hint="regenerate utt2dur or the manifest",
                )


def resample(wav: np.ndarray, sr: int, target_sr: int) -> np.ndarray:
    if sr == target_sr:
        return wav
    from scipy.signal import resample_poly

    g = gcd(sr, target_sr)
    return resample_poly(wav, target_sr // g, sr // g).astype(np.float32)


def read_utterance(utt, *, sample_rate: int | None = 16000) -> tuple:
    """(mono float32 samples, rate) of an utterance's audio (its segment when it has one),
    resampled to ``sample_rate`` unless that is None."""
    if utt.audio is None:
        raise DataError(
            f"utterance {utt.id!r} has no audio (text-only corpus)",
            hint="audio features need a corpus with audio; use text features instead",
        )
    info = _info(utt)
    start = 0 if utt.audio.start is None else int(round(utt.audio.start * info.samplerate))
    stop = None if utt.audio.stop is None else int(round(utt.audio.stop * info.samplerate))
    try:
        wav, sr = sf.read(utt.audio.path, start=start, stop=stop, dtype="float32", always_2d=True)
    except (RuntimeError, sf.LibsndfileError) as err:
        raise DataError(f"utterance {utt.id!r}: cannot decode {utt.audio.path} ({err})") from None
    wav = wav.mean(axis=1)
    if wav.size == 0:
        raise DataError(
            f"utterance {utt.id!r}: {utt.audio.path} holds no samples in the requested span"
        )
    if sample_rate is not None:
        wav, sr = resample(wav, sr, sample_rate), sample_rate
    return wav, sr
