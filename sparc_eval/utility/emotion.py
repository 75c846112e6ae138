"""Emotion utility: a speech emotion recognizer (SER) from a local checkpoint, run on original and
anonymized speech.

VoicePrivacy 2024 ranks utility by the unweighted average recall (UAR) of an SER model trained on
IEMOCAP (evaluation plan, section 3.2); VoicePrivacy 2026 uses emotion2vec. This plug-in
(registered as ``emotion``) reports, named for what it is:

- **emotion UAR** where the corpus has labels (``extra.emotion`` on an utterance): the mean over
  the classes present in the labels of each class's recall, on original and on anonymized speech,
  and their difference (anonymized - original), with speaker-bootstrap 95% CIs;
- **emotion agreement** where it has none: Cohen's kappa between the classes predicted on original
  and on anonymized speech, with a speaker-bootstrap 95% CI, and the raw agreement. It says
  whether the anonymizer keeps what the model hears, not whether the model is right: not UAR.

The checkpoint is a folder (``source``): a Hugging Face audio-classification snapshot
(``config.json`` naming a ``*ForSequenceClassification`` architecture, its weights and
``preprocessor_config.json``; labels from ``config.id2label``). Nothing is ever downloaded.
Predictions (the model's logits) are cached by the audio's content and the model files' digest.
The metric functions here are pure numpy; torch and transformers are imported only to predict.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np

from ..errors import DataError
from .metrics import UtilityInput, ci95

logger = logging.getLogger(__name__)

LABEL_KEY = "emotion"
UAR_MEASURE = "emotion UAR"
AGREEMENT_MEASURE = "emotion agreement (original vs anonymized predictions), not UAR"
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
INSTALL_HINT = "pip install transformers (it comes with the text extra: pip install -e '.[text]')"


# --- definitions (pure numpy) --------------------------------------------------------------------


def confusion_matrix(truth, predicted, n_classes: int) -> np.ndarray:
    """``(K, K)`` counts: row = reference class, column = predicted class."""
    flat = np.asarray(truth, int) * n_classes + np.asarray(predicted, int)
    return np.bincount(flat, minlength=n_classes * n_classes).reshape(n_classes, n_classes)


def unweighted_average_recall(confusion: np.ndarray) -> np.ndarray:
    """UAR of ``(..., K, K)`` confusion matrices: the mean, over the classes that occur among the
    references (non-empty rows), of diagonal / row sum. NaN when no class occurs."""
    confusion = np.asarray(confusion, float)
    rows = confusion.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.diagonal(confusion, axis1=-2, axis2=-1) / rows
        return np.nansum(recall, axis=-1) / (rows > 0).sum(axis=-1)


def raw_agreement(confusion: np.ndarray) -> np.ndarray:
    """Share of items on the diagonal of ``(..., K, K)`` confusion matrices."""
    confusion = np.asarray(confusion, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.trace(confusion, axis1=-2, axis2=-1) / confusion.sum(axis=(-2, -1))


def cohens_kappa(confusion: np.ndarray) -> np.ndarray:
    """Cohen's kappa (p_o - p_e) / (1 - p_e) of ``(..., K, K)`` confusion matrices, p_e from the
    two raters' marginals. NaN when p_e = 1 (both raters put everything in one class)."""
    confusion = np.asarray(confusion, float)
    total = confusion.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        p_o = np.trace(confusion, axis1=-2, axis2=-1) / total
        p_e = (confusion.sum(axis=-1) * confusion.sum(axis=-2)).sum(axis=-1) / total**2
        kappa = (p_o - p_e) / (1.0 - p_e)
    return np.where(np.isclose(p_e, 1.0), np.nan, kappa)


def per_class_recall(confusion: np.ndarray, labels) -> dict:
    """``{label: recall}`` of a ``(K, K)`` confusion matrix, for the classes among the references."""
    confusion = np.asarray(confusion, float)
    rows = confusion.sum(axis=1)
    return {labels[k]: float(confusion[k, k] / rows[k]) for k in range(len(labels)) if rows[k] > 0}


