"""Utility of anonymized speech: what the anonymizer keeps. Each metric is a plug-in.

A utility metric is any object with::

    name: str
    compute(pair: UtilityInput) -> dict   # {"value", "ci95", "higher_is_better", "definition", ...}
                                          # or {"not_applicable": why}
    compare(a: dict, b: dict, pair_a, pair_b) -> dict   # optional: a paired difference b - a with its CI

named in the card's hparams (``utility: {wer: !new:sparc_eval.utility.metrics.WordErrorRate ...}``),
so that naturalness or emotion scorers can be added without touching the card. A metric class
registered in the entry-point group ``sparc_eval.utility_metrics`` can also be named by ``kind``
with its options (``utility: {wer: {kind: wer, asr: tiny.en}}``); :func:`utility_metric_class`
finds it. Built in (registered as ``wer``, ``rho_f0`` and ``gvd``):

- :class:`WordErrorRate`: WER of the anonymized speech re-transcribed by an ASR system against the
  reference transcripts (VoicePrivacy 2020/2022/2024 utility metric), beside the WER of the
  original speech; a 95% CI by resampling speakers.
- :class:`PitchCorrelation`: rho_F0, the Pearson correlation of the original and anonymized
  utterances' F0 over the frames voiced in both, averaged over utterances (VoicePrivacy 2022
  evaluation plan, section 3.2.3; the challenge asked for rho_F0 > 0.3). It compares frame by frame,
  so it applies only where the anonymizer keeps the timing (not STT-TTS, which says the words again
  with its own timing).
- :class:`VoiceDistinctiveness`: the gain of voice distinctiveness G_VD = 10 log10(D_diag(M_aa) /
  D_diag(M_oo)) from speaker similarity matrices M(i, j) = sigmoid(mean score of every utterance pair
  of speakers i and j, k != l when i = j) of original (oo) and anonymized (aa) speech, D_diag the
  difference between the mean diagonal and mean off-diagonal similarity (VoicePrivacy 2020 and 2022
  evaluation plans; Noe et al., Interspeech 2020). 0 dB keeps the voices as distinct as they were;
  below 0 they become more alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data.manifest import Manifest
from ..errors import DataError

UTILITY_METRIC_GROUP = "sparc_eval.utility_metrics"


@dataclass
class UtilityInput:
    anonymizer: str
    original: Manifest  # the evaluated utterances, original speech
    anonymized: Manifest  # the same ids, anonymized speech
    cache_folder: str = "results/cache"
    n_boot: int = 1000
    seed: int = 0
    progress: bool = False

    def pairs(self) -> list:
        """(original, anonymized) utterance pairs, in the original's order."""
        by_id = self.anonymized.by_id()
        return [(u, by_id[u.id]) for u in self.original if u.id in by_id]


def speaker_bootstrap(
    values: np.ndarray, weights: np.ndarray, speakers, *, n_boot: int, seed: int
) -> np.ndarray:
    """Resampled ratios sum(values) / sum(weights) over test speakers drawn with replacement
    (one value and weight per utterance): (n_boot,) draws."""
    names, index = np.unique(np.asarray(speakers, dtype=str), return_inverse=True)
    per_value = np.bincount(index, weights=values, minlength=names.size)
    per_weight = np.bincount(index, weights=weights, minlength=names.size)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(names.size, np.full(names.size, 1.0 / names.size), size=n_boot).astype(
        float
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counts @ per_value) / (counts @ per_weight)


def ci95(draws: np.ndarray):
    draws = draws[np.isfinite(draws)]
    return (
        None
        if draws.size == 0
        else [float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))]
    )


# --- registered metrics --------------------------------------------------------------------------


def utility_metric_class(kind: str):
    """The utility metric class registered under ``kind`` (entry-point group
    ``sparc_eval.utility_metrics``)."""
    from ..plugins import entry_points  # read at call time: tests and plug-ins may replace it

    registered = entry_points(UTILITY_METRIC_GROUP)
    if kind not in registered:
        raise DataError(
            f"no utility metric is registered as {kind!r}; "
            f"registered: {', '.join(sorted(registered)) or 'none'}",
            hint="name one, or build the metric with !new:package.module.Class",
        )
    try:
        return registered[kind].load()
    except ImportError as err:
        raise DataError(
            f"utility metric {kind!r} is registered as {registered[kind].value} "
            f"but cannot be imported: {err}",
            hint="check that its package is installed",
        ) from None


