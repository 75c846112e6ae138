"""Phone recognizers with durations: one small interface, several backends.

A recognizer turns audio into a time-aligned phone sequence::

    rec = make_recognizer("pocketsphinx")
    rec.recognize(wav, sr)          # -> [("SIL", 0.0, 0.32), ("DH", 0.32, 0.36), ...]

The output contract, which every backend keeps and the phone(+duration) features rely on:

- phones are symbols of :data:`~sparc_eval.phones.phoneset.PHONES` (the 39 CMU phones without
  stress, plus ``"SIL"``); a backend maps its own inventory onto these and documents the table;
- ``(phone, start_s, end_s)`` tuples in seconds, sorted, contiguous and non-overlapping: the
  first starts at 0, each starts where the previous one ends, the last ends at the audio's
  duration, and every segment is longer than zero; adjacent silences are merged;
- input is a 1-D array of samples (float in [-1, 1] or int16) at rate ``sr``; audio at another
  rate than the backend's is resampled; NaN/inf samples, a non-1-D array or a non-positive rate
  raise :class:`~sparc_eval.errors.DataError`; empty or all-zero audio returns ``[]`` with a
  warning (there is nothing to recognise), never an error from inside a backend.

Recognizers that need the transcript (forced alignment) take it as ``text=`` and say so with
``needs_text = True``; the others ignore ``text``. :func:`recognize_utterance` passes a manifest
utterance's audio and text to either kind.

Backends by name: ``"pocketsphinx"`` (phone recognition, the default) and ``"align"`` (forced
alignment of the transcript), both in :mod:`sparc_eval.phones.pocketsphinx_backend`. Any other
class is found by dotted path (``"mypkg.wavlm_phones.WavLMPhoneRecognizer"`` or
``"mypkg.wavlm_phones:WavLMPhoneRecognizer"``) or by an entry point in the group
``sparc_eval.phone_recognizers``; keyword arguments go to its constructor (a local checkpoint
path, say). A plug-in subclasses :class:`PhoneRecognizer` (or just has a ``recognize`` method with
the same signature) and can use :func:`check_audio_input` and :func:`frames_to_segments` to keep
the contract.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import Iterable, Optional, Sequence

import numpy as np

from ..errors import DataError
from ..plugins import entry_points, load_object, lookup
from .phoneset import PHONE_INDEX, SILENCE

PhoneSegment = tuple  # (phone: str, start_s: float, end_s: float)

DEFAULT_RECOGNIZER = "pocketsphinx"
BUILTIN = {
    "pocketsphinx": "sparc_eval.phones.pocketsphinx_backend:PocketsphinxPhoneRecognizer",
    "allphone": "sparc_eval.phones.pocketsphinx_backend:PocketsphinxPhoneRecognizer",
    "align": "sparc_eval.phones.pocketsphinx_backend:AlignmentPhoneRecognizer",
}
ENTRY_POINT_GROUP = "sparc_eval.phone_recognizers"

# A signal whose peak stays below one int16 step is treated as silence (digital zero).
SILENT_PEAK = 1.0 / 32768.0


class PhoneRecognizer(ABC):
    """Audio -> ``[(phone, start_s, end_s)]`` (see the module docstring for the contract)."""

    #: registry name, shown in logs and benchmark lines
    name: str = "recognizer"
    #: the rate the backend works at; other rates are resampled to it
    sample_rate: int = 16000
    #: True when ``recognize`` needs ``text=`` (forced alignment)
    needs_text: bool = False

    @abstractmethod
    def recognize(self, wav: np.ndarray, sr: int, text: Optional[str] = None) -> list:
        """Phones with start and end times in seconds, contiguous, covering the audio."""

    def __call__(self, wav, sr, text=None):
        return self.recognize(wav, sr, text=text)


def check_audio_input(
    wav, sr, *, target_sr: int = 16000, what: str = "audio"
) -> Optional[np.ndarray]:
    """Validate and normalise recognizer input.

    Returns mono float32 samples at ``target_sr`` in [-1, 1], or None (after a warning) when
    the audio is empty or silent. Raises DataError for a non-1-D array, NaN/inf samples, a
    non-positive or non-integer rate, or float samples far outside [-1, 1].
    """
    if isinstance(sr, bool) or not isinstance(sr, (int, np.integer)) or int(sr) <= 0:
        if isinstance(sr, float) and sr.is_integer() and sr > 0:
            sr = int(sr)
        else:
            raise DataError(f"{what}: sample rate must be a positive integer, got {sr!r}")
    sr = int(sr)
    try:
        wav = np.asarray(wav)
    except Exception as err:  # ragged lists and the like
        raise DataError(f"{what}: samples are not an array ({err})") from None
    if wav.ndim != 1:
        raise DataError(
            f"{what}: expected a 1-D array of samples, got shape {wav.shape}",
            hint="mix down to mono first, e.g. wav.mean(axis=1)",
        )
    if wav.dtype == np.int16:
        wav = wav.astype(np.float32) / 32768.0
    elif np.issubdtype(wav.dtype, np.integer):
        raise DataError(
            f"{what}: integer samples of type {wav.dtype}; pass int16 or float in [-1, 1]"
        )
    elif np.issubdtype(wav.dtype, np.floating):
        wav = wav.astype(np.float32, copy=False)
    else:
        raise DataError(f"{what}: samples of type {wav.dtype} are not audio")
    if wav.size and not np.all(np.isfinite(wav)):
        bad = int(np.count_nonzero(~np.isfinite(wav)))
        raise DataError(
            f"{what}: {bad} of {wav.size} samples are NaN or infinite",
            hint="the audio is corrupt; re-read or regenerate it",
        )
    peak = float(np.max(np.abs(wav))) if wav.size else 0.0
    if peak > 2.0:
        raise DataError(
            f"{what}: float samples reach {peak:.1f}, expected [-1, 1]",
            hint="integer PCM stored as float? divide by 32768",
        )
    if wav.size == 0 or peak < SILENT_PEAK:
        warnings.warn(
            f"{what}: {'empty' if wav.size == 0 else 'silent (all zero)'} audio, "
            f"no phones recognised",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    if sr != target_sr:
        from ..speech.audio import resample

        wav = resample(wav, sr, target_sr)
    if peak > 1.0 or wav.size and float(np.max(np.abs(wav))) > 1.0:
        wav = np.clip(wav, -1.0, 1.0)
    return wav


def frames_to_segments(
    labels: Iterable[tuple], *, frame_rate: float, duration: float, map_phone=None
) -> list:
    """``[(label, start_frame, end_frame_exclusive)]`` -> contiguous ``[(phone, start_s, end_s)]``.

    Labels go through ``map_phone`` (identity by default) and must land in PHONES. Adjacent
    silences merge; gaps close by letting the earlier segment run to the next one's start; the
    first segment starts at 0 and the last ends at ``duration`` (a decoder's last frame ends up
    to one analysis window before the end of the audio). Segments that would become empty
    are dropped.
    """
    raw = []
    for label, start, end in labels:
        phone = map_phone(label) if map_phone is not None else label
        if phone not in PHONE_INDEX:
            raise ValueError(f"recognizer produced {label!r} -> {phone!r}, not in PHONES")
        raw.append((phone, start / frame_rate, end / frame_rate))
    raw.sort(key=lambda seg: seg[1])
    out = []
    for phone, start, end in raw:
        if out and start < out[-1][2]:
            start = out[-1][2]  # overlap: the earlier segment keeps its end
        if end <= start:
            continue
        if out and out[-1][0] == phone == SILENCE:
            out[-1][2] = end
            continue
        if out:
            out[-1][2] = start  # close a gap
        out.append([phone, start, end])
    if not out:
        return []
    out[0][1] = 0.0
    # stretch or clip the tail to the audio's end, dropping segments entirely past it
    while len(out) > 1 and out[-1][1] >= duration:
        out.pop()
    out[-1][2] = float(duration)
    return [(p, float(round(s, 6)), float(round(e, 6))) for p, s, e in out]


def validate_segments(
    segments: Sequence[tuple], *, duration: Optional[float] = None, tolerance_s: float = 1e-6
) -> None:
    """Raise ValueError unless ``segments`` keeps the output contract (used by tests and plug-ins)."""
    prev_end = 0.0
    for i, seg in enumerate(segments):
        phone, start, end = seg
        if phone not in PHONE_INDEX:
            raise ValueError(f"segment {i}: {phone!r} is not in PHONES")
        if abs(start - prev_end) > tolerance_s:
            raise ValueError(
                f"segment {i}: starts at {start} but the previous one ends at {prev_end}"
            )
        if not end > start:
            raise ValueError(f"segment {i}: empty or reversed ({start}, {end})")
        prev_end = end
    if duration is not None and segments and abs(prev_end - duration) > 0.05:
        raise ValueError(f"segments end at {prev_end} s, the audio lasts {duration} s")


def phones_of(segments: Iterable[tuple], *, keep_silence: bool = False) -> list:
    """The phone symbols of a segment list (without silence unless asked)."""
    return [seg[0] for seg in segments if keep_silence or seg[0] != SILENCE]


def _load_object(spec: str):
    try:
        return load_object(spec)
    except DataError as err:
        raise DataError(
            f"phone recognizer {spec!r}: {err}",
            hint=f"use one of {', '.join(sorted(BUILTIN))} or a dotted path 'package.module.Class'",
        ) from None


def available_recognizers() -> list:
    """Names accepted by :func:`make_recognizer` besides dotted paths."""
    names = set(BUILTIN)
    try:
        names.update(entry_points(ENTRY_POINT_GROUP))
    except Exception:  # a broken installed package must not hide the built-ins
        pass
    return sorted(names)


def make_recognizer(name: str = DEFAULT_RECOGNIZER, **kwargs) -> PhoneRecognizer:
    """A recognizer by registry name, entry point name or dotted path; kwargs go to its constructor."""
    if not isinstance(name, str) or not name:
        raise DataError(f"phone recognizer name must be a non-empty string, got {name!r}")
    if name in BUILTIN:
        cls = _load_object(BUILTIN[name])
    else:
        hint = lambda: (  # noqa: E731 (asked on a miss)
            f"use one of {', '.join(available_recognizers())} or a dotted path 'package.module.Class'"
        )
        cls = lookup(ENTRY_POINT_GROUP, name, what="phone recognizer", dotted=True, hint=hint)
    if isinstance(cls, type) or callable(cls):
        try:
            recognizer = cls(**kwargs)
        except TypeError as err:
            raise DataError(
                f"phone recognizer {name!r}: cannot create it with options {sorted(kwargs)} ({err})",
                hint="check the recognizer options (recognizer_options in the hparams)",
            ) from None
    else:
        recognizer = cls
    if not callable(getattr(recognizer, "recognize", None)):
        raise DataError(
            f"phone recognizer {name!r}: {recognizer!r} has no recognize(wav, sr) method"
        )
    return recognizer


def recognize_utterance(recognizer, utt, text=None) -> list:
    """Recognise one manifest utterance, passing a transcript to recognizers that need one:
    ``text`` (the words the utterance says, :func:`sparc_eval.data.words.spoken_text`), by default
    its reference text."""
    from ..speech.audio import read_utterance

    sr = getattr(recognizer, "sample_rate", 16000) or 16000
    wav, sr = read_utterance(utt, sample_rate=sr)
    if getattr(recognizer, "needs_text", False):
        text = utt.text if text is None else text
        if not text:
            raise DataError(
                f"utterance {utt.id!r} has no transcript, which forced alignment needs",
                hint="use a phone recognizer (e.g. 'pocketsphinx') for audio-only corpora",
            )
        return recognizer.recognize(wav, sr, text=text)
    return recognizer.recognize(wav, sr)