def pushed_toward(before, after, labels) -> dict | None:
    """The class whose share of the predictions grows most from ``before`` to ``after`` (counts
    per class), with both shares; None when no class grows."""
    share_before = np.asarray(before, float) / max(1.0, float(np.sum(before)))
    share_after = np.asarray(after, float) / max(1.0, float(np.sum(after)))
    k = int(np.argmax(share_after - share_before))
    if share_after[k] - share_before[k] <= 0:
        return None
    return {
        "label": labels[k],
        "original_share": float(share_before[k]),
        "anonymized_share": float(share_after[k]),
    }


def speaker_multiplicities(speakers, *, n_boot: int, seed: int) -> tuple:
    """(speaker names, ``(n_boot, S)`` how often each speaker is drawn): speakers resampled with
    replacement, the same draws as :func:`sparc_eval.utility.metrics.speaker_bootstrap`."""
    names = np.unique(np.asarray(speakers, dtype=str))
    rng = np.random.default_rng(seed)
    return names, rng.multinomial(names.size, np.full(names.size, 1.0 / names.size), size=n_boot)


def resampled_confusions(speakers, first, second, n_classes: int, *, n_boot: int, seed: int):
    """``(n_boot, K, K)`` confusion matrices of ``first`` (rows) against ``second`` (columns) over
    speaker-bootstrap resamples: per-speaker matrices weighted by how often each was drawn."""
    names, counts = speaker_multiplicities(speakers, n_boot=n_boot, seed=seed)
    index = np.searchsorted(names, np.asarray(speakers, dtype=str))
    per_speaker = np.zeros((names.size, n_classes, n_classes))
    np.add.at(per_speaker, (index, np.asarray(first, int), np.asarray(second, int)), 1.0)
    return np.einsum("bs,skl->bkl", counts, per_speaker)


# --- labels --------------------------------------------------------------------------------------


def label_index(model_labels, label_map: dict | None = None) -> dict:
    """lower-cased corpus label -> model class index: the model's own names, case-insensitively,
    plus ``label_map`` (corpus label -> model label) for corpora that spell classes otherwise."""
    index = {str(name).strip().lower(): i for i, name in enumerate(model_labels)}
    for corpus_label, model_label in (label_map or {}).items():
        key = str(model_label).strip().lower()
        if key not in index:
            raise DataError(
                f"label_map maps {corpus_label!r} to {model_label!r}, which is not one of the "
                f"model's labels {list(model_labels)}"
            )
        index[str(corpus_label).strip().lower()] = index[key]
    return index


def reference_labels(utterances, index: dict, key: str = LABEL_KEY) -> tuple:
    """({utterance id: class index} for labels that map, {unmapped label: count}, unlabelled count).
    A label is the utterance's own ``extra[key]``, never its speaker's resolved value."""
    mapped, unmapped, unlabelled = {}, {}, 0
    for utt in utterances:
        label = (utt.extra or {}).get(key)
        if label is None or not str(label).strip():
            unlabelled += 1
        elif str(label).strip().lower() in index:
            mapped[utt.id] = index[str(label).strip().lower()]
        else:
            unmapped[str(label)] = unmapped.get(str(label), 0) + 1
    return mapped, unmapped, unlabelled


# --- the model -----------------------------------------------------------------------------------


def model_folder(source) -> Path:
    """The checkpoint folder ``source`` names; a hub id or a missing path is a DataError."""
    path = Path(str(source)).expanduser()
    if path.is_dir():
        return path
    if HUB_ID.match(str(source)) and not path.exists():
        raise DataError(
            f"emotion source {source!r} looks like a hub id, and this plug-in never downloads",
            hint=f"download it elsewhere (huggingface-cli download {source} --local-dir DIR) "
            "and point source at that folder",
        )
    raise DataError(
        f"emotion source {source} is not a folder",
        hint="give the folder of a Hugging Face audio-classification snapshot",
    )


def _transformers():
    try:
        import transformers
    except ImportError as err:
        raise DataError(
            f"the emotion utility needs transformers, which cannot be imported ({err})",
            hint=INSTALL_HINT,
        ) from None
    return transformers