def utility_metric_from_spec(where: str, spec: dict):
    """The metric a ``{kind: <registered name>, <option>: <value>...}`` entry names, built with
    its options; ``where`` (``utility.<name>``) names the entry in errors."""
    options = dict(spec)
    kind = options.pop("kind", None)
    if not isinstance(kind, str) or not kind:
        raise DataError(
            f"{where} names no metric: it has no kind",
            hint="give kind: <registered name> with its options, or an object (!new:...)",
        )
    try:
        return utility_metric_class(kind)(**options)
    except TypeError as err:
        raise DataError(f"{where}: bad options {sorted(options)} for {kind!r}: {err}") from None


# --- WER -----------------------------------------------------------------------------------------


class WordErrorRate:
    """WER of re-transcribed anonymized speech (and of the original speech, for reference).
    Transcripts are cached by audio content and ASR settings, so the original speech is
    transcribed once for every anonymizer and re-run."""

    name = "wer"
    definition = (
        "word error rate of the anonymized speech transcribed by an ASR system, against the reference "
        "transcripts (VoicePrivacy Challenge utility metric); lower is better"
    )

    def __init__(self, asr=None):
        self.asr = asr

    def _asr(self):
        from ..speech.asr import make_asr

        if self.asr is None or isinstance(self.asr, str):
            self.asr = make_asr("faster-whisper" if self.asr is None else self.asr)
        return self.asr

    def transcripts(self, utterances, cache_folder: str, progress: bool) -> dict:
        from ..atomic import write_text
        from ..cache import content_key, settings_digest
        from ..speech.audio import read_utterance

        asr = self._asr()
        settings = (
            asr.settings()
            if callable(getattr(asr, "settings", None))
            else {"asr": type(asr).__name__}
        )
        root = Path(cache_folder) / "transcripts" / settings_digest(settings)
        out, todo = {}, []
        for utt in utterances:
            path = root / f"{content_key(utt, source='audio')}.txt"
            if path.is_file():
                out[utt.id] = path.read_text(encoding="utf-8")
            else:
                todo.append((utt, path))
        iterator = todo
        if progress and todo:
            from tqdm.auto import tqdm

            iterator = tqdm(todo, desc="wer", unit="utt")
        for utt, path in iterator:
            wav, sr = read_utterance(utt)
            out[utt.id] = asr.transcribe(wav, sr)
            write_text(path, out[utt.id])
        return out

    def _side(self, utterances, pair: UtilityInput) -> dict:
        from .wer import wer_from_pairs

        hyp = self.transcripts(utterances, pair.cache_folder, pair.progress)
        result = wer_from_pairs((u.id, u.text, hyp[u.id]) for u in utterances if u.text.strip())
        per = result["per_utterance"]
        ids = list(per)
        speakers = [pair.original.by_id()[i].speaker for i in ids]
        draws = speaker_bootstrap(
            np.array([per[i]["errors"] for i in ids], float),
            np.array([per[i]["words"] for i in ids], float),
            speakers,
            n_boot=pair.n_boot,
            seed=pair.seed,
        )
        return {
            "value": result["wer"],
            "ci95": ci95(draws),
            "errors": result["errors"],
            "words": result["words"],
            "utterances": result["utterances"],
            "per_utterance": {i: [per[i]["errors"], per[i]["words"]] for i in ids},
        }

    def compute(self, pair: UtilityInput) -> dict:
        pairs = pair.pairs()
        anonymized = self._side([a for _, a in pairs], pair)
        original = self._side([o for o, _ in pairs], pair)
        asr = self._asr()
        return {
            **anonymized,
            "original": {k: original[k] for k in ("value", "ci95", "errors", "words")},
            "higher_is_better": False,
            "definition": self.definition,
            "asr": asr.settings()
            if callable(getattr(asr, "settings", None))
            else type(asr).__name__,
        }

    @staticmethod
    def compare(a: dict, b: dict, pair_a: UtilityInput, pair_b: UtilityInput) -> dict:
        """WER(b) - WER(a) on the utterances both kept, with a CI resampling speakers for both alike."""
        ids = sorted(set(a["per_utterance"]) & set(b["per_utterance"]))
        if not ids:
            return {"not_applicable": "no utterance was transcribed for both"}
        speakers = np.array([pair_a.original.by_id()[i].speaker for i in ids], dtype=str)
        ea, eb = (np.array([x["per_utterance"][i][0] for i in ids], float) for x in (a, b))
        words = np.array([a["per_utterance"][i][1] for i in ids], float)
        draws_a = speaker_bootstrap(ea, words, speakers, n_boot=pair_a.n_boot, seed=pair_a.seed)
        draws_b = speaker_bootstrap(
            eb, words, speakers, n_boot=pair_a.n_boot, seed=pair_a.seed
        )  # same draws
        diff = float(eb.sum() / words.sum() - ea.sum() / words.sum())
        return {"diff": diff, "ci95": ci95(draws_b - draws_a), "n_utterances": len(ids)}


