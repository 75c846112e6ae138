"""F0 contours and their correlation: what rho_F0 (:class:`sparc_eval.utility.metrics.PitchCorrelation`)
is made of.

Trackers: each ``track(wav, sr, fmin=, fmax=, hop_s=)`` takes 16 kHz mono float audio and returns
one F0 value (Hz) per ``hop_s`` frame, 0 where the frame is unvoiced.

- ``praat`` (default): Praat's autocorrelation pitch through ``parselmouth``,
  ``Sound.to_pitch(time_step=0.01, pitch_floor=75, pitch_ceiling=500)``: the tracker and settings of
  the VoicePrivacy 2022 evaluation code (``baseline/local/pitch_correlation.py`` of
  Voice-Privacy-Challenge-2022 computes the challenge's rho_F0 with exactly this call). The
  challenge's YAAPT is its B1 baseline's F0 extractor (``local/featex/f0_yaapt``), not the metric's.
- ``yaapt``: pYAAPT from ``amfm-decompy`` (the port of YAAPT that VoicePrivacy's B1 anonymizer uses),
  35 ms frames, YAAPT's own voicing decision; about 10x slower than ``praat`` here.
- ``pyin``: ``librosa.pyin`` (probabilistic YIN, 1024-sample frames, 0.5-semitone resolution) after a
  1 kHz low-pass: without it pYIN's voicing decision fails on much McAdams output.
- ``yin``: ``librosa.yin``, which has no voicing decision of its own: frames whose RMS is 25 dB or
  more below the utterance's loudest frame are called unvoiced.

Correlation of one original and one anonymized contour (``frames``):

- ``voiced`` (default): Pearson's r over the frames voiced in both contours, the shorter length
  taken (the anonymizer keeps the timing); ``None`` with fewer than ``min_frames`` such frames or a
  constant contour, and such a pair is left out of the mean (VoicePrivacy 2022 evaluation plan: the
  correlation of the two F0 sequences over voiced frames; the challenge code's own comment says
  "excluding unvoiced parts").
- ``vpc2022_code``: what the challenge code computes, to reproduce its published numbers: the
  shorter contour linearly stretched to the longer's length, values outside [fmin, fmax] set to 0,
  the anonymized contour shifted by the lag that maximises their cross-correlation, then Pearson's
  r over every frame, unvoiced zeros included (its comment to the contrary); a constant contour
  gives 0 and is kept in the mean.
"""

from __future__ import annotations

import numpy as np

from ..errors import one_of

TRACKERS = ("praat", "yaapt", "pyin", "yin")
FRAMES = ("voiced", "vpc2022_code")
CHALLENGE_TRACKER = "praat"
YIN_VOICING_DB = 25.0  # yin: frames this far below the loudest frame's RMS are unvoiced


def _praat(wav, sr, *, fmin, fmax, hop_s, **_):
    from ..speech.backends import require

    parselmouth = require("parselmouth", extra="pitch", purpose="the praat F0 tracker")
    sound = parselmouth.Sound(np.asarray(wav, np.float64), sampling_frequency=float(sr))
    pitch = sound.to_pitch(time_step=hop_s, pitch_floor=fmin, pitch_ceiling=fmax)
    return np.nan_to_num(np.asarray(pitch.selected_array["frequency"], np.float64))


def _yaapt(wav, sr, *, fmin, fmax, hop_s, **_):
    from ..speech.backends import require

    basic = require("amfm_decompy.basic_tools", extra="pitch", purpose="the yaapt F0 tracker")
    yaapt = require("amfm_decompy.pYAAPT", extra="pitch", purpose="the yaapt F0 tracker")
    signal = basic.SignalObj(data=np.asarray(wav, np.float64), fs=sr)
    with np.errstate(invalid="ignore", divide="ignore"):  # its NCCF divides by silent frames' 0
        pitch = yaapt.yaapt(
            signal, f0_min=float(fmin), f0_max=float(fmax), frame_space=1000.0 * hop_s
        )
    return np.asarray(pitch.samp_values, np.float64)