def classification_config(folder: Path):
    """The snapshot's config, checked to name an audio-classification head."""
    if not (folder / "config.json").is_file():
        found = (
            "hyperparams.yaml (a SpeechBrain folder)"
            if (folder / "hyperparams.yaml").is_file()
            else "no config.json"
        )
        raise DataError(
            f"not a Hugging Face audio-classification snapshot: {found}",
            path=folder,
            hint="expected config.json naming a *ForSequenceClassification architecture, its "
            "weights and preprocessor_config.json",
        )
    config = _transformers().AutoConfig.from_pretrained(folder, local_files_only=True)
    heads = [a for a in config.architectures or [] if a.endswith("ForSequenceClassification")]
    if not heads:
        raise DataError(
            f"the snapshot has no classification head (architectures: {config.architectures})",
            path=folder,
            hint="expected an audio-classification snapshot (*ForSequenceClassification, e.g. "
            "Wav2Vec2ForSequenceClassification) whose config.id2label names the emotions",
        )
    return config


def model_digest(folder: Path) -> str:
    """Digest of the snapshot's files' bytes (remembered per file within the process)."""
    from ..cache import file_digest
    from ..digest import digest

    files = sorted(f for f in folder.iterdir() if f.is_file() and not f.name.startswith("."))
    return digest({f.name: file_digest(f) for f in files})


class HuggingFaceEmotionModel:
    """An audio-classification snapshot: ``labels``, ``sample_rate``, ``digest`` and
    ``logits(waveforms)``."""

    def __init__(self, folder: Path, device: str = "cpu"):
        transformers = _transformers()
        config = classification_config(folder)
        try:
            self.extractor = transformers.AutoFeatureExtractor.from_pretrained(
                folder, local_files_only=True
            )
            self.network = transformers.AutoModelForAudioClassification.from_pretrained(
                folder, local_files_only=True
            )
        except (OSError, ValueError) as err:
            raise DataError(
                f"cannot load the audio-classification snapshot: {err}", path=folder
            ) from None
        self.network.eval().to(device)
        self.device = device
        self.labels = [config.id2label[i] for i in range(config.num_labels)]
        self.sample_rate = int(self.extractor.sampling_rate)
        # without an attention mask padding changes the output: then a batch holds one length
        self.pads = bool(getattr(self.extractor, "return_attention_mask", False))
        self.digest = model_digest(folder)

    def logits(self, waveforms: list) -> np.ndarray:
        import torch

        inputs = self.extractor(
            waveforms, sampling_rate=self.sample_rate, return_tensors="pt", padding=True
        )
        with torch.inference_mode():
            out = self.network(**{k: v.to(self.device) for k, v in inputs.items()})
        return out.logits.float().cpu().numpy()


def length_batches(items: list, lengths: list, batch_size: int, pads: bool) -> list:
    """Batches of at most ``batch_size`` items, sorted by length (little padding); a model that
    cannot mask padding gets batches of one length only."""
    order = sorted(range(len(items)), key=lambda i: lengths[i])
    batches, current = [], []
    for i in order:
        if current and (
            len(current) == batch_size or (not pads and lengths[current[-1]] != lengths[i])
        ):
            batches.append([items[j] for j in current])
            current = []
        current.append(i)
    return batches + ([[items[j] for j in current]] if current else [])


# --- the plug-in ---------------------------------------------------------------------------------


