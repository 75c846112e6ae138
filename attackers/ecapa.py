"""The ECAPA-TDNN speaker-recognition attacker, as a SpeechBrain Brain.

One Brain serves every feature type: ``compute_features`` in the hparams turns a padded batch
into (batch, time, dim) features: an 80-band Fbank of the waveform for ``mel``, the weighted
layers of a self-supervised model for ``ssl`` (:mod:`.ssl_upstream`, which also takes the
lengths), the identity for precomputed phone one-hot matrices. The classifier is trained with
additive angular margin (AAM-softmax), as in SpeechBrain's VoxCeleb recipe and the VoicePrivacy
attacker; at test time only the embedding model is used. Waveforms are augmented in training
when the hparams define ``wav_augment``, and a scheduler with ``on_batch_end`` (VoicePrivacy
2026's cyclic learning rate) steps after every batch. ``init_from`` starts a model from a
pretrained ECAPA-TDNN (:func:`load_pretrained`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from sparc_eval.errors import DataError
from sparc_eval.speechbrain_compat import import_speechbrain

sb = import_speechbrain()


def pad_to_min_length(feats: torch.Tensor, lens: torch.Tensor, min_length: int):
    """Zero-pad the time axis up to ``min_length`` and rescale relative lengths.

    ECAPA's dilated convolutions use reflect padding, which fails on inputs shorter than the
    padding (a 3-phone utterance crashes it); padding the batch keeps the true length in
    ``lens``, so statistics pooling still sees only the real frames.
    """
    length = feats.shape[1]
    if length >= min_length:
        return feats, lens
    feats = F.pad(feats, (0, 0, 0, min_length - length))
    return feats, lens * length / min_length


class AttackerBrain(sb.Brain):
    """Trains ECAPA-TDNN as a speaker classifier on (batch, time, dim) features."""

    def _wrap_distributed(self):
        """SpeechBrain turns batch norm into SyncBatchNorm under DDP, which runs on GPUs only: on CPU
        processes (gloo) each keeps its own batch statistics, as torch's DDP does by default."""
        if not (self.distributed_launch and str(self.device).startswith("cpu")):
            return super()._wrap_distributed()
        from torch.nn.parallel import DistributedDataParallel

        for name, module in self.modules.items():
            if any(p.requires_grad for p in module.parameters()):
                self.modules[name] = DistributedDataParallel(
                    module, device_ids=None, find_unused_parameters=self.find_unused_parameters
                )

    def features(self, batch, stage):
        inputs, lens = batch.inputs
        augment = getattr(self.hparams, "wav_augment", None)
        if stage == sb.Stage.TRAIN and augment is not None:
            inputs, lens = augment(inputs, lens)
        compute = self.modules.compute_features
        if getattr(self.hparams, "feature_type", None) == "ssl":
            if stage == sb.Stage.TEST:  # embedding on the main process alone: not the DDP wrapper
                compute = getattr(compute, "module", compute)
            feats = compute(inputs, lens)
        else:
            feats = compute(inputs)
        if "normalize" in self.modules:
            feats = self.modules.normalize(feats, lens)
        return pad_to_min_length(feats, lens, self.hparams.min_frames)

    def compute_forward(self, batch, stage):
        """The classifier's outputs for a batch: features, then embedding, then classifier."""
        batch = batch.to(self.device)
        feats, lens = self.features(batch, stage)
        embeddings = self.modules.embedding_model(feats, lens)
        return self.modules.classifier(embeddings)

    def compute_objectives(self, predictions, batch, stage):
        """The loss (``compute_cost``) against the speaker indices; outside training the
        predictions also go into the stage's error rate."""
        speakers, _ = batch.speaker_index
        augment = getattr(self.hparams, "wav_augment", None)
        if stage == sb.Stage.TRAIN and augment is not None:
            speakers = augment.replicate_labels(speakers)
        loss = self.hparams.compute_cost(predictions, speakers)
        if stage != sb.Stage.TRAIN:
            self.error_metrics.append(
                batch.id, predictions.squeeze(1).argmax(dim=-1), speakers.squeeze(1)
            )
        return loss

    def on_fit_batch_end(self, batch, outputs, loss, should_step):
        """Per-batch schedulers (VoicePrivacy 2026's cyclic learning rate) step here."""
        scheduler = self.hparams.lr_annealing
        if should_step and hasattr(scheduler, "on_batch_end"):
            scheduler.on_batch_end(self.optimizer)

    def on_stage_start(self, stage, epoch=None):
        """Outside training, a fresh error-rate count for the stage."""
        if stage != sb.Stage.TRAIN:
            self.error_metrics = _ErrorRate()

    def on_stage_end(self, stage, stage_loss, epoch=None):
        """After training, keep the loss; after validation, anneal the learning rate, log the
        stats and save a checkpoint (keeping only the one with the lowest error rate)."""
        if stage == sb.Stage.TRAIN:
            self.train_loss = stage_loss
            return
        stats = {"loss": stage_loss, "error_rate": self.error_metrics.summarize()}
        if stage == sb.Stage.VALID:
            old_lr, new_lr = self.hparams.lr_annealing(epoch)
            sb.nnet.schedulers.update_learning_rate(self.optimizer, new_lr)
            self.hparams.train_logger.log_stats(
                stats_meta={"epoch": epoch, "lr": old_lr},
                train_stats={"loss": self.train_loss},
                valid_stats=stats,
            )
            self.checkpointer.save_and_keep_only(
                meta={"error_rate": stats["error_rate"]}, min_keys=["error_rate"]
            )

    @torch.no_grad()
    def embed(self, dataset, *, batch_size: int, progress: bool = True) -> dict:
        """utterance id -> L2-normalised embedding (numpy), batches sorted by length."""
        self.modules.eval()
        # the main process embeds alone: the bare model, not its DDP wrapper (which syncs with the other ranks)
        model = getattr(self.modules.embedding_model, "module", self.modules.embedding_model)
        loader = sb.dataio.dataloader.make_dataloader(dataset, batch_size=batch_size, shuffle=False)
        out = {}
        for batch in tqdm(loader, desc="embeddings", disable=not progress, leave=False):
            batch = batch.to(self.device)
            feats, lens = self.features(batch, sb.Stage.TEST)
            emb = model(feats, lens).squeeze(1)
            emb = F.normalize(emb, dim=-1).cpu().numpy()
            for utt_id, vector in zip(batch.id, emb):
                out[utt_id] = vector.astype(np.float32)
        return out