# --- rho_F0 --------------------------------------------------------------------------------------


class PitchCorrelation:
    """rho_F0 (VoicePrivacy 2022) from librosa's pYIN F0 (the challenge used YAAPT), on a seeded
    sample of ``max_utterances`` utterance pairs (null: every pair)."""

    name = "rho_f0"
    definition = (
        "Pearson correlation of the F0 of each original and anonymized utterance over the frames voiced "
        "in both, averaged over utterances (VoicePrivacy 2022; the challenge required rho_F0 > 0.3); "
        "higher is better"
    )

    def __init__(
        self,
        max_utterances=200,
        fmin: float = 50.0,
        fmax: float = 500.0,
        resolution: float = 0.5,
        hop_ms: float = 10.0,
        lowpass_hz: float | None = 1000.0,
        min_frames: int = 10,
        timing_tolerance_s: float = 0.05,
    ):
        self.max_utterances = None if max_utterances in (None, "null") else int(max_utterances)
        self.fmin, self.fmax, self.resolution, self.hop_ms = fmin, fmax, resolution, hop_ms
        self.lowpass_hz = (
            lowpass_hz  # pYIN's voicing decision fails on much McAdams output unless low-passed
        )
        self.min_frames, self.timing_tolerance_s = int(min_frames), timing_tolerance_s

    def timing_changed(self, pairs) -> str | None:
        """Why the anonymizer does not keep timing (None when it does)."""
        for o, a in pairs:
            if o.duration is None or a.duration is None:
                continue
            if abs(o.duration - a.duration) > max(self.timing_tolerance_s, 0.01 * o.duration):
                return (
                    f"the anonymized speech does not keep the original timing ({o.id}: {o.duration:.2f} s -> "
                    f"{a.duration:.2f} s); rho_F0 compares F0 frame by frame, so it applies to anonymizers that "
                    "keep timing (signal processing, voice conversion), not to ones that say the words again "
                    "with their own timing (STT-TTS)"
                )
        return None

    def f0(self, utt):
        import librosa

        from ..speech.audio import read_utterance

        wav, sr = read_utterance(utt, sample_rate=16000)
        if self.lowpass_hz:
            from scipy.signal import butter, sosfiltfilt

            wav = sosfiltfilt(butter(6, self.lowpass_hz, fs=sr, output="sos"), wav)
        hop = int(round(sr * self.hop_ms / 1000))
        f0, voiced, _ = librosa.pyin(
            np.asarray(wav, np.float32),
            fmin=self.fmin,
            fmax=self.fmax,
            sr=sr,
            frame_length=1024,
            hop_length=hop,
            resolution=self.resolution,
        )
        return f0, voiced

    def correlation(self, o, a):
        f0_o, v_o = self.f0(o)
        f0_a, v_a = self.f0(a)
        n = min(len(f0_o), len(f0_a))
        both = v_o[:n] & v_a[:n]
        if both.sum() < self.min_frames:
            return None
        x, y = f0_o[:n][both], f0_a[:n][both]
        if np.std(x) == 0 or np.std(y) == 0:
            return None
        return float(np.corrcoef(x, y)[0, 1])

    def compute(self, pair: UtilityInput) -> dict:
        pairs = pair.pairs()
        why = self.timing_changed(pairs)
        if why:
            return {"not_applicable": why, "definition": self.definition}
        if self.max_utterances is not None and len(pairs) > self.max_utterances:
            pick = np.sort(
                np.random.default_rng(pair.seed).permutation(len(pairs))[: self.max_utterances]
            )
            pairs = [pairs[i] for i in pick]
        iterator = pairs
        if pair.progress:
            from tqdm.auto import tqdm

            iterator = tqdm(pairs, desc="rho_f0", unit="utt")
        found = [(o.speaker, r) for o, a in iterator if (r := self.correlation(o, a)) is not None]
        if not found:
            return {
                "not_applicable": "no utterance pair has enough frames voiced in both",
                "definition": self.definition,
            }
        speakers, values = zip(*found)
        draws = speaker_bootstrap(
            np.array(values), np.ones(len(values)), speakers, n_boot=pair.n_boot, seed=pair.seed
        )
        return {
            "value": float(np.mean(values)),
            "ci95": ci95(draws),
            "utterances": len(values),
            "sampled": len(pairs),
            "sampled_from": len(pair.pairs()),
            "higher_is_better": True,
            "definition": self.definition,
            "estimator": f"librosa.pyin (fmin {self.fmin}, fmax {self.fmax}, resolution {self.resolution}, "
            f"hop {self.hop_ms} ms, low-passed at {self.lowpass_hz} Hz); pairs with fewer than "
            f"{self.min_frames} frames voiced in both are left out",
        }