class EmotionUtility:
    """Emotion utility (registered as ``emotion``): UAR against ``extra.emotion`` labels where the
    corpus has them, else the agreement of predictions on original and anonymized speech.

    ``source``: the checkpoint folder; ``batch_size``: utterances per forward pass;
    ``label_key``: the ``extra`` key holding an utterance's label; ``label_map``: corpus label ->
    model label, for labels the model spells otherwise (``{neutral: neu}``); ``device``: torch's."""

    name = "emotion"
    uar_definition = (
        "unweighted average recall (mean over the labelled classes of each class's recall) of a "
        "speech emotion recognizer on anonymized speech, beside the original's (VoicePrivacy 2024: "
        "an IEMOCAP-trained SER model; 2026: emotion2vec); higher is better"
    )
    agreement_definition = (
        "Cohen's kappa between the emotion classes a speech emotion recognizer predicts on the "
        "original and on the anonymized speech (the corpus has no emotion labels): whether the "
        "anonymizer keeps what the model hears, not whether the model is right; higher is better"
    )

    def __init__(
        self,
        source,
        batch_size: int = 8,
        label_key: str = LABEL_KEY,
        label_map=None,
        device: str = "cpu",
    ):
        self.source, self.batch_size = str(source), int(batch_size)
        self.label_key, self.label_map, self.device = label_key, dict(label_map or {}), device
        self.predicted_now = 0  # utterances run through the model by the last compute()
        self._loaded = None
        self._resampling_said = False

    def model(self):
        if self._loaded is None:
            self._loaded = HuggingFaceEmotionModel(model_folder(self.source), self.device)
        return self._loaded

    def _waveform(self, utt, rate: int):
        from ..speech.audio import read_utterance, resample

        wav, sr = read_utterance(utt, sample_rate=None)
        if sr != rate and not self._resampling_said:
            logger.info("[emotion] resampling audio from %d Hz to the model's %d Hz", sr, rate)
            self._resampling_said = True
        return resample(wav, sr, rate)

    def _predict(self, todo: list, cache, model) -> None:
        """Run the model on (utterance, key) pairs, a chunk at a time, and cache their logits."""
        chunk = 16 * self.batch_size  # audio held in memory at once
        for start in range(0, len(todo), chunk):
            part = todo[start : start + chunk]
            waves = {key: self._waveform(utt, model.sample_rate) for utt, key in part}
            keys = list(waves)
            lengths = [len(waves[k]) for k in keys]
            for batch in length_batches(keys, lengths, self.batch_size, model.pads):
                for key, logits in zip(batch, model.logits([waves[k] for k in batch])):
                    cache.put(key, logits)

    def predictions(self, utterances, pair: UtilityInput) -> dict:
        """{utterance id: predicted class index}, from the cache where the same audio was seen by
        the same model."""
        from ..cache import ArrayCache, cached_by_audio

        model = self.model()
        settings = {"model": model.digest, "sample_rate": model.sample_rate}
        cache = ArrayCache(pair.cache_folder, "emotion", settings)
        logits, made = cached_by_audio(
            utterances, cache, lambda todo: self._predict(todo, cache, model)
        )
        self.predicted_now += made
        return {uid: int(np.argmax(row)) for uid, row in logits.items()}

    def compute(self, pair: UtilityInput) -> dict:
        pairs = [(o, a) for o, a in pair.pairs() if o.audio is not None and a.audio is not None]
        if not pairs:
            return {"not_applicable": "no utterance pair has audio on both sides"}
        self.predicted_now = 0
        original = self.predictions([o for o, _ in pairs], pair)
        anonymized = self.predictions([a for _, a in pairs], pair)
        model = self.model()
        mapped, unmapped, unlabelled = reference_labels(
            [o for o, _ in pairs], label_index(model.labels, self.label_map), self.label_key
        )
        agreement = agreement_summary(pairs, original, anonymized, model.labels, pair)
        about = {**self._about(model, mapped, unmapped, unlabelled), "higher_is_better": True}
        if not mapped:
            return {**agreement, **about, "measure": AGREEMENT_MEASURE}
        found = uar_summary(pairs, mapped, original, anonymized, model.labels, pair)
        return {**found, **about, "agreement": agreement, "measure": UAR_MEASURE}

    def _about(self, model, mapped: dict, unmapped: dict, unlabelled: int) -> dict:
        """What was run and which labels were read; the definition of what is reported."""
        return {
            "model": {
                "source": self.source,
                "digest": model.digest,
                "labels": model.labels,
                "sample_rate": model.sample_rate,
            },
            "labels": {
                "mapped": len(mapped),
                "unmapped": unmapped,
                "unlabelled": unlabelled,
                "key": f"extra.{self.label_key}",
            },
            "predicted_now": self.predicted_now,
            "definition": self.uar_definition if mapped else self.agreement_definition,
        }


