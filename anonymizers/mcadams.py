"""McAdams-coefficient anonymization (VoicePrivacy Challenge baseline B2, Patino et al. 2021).

Per frame (20 ms Hann-root windows every 10 ms): LPC analysis (order 20), the angle ``phi`` of
each complex pole pair is moved to ``phi ** alpha`` (radians, clipped to [0, pi]) with its
radius kept, the LPC residual is filtered through the warped all-pole filter, and the frames are
overlap-added. ``alpha`` < 1 moves low formants up and high formants down. The output has
exactly the input's length and is scaled to the input's peak level.

Differences from the VPC script, all on purpose: every frame is processed (the script skips the
first), the signal is padded so its ends are covered, LPC uses the autocorrelation method
(Levinson-Durbin, always a stable filter) instead of Burg, conjugate pairs are found by the
sign of their imaginary part, not by position, and the work is vectorised over frames (numpy and
scipy only).

``random_per_speaker=(low, high)`` draws ``alpha`` uniformly from a generator seeded by
``(seed, speaker)``: the same speaker always gets the same ``alpha``, in any order, shard or
worker; with ``draws="utterance"`` each utterance gets its own, seeded by ``(seed, utterance id)``
(the VPC 2022 "random McAdams" draws 0.5-0.9 per utterance). At a fixed ``alpha`` the
anonymizer is deterministic.
"""

from __future__ import annotations

import numpy as np

from sparc_eval.errors import DataError

from .base import DRAW_MODES, Anonymizer


def _levinson(r: np.ndarray, order: int) -> np.ndarray:
    """LPC polynomials (frames, order + 1) with a[:, 0] = 1 from autocorrelations r[:, :order + 1]."""
    frames = r.shape[0]
    a = np.zeros((frames, order + 1))
    a[:, 0] = 1.0
    err = r[:, 0].copy()
    for i in range(1, order + 1):
        acc = (
            r[:, i] + np.einsum("fj,fj->f", a[:, 1:i], r[:, i - 1 : 0 : -1])
            if i > 1
            else r[:, i].copy()
        )
        k = -acc / err
        previous = a[:, 1:i].copy()
        a[:, 1:i] = previous + k[:, None] * previous[:, ::-1]
        a[:, i] = k
        err = np.maximum(err * (1.0 - k * k), 1e-30)
    return a


def _poly_from_roots(roots: np.ndarray) -> np.ndarray:
    """Monic polynomials (frames, p + 1) with the given roots (frames, p)."""
    frames, p = roots.shape
    c = np.zeros((frames, p + 1), dtype=complex)
    c[:, 0] = 1.0
    for k in range(p):
        c[:, 1 : k + 2] = c[:, 1 : k + 2] - roots[:, k : k + 1] * c[:, 0 : k + 1]
    return c.real


