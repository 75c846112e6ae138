"""Naturalness of anonymized speech: a predicted MOS from non-intrusive predictors whose weights ship
inside their packages (nothing is downloaded).

Registered as ``dnsmos`` and ``distillmos`` (off by default; ``--naturalness=True`` turns both on):

- :class:`DNSMOS`: Microsoft's DNSMOS from the ``speechmos`` package: the P.835 model
  (``sig_bak_ovr.onnx``: speech signal SIG, background BAK, overall OVRL) and the P.808 model
  (``model_v8.onnx``), run as the DNS Challenge's ``dnsmos_local.py`` runs them (a clip shorter than
  9.01 s is repeated to that length, then 9.01 s windows every second, averaged). The headline is
  OVRL; SIG, BAK and P.808 are beside it.
- :class:`DistillMOS`: DistillMOS from the ``distillmos`` package (``distill_mos_v7.pt``), a
  convolutional transformer distilled from an XLS-R speech-quality model; 7.68 s windows, averaged.

Each predicts one score per utterance on the original and on the anonymized trial utterances (the
trial lists :meth:`~sparc_eval.utility.metrics.UtilityInput.lists` gives); the card gives each side's
mean with a speaker-bootstrap 95% CI and the paired anonymized - original difference with its CI,
over every trial utterance and per trial list. A predicted MOS is what a model trained on listening
tests expects listeners to say, not a listening test; neither model was validated on the output of
speaker anonymizers (docs/definitions.md). Predictions are cached by the audio's content, the model
files' bytes and the package's version, like transcripts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

from ..errors import DataError
from ..plugins import package_folder
from .metrics import UtilityInput, ci95, speaker_bootstrap

PREDICTORS = ("dnsmos", "distillmos")  # what --naturalness=True turns on
SAMPLE_RATE = 16000
PROCESSING_VERSION = 1  # bump when what this module does around a model changes (clipping, reading)
UNAVAILABLE_OFFLINE = (
    "NISQA and UTMOS, which papers on anonymization also report, are not available offline: the "
    "nisqa and utmos packages on PyPI ship no weights (utmos downloads its model at run time)"
)


def paired_means(original, anonymized, speakers, *, n_boot: int, seed: int) -> dict:
    """Each side's mean score and the paired anonymized - original difference, each with a 95% CI
    from the same resampled speakers (one score per utterance and side)."""
    original, anonymized = np.asarray(original, float), np.asarray(anonymized, float)
    ones = np.ones(original.size)
    draws_o = speaker_bootstrap(original, ones, speakers, n_boot=n_boot, seed=seed)
    draws_a = speaker_bootstrap(anonymized, ones, speakers, n_boot=n_boot, seed=seed)
    return {
        "original": {"value": float(original.mean()), "ci95": ci95(draws_o)},
        "anonymized": {"value": float(anonymized.mean()), "ci95": ci95(draws_a)},
        "diff": {"value": float((anonymized - original).mean()), "ci95": ci95(draws_a - draws_o)},
        "utterances": int(original.size),
        "speakers": len(set(speakers)),
    }


class PredictedMOS:
    """A non-intrusive MOS predictor as a utility metric. A subclass gives ``name``, ``outputs``
    (the scores one prediction returns, the headline first), ``model``, ``trained_on``,
    ``packages`` (what it imports: the first holds the model, its version keys the cache),
    ``model_files()``, ``settings()`` and ``predict_one(wav)`` (16 kHz mono float32 -> one score
    per output)."""

    name = ""
    outputs: tuple = ()
    model = ""
    trained_on = ""
    packages: tuple = ()
    install = ""

    def __init__(self):
        self.predicted_now = 0  # utterances run through the model by the last compute()
        self._loaded = None
        missing = [m for m in self.packages if package_folder(m) is None]
        if missing:  # when the card is set up, not after its anonymization and attacks
            raise DataError(
                f"the {self.name} utility metric needs {', '.join(missing)}, which "
                f"{'is' if len(missing) == 1 else 'are'} not installed",
                hint=f"make install installs it; by hand: {self.install}",
            )

    def package_version(self) -> str:
        from importlib.metadata import PackageNotFoundError, version

        if not self.packages:
            return "none"
        try:
            return version(self.packages[0])
        except PackageNotFoundError:
            return "unknown"

    @property
    def definition(self) -> str:
        return (
            f"predicted MOS ({self.model}; 1 bad .. 5 excellent) of the anonymized trial utterances, "
            "a model's estimate of a listening test, not one; beside it the original speech's and "
            "the paired difference (anonymized - original); higher is better"
        )

    def cache(self, cache_folder, key: Optional[dict] = None):
        """Where predictions live: keyed by :meth:`key_settings` (``key``, when already taken)."""
        from ..cache import ArrayCache, file_digests

        key = key or self.key_settings(file_digests(cache_folder))
        return ArrayCache(cache_folder, "naturalness", key)

    def key_settings(self, digests=None) -> dict:
        """What a prediction depends on beside the audio: the model files' bytes, the package's
        code (its version: windowing and score mapping live there) and this module's handling."""
        from ..digest import content_digest

        return {
            "predictor": self.name,
            "model_digest": content_digest(self.model_files(), digests=digests),
            "package": self.package_version(),
            "processing": PROCESSING_VERSION,
            **self.settings(),
        }

    def predictions(self, utterances, cache_folder, progress: bool = False, key=None) -> dict:
        """{utterance id: scores (one per output)}, from the cache where the same audio was scored
        by the same model, else predicted and cached one utterance at a time."""
        from ..cache import cached_by_audio

        cache = self.cache(cache_folder, key)

        def fill(todo):
            if progress:
                from tqdm.auto import tqdm

                todo = tqdm(todo, desc=self.name, unit="utt")
            for utt, key in todo:
                cache.put(key, self._predict_utterance(utt))

        found, made = cached_by_audio(utterances, cache, fill)
        self.predicted_now += made
        return found

    def _predict_utterance(self, utt) -> np.ndarray:
        from ..speech.audio import read_utterance

        wav, _ = read_utterance(utt, sample_rate=SAMPLE_RATE)
        try:
            return np.asarray(self.predict_one(wav), float)
        except (RuntimeError, ValueError) as err:
            raise DataError(
                f"{self.name} could not score utterance {utt.id!r} ({utt.audio.path}): {err}"
            ) from None

    def compute(self, pair: UtilityInput) -> dict:
        self.predicted_now = 0
        lists = pair.lists()
        chosen = {o.id: (o, a) for got in lists.values() for o, a in got}
        if not chosen:
            return {"not_applicable": "no trial utterance among the evaluated pairs"}
        from ..cache import file_digests

        pairs = list(chosen.values())
        key = self.key_settings(file_digests(pair.cache_folder))  # the model's digest, once
        scored_o = self.predictions([o for o, _ in pairs], pair.cache_folder, pair.progress, key)
        scored_a = self.predictions([a for _, a in pairs], pair.cache_folder, pair.progress, key)
        per_utterance = {o.id: [scored_o[o.id], scored_a[a.id]] for o, a in pairs}

        def summary(got, column=0):
            return paired_means(
                [per_utterance[o.id][0][column] for o, _ in got],
                [per_utterance[o.id][1][column] for o, _ in got],
                [o.speaker for o, _ in got],
                n_boot=pair.n_boot,
                seed=pair.seed,
            )

        overall = summary(pairs)
        return {
            "value": overall["anonymized"]["value"],
            "ci95": overall["anonymized"]["ci95"],
            **overall,
            "outputs": {out: summary(pairs, i) for i, out in enumerate(self.outputs)},
            "per_list": {name: summary(got) for name, got in lists.items()},
            "failed_left_out": failed_trials(pair),
            "predicted_now": self.predicted_now,
            "higher_is_better": True,
            "definition": self.definition,
            "measure": f"predicted MOS ({self.model}), not a listening test",
            "predictor": self.describe(key),
            "unavailable_offline": UNAVAILABLE_OFFLINE,
            "per_utterance": {i: [float(o[0]), float(a[0])] for i, (o, a) in per_utterance.items()},
        }

    def describe(self, key: Optional[dict] = None) -> dict:
        return {
            "name": self.name,
            "model": self.model,
            "trained_on": self.trained_on,
            "outputs": list(self.outputs),
            "files": [Path(f).name for f in self.model_files()],
            **(key or self.key_settings()),
        }

    @staticmethod
    def compare(a: dict, b: dict, pair_a: UtilityInput, pair_b: UtilityInput) -> dict:
        """b - a on the trial utterances both scored, speakers resampled alike for both."""
        ids = sorted(set(a.get("per_utterance") or {}) & set(b.get("per_utterance") or {}))
        if not ids:
            return {"not_applicable": "no trial utterance was scored for both"}
        speakers = [pair_a.original.by_id()[i].speaker for i in ids]
        found = paired_means(
            [a["per_utterance"][i][1] for i in ids],
            [b["per_utterance"][i][1] for i in ids],
            speakers,
            n_boot=pair_a.n_boot,
            seed=pair_a.seed,
        )
        return {
            "diff": found["diff"]["value"],
            "ci95": found["diff"]["ci95"],
            "n_utterances": len(ids),
        }