def agreement_summary(pairs, original: dict, anonymized: dict, labels, pair) -> dict:
    """Cohen's kappa of original against anonymized predictions (speaker-bootstrap CI), the raw
    agreement, the agreement matrix and the class anonymized speech is pushed toward."""
    n_classes = len(labels)
    first = [original[o.id] for o, _ in pairs]
    second = [anonymized[a.id] for _, a in pairs]
    confusion = confusion_matrix(first, second, n_classes)
    draws = resampled_confusions(
        [o.speaker for o, _ in pairs], first, second, n_classes, n_boot=pair.n_boot, seed=pair.seed
    )
    kappa = float(cohens_kappa(confusion))
    found = {
        "value": None if np.isnan(kappa) else kappa,
        "ci95": ci95(cohens_kappa(draws)),
        "raw_agreement": float(raw_agreement(confusion)),
        "utterances": len(pairs),
        "agreement_matrix": {
            "rows": "predicted on the original speech",
            "columns": "predicted on the anonymized speech",
            "labels": list(labels),
            "counts": confusion.tolist(),
        },
        "pushed_toward": pushed_toward(confusion.sum(axis=1), confusion.sum(axis=0), labels),
    }
    if found["value"] is None:
        found["not_applicable"] = (
            "Cohen's kappa is undefined: the model predicted one class for every utterance, "
            f"original and anonymized (raw agreement {found['raw_agreement']:.3f})"
        )
    return found


def uar_with_draws(truth, guess, speakers, n_classes: int, pair) -> tuple:
    """(UAR, its speaker-bootstrap draws): the draws depend on the speakers only, so two calls on
    the same speakers resample alike and their difference is paired."""
    point = unweighted_average_recall(confusion_matrix(truth, guess, n_classes))
    confusions = resampled_confusions(
        speakers, truth, guess, n_classes, n_boot=pair.n_boot, seed=pair.seed
    )
    return float(point), unweighted_average_recall(confusions)


def uar_summary(pairs, mapped: dict, original: dict, anonymized: dict, labels, pair) -> dict:
    """UAR on anonymized speech (``value``), on original speech, and their difference, each with a
    CI from the same speaker resamples; per-class recall, both confusion matrices and the class
    anonymized speech is pushed toward (the predicted class whose share grows most)."""
    n_classes = len(labels)
    labelled = [(o, a) for o, a in pairs if o.id in mapped]
    truth = [mapped[o.id] for o, _ in labelled]
    speakers = [o.speaker for o, _ in labelled]
    guess_o = [original[o.id] for o, _ in labelled]
    guess_a = [anonymized[a.id] for _, a in labelled]
    uar_o, draws_o = uar_with_draws(truth, guess_o, speakers, n_classes, pair)
    uar_a, draws_a = uar_with_draws(truth, guess_a, speakers, n_classes, pair)
    confusion_o = confusion_matrix(truth, guess_o, n_classes)
    confusion_a = confusion_matrix(truth, guess_a, n_classes)
    return {
        "value": uar_a,
        "ci95": ci95(draws_a),
        "original": {"value": uar_o, "ci95": ci95(draws_o)},
        "difference": {
            "value": uar_a - uar_o,
            "ci95": ci95(draws_a - draws_o),
            "of": "anonymized - original",
        },
        "utterances": len(labelled),
        "classes": sorted({int(t) for t in truth}),
        "per_class_recall": {
            "original": per_class_recall(confusion_o, labels),
            "anonymized": per_class_recall(confusion_a, labels),
        },
        "confusion": {
            "rows": "reference label",
            "columns": "predicted",
            "labels": list(labels),
            "original": confusion_o.tolist(),
            "anonymized": confusion_a.tolist(),
        },
        "pushed_toward": pushed_toward(confusion_o.sum(axis=0), confusion_a.sum(axis=0), labels),
    }