def mcadams_transform(
    wav: np.ndarray,
    sr: int,
    alpha: float = 0.8,
    *,
    win_ms: float = 20.0,
    shift_ms: float = 10.0,
    lp_order: int = 20,
) -> np.ndarray:
    """The McAdams transformation of a mono signal; same length, float32."""
    x = np.asarray(wav, dtype=np.float64).reshape(-1)
    n = x.size
    if n == 0:
        return np.zeros(0, np.float32)
    winlen = int(np.floor(win_ms * 1e-3 * sr))
    shift = int(np.floor(shift_ms * 1e-3 * sr))
    if winlen <= lp_order or shift <= 0 or shift > winlen:
        raise DataError(
            f"McAdams: window {winlen} samples / shift {shift} do not fit LPC order {lp_order} at {sr} Hz"
        )
    hann = np.hanning(winlen)
    win = np.sqrt(hann / (hann.sum() / shift))
    blocks = -(-(n + 2 * winlen) // shift)  # whole number of shifts covering pad + signal + pad
    padded = np.zeros(blocks * shift + winlen)
    padded[winlen : winlen + n] = x
    n_frames = 1 + (padded.size - winlen) // shift
    starts = shift * np.arange(n_frames)
    frames = padded[starts[:, None] + np.arange(winlen)[None, :]] * win

    a = _lpc(frames, lp_order)
    a_new = _warp_poles(a, alpha)
    out_frames = _refilter(frames, a, a_new) * win
    out = _overlap_add(out_frames, starts, padded.size, shift)
    y = out[winlen : winlen + n]
    if not np.all(np.isfinite(y)):
        raise DataError("McAdams produced non-finite samples (unstable LPC filter)")
    peak_in, peak_out = np.max(np.abs(x)), np.max(np.abs(y))
    if peak_out > 0:
        y = y * (peak_in / peak_out)
    return y.astype(np.float32)


def _lpc(frames: np.ndarray, lp_order: int) -> np.ndarray:
    """LPC by the autocorrelation method, with a tiny white-noise floor for silent frames."""
    winlen = frames.shape[1]
    nfft = 1 << int(np.ceil(np.log2(2 * winlen)))
    spec = np.fft.rfft(frames, nfft, axis=1)
    r = np.fft.irfft(spec.real**2 + spec.imag**2, nfft, axis=1)[:, : lp_order + 1]
    r[:, 0] = r[:, 0] * (1.0 + 1e-9) + 1e-12
    return _levinson(r, lp_order)


def _warp_poles(a: np.ndarray, alpha: float) -> np.ndarray:
    """Poles as eigenvalues of the companion matrices; the angles of complex poles raised to
    ``alpha`` (radius kept); the polynomials of the moved poles."""
    n_frames, lp_order = a.shape[0], a.shape[1] - 1
    companion = np.zeros((n_frames, lp_order, lp_order))
    companion[:, 0, :] = -a[:, 1:]
    companion[:, np.arange(1, lp_order), np.arange(lp_order - 1)] = 1.0
    poles = np.linalg.eigvals(companion)
    angle, radius = np.angle(poles), np.abs(poles)
    is_complex = np.abs(poles.imag) > 1e-10
    warped = np.sign(angle) * np.minimum(np.abs(angle) ** alpha, np.pi)
    new_angle = np.where(is_complex, warped, angle)
    return _poly_from_roots(radius * np.exp(1j * new_angle))


def _refilter(frames: np.ndarray, a: np.ndarray, a_new: np.ndarray) -> np.ndarray:
    """The residual (FIR with each frame's own filter ``a``), through the all-pole filter ``a_new``."""
    n_frames, winlen = frames.shape
    lp_order = a.shape[1] - 1
    residual = np.zeros_like(frames)
    for k in range(lp_order + 1):
        residual[:, k:] += a[:, k : k + 1] * frames[:, : winlen - k]
    history = np.zeros((n_frames, lp_order + winlen))
    a_rev = a_new[:, :0:-1]  # a_p ... a_1
    for t in range(winlen):
        history[:, lp_order + t] = residual[:, t] - np.einsum(
            "fk,fk->f", a_rev, history[:, t : t + lp_order]
        )
    return history[:, lp_order:]


def _overlap_add(out_frames: np.ndarray, starts: np.ndarray, size: int, shift: int) -> np.ndarray:
    """Overlap-add frames starting at ``starts`` into ``size`` samples; in blocks of one shift
    (fast) when the window is a whole number of shifts, else sample by sample."""
    n_frames, winlen = out_frames.shape
    out = np.zeros(size)
    grid = out.reshape(-1, shift) if out.size % shift == 0 else None
    if grid is not None and winlen % shift == 0:
        for b in range(winlen // shift):
            grid[b : b + n_frames] += out_frames[:, b * shift : (b + 1) * shift]
    else:
        np.add.at(out, starts[:, None] + np.arange(winlen)[None, :], out_frames)
    return out


class McAdams(Anonymizer):
    """VPC B2. ``alpha``: the McAdams coefficient (0.8 in the VPC); ``random_per_speaker``:
    ``(low, high)`` to draw ``alpha`` instead (seeded by ``seed``), per speaker or, with
    ``draws="utterance"``, per utterance."""

    name = "mcadams"
    keeps_words = True
    sample_rate = 16000

    def __init__(
        self,
        alpha: float = 0.8,
        *,
        random_per_speaker=None,
        seed: int = 0,
        win_ms: float = 20.0,
        shift_ms: float = 10.0,
        lp_order: int = 20,
        draws: str = "speaker",
    ):
        if draws not in DRAW_MODES:
            raise DataError(f"McAdams: draws must be one of {DRAW_MODES}, got {draws!r}")
        if random_per_speaker is not None:
            low, high = (float(v) for v in random_per_speaker)
            if not 0 < low <= high:
                raise DataError(
                    f"McAdams: random_per_speaker must be (low, high) with 0 < low <= high, "
                    f"got {random_per_speaker!r}"
                )
            random_per_speaker = [low, high]
        if not 0 < float(alpha):
            raise DataError(f"McAdams: alpha must be positive, got {alpha!r}")
        self.alpha = float(alpha)
        self.random_per_speaker = random_per_speaker
        self.seed = int(seed)
        self.win_ms, self.shift_ms, self.lp_order = float(win_ms), float(shift_ms), int(lp_order)
        self.draws = draws

    def settings(self) -> dict:
        out = super().settings()
        if (
            out.get("draws") == "speaker"
        ):  # today's mode keeps the keys made before it was an option
            del out["draws"]
        return out

    @property
    def deterministic(self) -> bool:
        return self.random_per_speaker is None

    def alpha_for(self, speaker) -> float:
        if self.random_per_speaker is None:
            return self.alpha
        state = self.speaker_state
        if speaker not in state:
            low, high = self.random_per_speaker
            state[speaker] = float(self.speaker_rng(speaker).uniform(low, high))
        return state[speaker]

    def _alpha(self, utterance) -> float:
        if self.random_per_speaker is not None and self.draws == "utterance":
            return float(self.utterance_rng(utterance.id).uniform(*self.random_per_speaker))
        return self.alpha_for(utterance.speaker)

    def anonymize(self, wav, sr, utterance):
        alpha = self._alpha(utterance)
        if self.random_per_speaker is not None:
            utterance.extra["mcadams_alpha"] = round(alpha, 6)
        return mcadams_transform(
            wav, sr, alpha, win_ms=self.win_ms, shift_ms=self.shift_ms, lp_order=self.lp_order
        ), sr