def failed_trials(pair: UtilityInput) -> int:
    """How many trial utterances the anonymizer failed on (no anonymized audio to score)."""
    failed = {u.id for u in pair.failed or []}
    if pair.trial_lists:
        return len(failed & {i for ids in pair.trial_lists.values() for i in ids})
    return len(failed if pair.trial_ids is None else failed & pair.trial_ids)


class DNSMOS(PredictedMOS):
    """DNSMOS P.835 (SIG, BAK, OVRL; headline OVRL) and P.808 from ``speechmos``'s ONNX files.
    ``personalized``: the personalized P.835 model (``pdnsmos_models``), which also penalises
    interfering talkers."""

    name = "dnsmos"
    outputs = ("ovrl", "sig", "bak", "p808")
    model = "DNSMOS P.835 OVRL"
    trained_on = (
        "crowdsourced ITU-T P.835 and P.808 ratings of noisy and noise-suppressed speech from "
        "Microsoft's Deep Noise Suppression challenges (Reddy et al., ICASSP 2021 and 2022)"
    )
    packages = ("speechmos", "onnxruntime", "librosa", "requests")
    install = "pip install speechmos onnxruntime librosa requests"

    def __init__(self, personalized: bool = False):
        super().__init__()
        self.personalized = bool(personalized)

    def model_files(self) -> list:
        root = package_folder("speechmos")
        primary = "pdnsmos_models" if self.personalized else "dnsmos_models"
        return [root / primary / "sig_bak_ovr.onnx", root / "dnsmos_models" / "model_v8.onnx"]

    def settings(self) -> dict:
        return {"personalized": self.personalized}

    def predict_one(self, wav: np.ndarray) -> list:
        if self._loaded is None:
            from speechmos.dnsmos import DNSMOS as Runner

            self._loaded = Runner(*(str(f) for f in self.model_files()))
        # its input check refuses samples outside [-1, 1] (a float file or resampling can hold them)
        found = self._loaded(np.clip(wav, -1.0, 1.0), SAMPLE_RATE, self.personalized)
        return [float(found[f"{out}_mos"]) for out in self.outputs]