def _lowpassed(wav, sr, lowpass_hz):
    if not lowpass_hz:
        return np.asarray(wav, np.float32)
    from scipy.signal import butter, sosfiltfilt

    return sosfiltfilt(butter(6, lowpass_hz, fs=sr, output="sos"), wav).astype(np.float32)


def _pyin(wav, sr, *, fmin, fmax, hop_s, resolution=0.5, lowpass_hz=1000.0, **_):
    from ..speech.backends import require

    librosa = require("librosa", extra="pitch", purpose="the pyin F0 tracker")
    f0, voiced, _ = librosa.pyin(
        _lowpassed(wav, sr, lowpass_hz),
        fmin=fmin,
        fmax=fmax,
        sr=sr,
        frame_length=1024,
        hop_length=int(round(sr * hop_s)),
        resolution=resolution,
    )
    return np.where(voiced, np.nan_to_num(f0), 0.0)


def _yin(wav, sr, *, fmin, fmax, hop_s, lowpass_hz=None, **_):
    from ..speech.backends import require

    librosa = require("librosa", extra="pitch", purpose="the yin F0 tracker")
    hop = int(round(sr * hop_s))
    audio = _lowpassed(wav, sr, lowpass_hz)
    f0 = librosa.yin(audio, fmin=fmin, fmax=fmax, sr=sr, frame_length=1024, hop_length=hop)
    rms = librosa.feature.rms(y=audio, frame_length=1024, hop_length=hop)[0][: len(f0)]
    loud = (
        rms >= rms.max() * 10 ** (-YIN_VOICING_DB / 20) if rms.size and rms.max() > 0 else rms > 0
    )
    return np.where(loud, f0[: len(rms)], 0.0)


_TRACK = {"praat": _praat, "yaapt": _yaapt, "pyin": _pyin, "yin": _yin}


def check_tracker(tracker: str) -> str:
    return one_of(
        tracker,
        TRACKERS,
        "F0 tracker",
        f"rho_F0's tracker is one of {', '.join(TRACKERS)} (praat: VoicePrivacy 2022's)",
    )


def track(wav, sr, tracker: str = "praat", **options) -> np.ndarray:
    """One F0 value (Hz) per frame, 0 where unvoiced (see the module doc for the trackers)."""
    f0 = _TRACK[check_tracker(tracker)](wav, sr, **options)
    return np.where(np.isfinite(f0) & (f0 > 0), f0, 0.0)


def voiced_correlation(f0_o, f0_a, *, min_frames: int = 10):
    """Pearson's r over the frames voiced in both contours (the shorter length); None when fewer
    than ``min_frames`` frames are voiced in both or either side is constant there."""
    n = min(len(f0_o), len(f0_a))
    x, y = np.asarray(f0_o[:n], float), np.asarray(f0_a[:n], float)
    both = (x > 0) & (y > 0)
    if both.sum() < max(int(min_frames), 2):
        return None
    x, y = x[both], y[both]
    if np.std(x) == 0 or np.std(y) == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def _stretched(f0, n):
    """``f0`` linearly resampled to ``n`` points over the same span (the challenge code's interp1d)."""
    if len(f0) == n or len(f0) < 2:
        return np.asarray(f0, float)
    return np.interp(np.linspace(0, len(f0) - 1, n), np.arange(len(f0)), f0)


def vpc2022_code_correlation(f0_o, f0_a, *, fmin: float = 75.0, fmax: float = 500.0) -> float:
    """rho_F0 of one pair as VoicePrivacy 2022's evaluation code computes it (see the module doc)."""
    n = max(len(f0_o), len(f0_a))
    a, b = _stretched(f0_o, n), _stretched(f0_a, n)
    a = np.where((a < fmin) | (a > fmax), 0.0, a)
    b = np.where((b < fmin) | (b > fmax), 0.0, b)
    lag = int(np.argmax(np.correlate(a, b, "full"))) - (n - 1)
    b = np.roll(b, lag)
    if n < 2 or np.std(a) == 0 or np.std(b) == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])