def load_pretrained(model: torch.nn.Module, path) -> Path:
    """Initialise ``model`` (an ECAPA-TDNN) from ``path``: a SpeechBrain model folder's
    ``embedding_model.ckpt``, or that file. The sizes must match: a mismatch is an error naming
    the tensor and both shapes, never a silent partial load."""
    file = Path(path) / "embedding_model.ckpt" if Path(path).is_dir() else Path(path)
    if not file.is_file():
        raise DataError(
            "init_from: no ECAPA-TDNN checkpoint here",
            path=file,
            hint="give a SpeechBrain model folder holding embedding_model.ckpt, or that file",
        )
    state = torch.load(file, map_location="cpu", weights_only=True)
    state = state.get("state_dict", state)
    state = {k.removeprefix("module."): v for k, v in state.items()}  # saved from a DDP wrapper
    problems = _mismatches(model.state_dict(), state)
    if problems:
        raise DataError(
            f"init_from does not fit this ECAPA-TDNN: {'; '.join(problems[:4])}",
            path=file,
            hint="channels, attention_channels, emb_dim and the input size (the upstream's "
            "hidden size for ssl) must be those it was trained with",
        )
    model.load_state_dict(state)
    return file


def _mismatches(expected: dict, state: dict) -> list:
    shapes = [
        f"{key}: checkpoint {tuple(value.shape)}, model {tuple(expected[key].shape)}"
        for key, value in state.items()
        if key in expected and tuple(value.shape) != tuple(expected[key].shape)
    ]
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    return (
        shapes
        + ([f"missing {', '.join(missing[:3])}"] if missing else [])
        + ([f"unexpected {', '.join(unexpected[:3])}"] if unexpected else [])
    )


class _ErrorRate:
    """Classification error rate over a stage (SpeechBrain's ErrorRateStats wants padded seqs)."""

    def __init__(self):
        self.errors = 0
        self.total = 0

    def append(self, ids, predicted, target):
        self.errors += int((predicted != target).sum())
        self.total += len(ids)

    def summarize(self):
        return self.errors / max(self.total, 1)