class DistillMOS(PredictedMOS):
    """DistillMOS from ``distillmos`` (``weights``: its ``distill_mos_v7.pt`` unless another
    checkpoint in that format is named). One utterance at a time: batching measured no faster on
    CPU, and a batch would pad every window to the longest."""

    name = "distillmos"
    outputs = ("mos",)
    model = "DistillMOS"
    trained_on = (
        "distilled from an XLS-R speech-quality model on DNS Challenge 2022 speech and noise and the "
        "output of public TTS models, with the PSTN, ConferencingSpeech 2022, NISQA and VoiceMOS "
        "Challenge 2022 MOS corpora and rated submissions to the DNS 2021, packet-loss concealment "
        "2022 and signal improvement 2023 challenges (Stahl and Gamper, ICASSP 2025; the package's "
        "model card)"
    )
    packages = ("distillmos", "xls_r_sqa")
    install = "pip install --no-deps distillmos==0.9.1 xls-r-sqa==0.1.0"

    def __init__(self, weights=None):
        super().__init__()
        self.weights = None if weights is None else str(weights)
        if self.weights is not None and not Path(self.weights).is_file():
            raise DataError("distillmos: no weights file here", path=self.weights)

    def model_files(self) -> list:
        if self.weights is not None:
            return [Path(self.weights)]
        root = package_folder("distillmos")
        return [root / "weights" / "distill_mos_v7.pt"]

    def settings(self) -> dict:
        return {}

    def _network(self):
        if self._loaded is None:
            import torch

            from ..speechbrain_compat import ensure_torchaudio

            ensure_torchaudio()  # distillmos imports torchaudio at the top; the stand-in serves
            from distillmos import ConvTransformerSQAModel

            network = ConvTransformerSQAModel(load_weights=False)
            state = torch.load(self.model_files()[0], map_location="cpu", weights_only=True)
            network.load_state_dict(state["model"])
            self._loaded = network.eval()
        return self._loaded

    def predict_one(self, wav: np.ndarray) -> list:
        import torch

        network = self._network()
        with torch.inference_mode():
            return [float(network(torch.from_numpy(np.ascontiguousarray(wav))[None]))]