# --- G_VD ----------------------------------------------------------------------------------------


def similarity_matrix(embeddings: dict, utt2spk: dict, speakers: list) -> np.ndarray:
    """M(i, j) = sigmoid(mean cosine of every utterance pair of speakers i and j; k != l when i = j)."""
    rows = {s: np.stack([embeddings[u] for u in utt2spk if utt2spk[u] == s]) for s in speakers}
    unit = {s: x / np.linalg.norm(x, axis=1, keepdims=True) for s, x in rows.items()}
    m = np.zeros((len(speakers), len(speakers)))
    for i, si in enumerate(speakers):
        for j, sj in enumerate(speakers):
            cos = unit[si] @ unit[sj].T
            if i == j:
                n = len(cos)
                mean = (cos.sum() - np.trace(cos)) / (n * (n - 1))
            else:
                mean = cos.mean()
            m[i, j] = 1.0 / (1.0 + math.exp(-mean))
    return m


def diagonal_dominance(m: np.ndarray) -> float:
    """D_diag(M): ``|mean of the diagonal - mean of the off-diagonal elements|``."""
    n = len(m)
    off = (m.sum() - np.trace(m)) / (n * (n - 1))
    return float(abs(np.trace(m) / n - off))


class VoiceDistinctiveness:
    """G_VD from a speaker encoder with ``embed(utterances) -> {id: vector}`` (an embedding
    attacker: the card's default is Resemblyzer, whose embeddings it has already cached) or, as
    in 0.3, ``embeddings(utterances)`` (an attacker's ``embeddings`` now takes a plan)."""

    name = "gvd"
    definition = (
        "gain of voice distinctiveness G_VD = 10 log10(D_diag(M_aa) / D_diag(M_oo)) from speaker "
        "similarity matrices of anonymized and original speech (VoicePrivacy 2020/2022); 0 dB: voices as "
        "distinct as before; below 0: more alike"
    )

    def __init__(self, encoder):
        self.embed = getattr(encoder, "embed", None) or getattr(encoder, "embeddings", None)
        if not callable(self.embed):
            raise DataError(
                f"G_VD needs an encoder with embed(utterances) ({type(encoder).__name__} has none)"
            )
        self.encoder = encoder

    def compute(self, pair: UtilityInput) -> dict:
        pairs = pair.pairs()
        counts = {}
        for o, _ in pairs:
            counts[o.speaker] = counts.get(o.speaker, 0) + 1
        speakers = sorted(s for s, n in counts.items() if n >= 2)
        if len(speakers) < 2:
            return {
                "not_applicable": "G_VD needs two speakers with two utterances each",
                "definition": self.definition,
            }
        keep = [(o, a) for o, a in pairs if o.speaker in counts and counts[o.speaker] >= 2]
        utt2spk = {o.id: o.speaker for o, _ in keep}
        m_oo = similarity_matrix(self.embed([o for o, _ in keep]), utt2spk, speakers)
        m_aa = similarity_matrix(self.embed([a for _, a in keep]), utt2spk, speakers)
        d_oo, d_aa = diagonal_dominance(m_oo), diagonal_dominance(m_aa)
        value = 10 * math.log10(d_aa / d_oo) if d_oo > 0 and d_aa > 0 else None
        return {
            "value": value,
            "ci95": None,
            "d_diag_original": d_oo,
            "d_diag_anonymized": d_aa,
            "speakers": len(speakers),
            "higher_is_better": True,
            "definition": self.definition,
            "encoder": type(self.encoder).__name__,
            "score": "cosine of the encoder's embeddings (the challenge: "
            "ASV_eval's PLDA log-likelihood ratios)",
        }
