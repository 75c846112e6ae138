"""The ECAPA-TDNN speaker-recognition attacker, as a SpeechBrain Brain.

One Brain serves every feature type: ``compute_features`` in the hparams turns a padded batch
into (batch, time, dim) features: an 80-band Fbank of the waveform for ``mel``, the identity for
precomputed phone one-hot matrices. The classifier is trained with additive angular margin
(AAM-softmax), as in SpeechBrain's VoxCeleb recipe and the VoicePrivacy attacker; at test time
only the embedding model is used.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

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
        feats = self.modules.compute_features(inputs)
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
        loss = self.hparams.compute_cost(predictions, speakers)
        if stage != sb.Stage.TRAIN:
            self.error_metrics.append(
                batch.id, predictions.squeeze(1).argmax(dim=-1), speakers.squeeze(1)
            )
        return loss

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
