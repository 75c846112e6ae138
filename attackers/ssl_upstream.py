"""A self-supervised speech model (WavLM, wav2vec 2.0, HuBERT) as the ECAPA attacker's front end:
``feature_type: ssl``, VoicePrivacy 2026's attacker (hparams/ssl_ecapa.yaml).

:class:`SSLUpstream` loads a local Hugging Face snapshot (nothing is downloaded at run time) and
turns a padded 16 kHz batch into a learned, softmax-weighted sum of its transformer layers'
outputs, (batch, frames, hidden_size), as VoicePrivacy 2026's ``WeightedLayerSum`` does over
WavLM-Large's 24 layers. The layer weights always train with the ECAPA; the upstream itself is
frozen (2026's choice) or fine-tuned (``freeze_upstream: False``). Its checkpoints hold only what
trains, so a frozen WavLM-Large is not copied into every checkpoint.

:func:`vpc2026_deviations` names what an ``ssl`` run departs from the 2026 configuration
(``configs/track1/eval_post.yaml`` and ``evaluation/privacy/asv/`` of the challenge repository).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.nn.functional as F

from sparc_eval.errors import DataError
from sparc_eval.speechbrain_compat import import_speechbrain

sb = import_speechbrain()
from speechbrain.utils import checkpoints  # noqa: E402

SSL_MODEL_TYPES = ("wavlm", "wav2vec2", "hubert")
DOWNLOAD_HINT = (
    "download the model elsewhere (e.g. `huggingface-cli download microsoft/wavlm-large "
    "--local-dir /models/wavlm-large`) and point ssl_source at that folder"
)


# --- the snapshot ------------------------------------------------------------------------------


def snapshot_config(source) -> dict:
    """The snapshot's config.json, after checking that ``source`` is a local folder holding one of
    the supported architectures (the error names the path and what was expected)."""
    if source is None or str(source).strip() in ("", "None", "null"):
        raise DataError("feature_type ssl needs ssl_source", hint=DOWNLOAD_HINT)
    path = Path(str(source)).expanduser()
    if not path.is_dir():
        looks_like_hub_id = str(source).count("/") == 1 and not str(source).startswith((".", "/"))
        what = "a Hugging Face hub id, not a local folder" if looks_like_hub_id else "not a folder"
        raise DataError(
            f"ssl_source is {what}: nothing is downloaded at run time",
            path=source,
            hint=DOWNLOAD_HINT,
        )
    config_file = path / "config.json"
    if not config_file.is_file():
        raise DataError(
            "no config.json: not a Hugging Face model snapshot", path=path, hint=DOWNLOAD_HINT
        )
    config = json.loads(config_file.read_text())
    if config.get("model_type") not in SSL_MODEL_TYPES:
        raise DataError(
            f"a {config.get('model_type')!r} model, expected one of {', '.join(SSL_MODEL_TYPES)}",
            path=path,
        )
    return config


def hidden_size(source) -> int:
    """The width of the upstream's layers: the ECAPA's input size."""
    return int(snapshot_config(source)["hidden_size"])


def normalizes_waveform(source) -> bool:
    """Whether the snapshot's model expects zero-mean unit-variance input: its
    preprocessor_config.json's ``do_normalize``, else the rule of the original checkpoints (the
    layer-norm feature encoders of the large models, WavLM-Large among them, were trained on
    normalised input)."""
    preprocessor = Path(str(source)) / "preprocessor_config.json"
    if preprocessor.is_file():
        return bool(json.loads(preprocessor.read_text()).get("do_normalize", False))
    return snapshot_config(source).get("feat_extract_norm") == "layer"


def load_snapshot(source):
    """The Hugging Face model of a local snapshot, offline."""
    from transformers import AutoModel

    snapshot_config(source)
    return AutoModel.from_pretrained(str(source), local_files_only=True)


# --- the module --------------------------------------------------------------------------------


def normalize_waveforms(wavs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each waveform to zero mean and unit variance over its real samples (padding stays 0), as
    2026's extractor layer-norms each file before WavLM."""
    n = mask.sum(dim=1, keepdim=True).clamp(min=1)
    mean = (wavs * mask).sum(dim=1, keepdim=True) / n
    var = (((wavs - mean) * mask) ** 2).sum(dim=1, keepdim=True) / n
    return (wavs - mean) / torch.sqrt(var + 1e-7) * mask


def sample_mask(wavs: torch.Tensor, lens: torch.Tensor | None) -> torch.Tensor:
    """(batch, samples) 1 on real samples, 0 on padding, from SpeechBrain's relative lengths."""
    if lens is None:
        return torch.ones_like(wavs)
    samples = torch.round(lens * wavs.shape[1]).long().unsqueeze(1)
    return (torch.arange(wavs.shape[1], device=wavs.device).unsqueeze(0) < samples).to(wavs.dtype)


@checkpoints.register_checkpoint_hooks
class SSLUpstream(torch.nn.Module):
    """Waveforms (batch, samples) at 16 kHz and relative lengths -> the weighted sum of the
    upstream's transformer layers, (batch, frames, hidden_size). Frames cover the same share of
    each padded item as samples did, so the relative lengths carry over unchanged."""

    def __init__(self, source, freeze: bool = True, normalize_waveform=None):
        super().__init__()
        self.model = load_snapshot(source)
        self.freeze = bool(freeze)
        self.normalize = (
            normalizes_waveform(source) if normalize_waveform is None else bool(normalize_waveform)
        )
        config = self.model.config
        # wav2vec2-base style models (group-norm feature encoders) must not see an attention mask
        self.pass_mask = getattr(config, "feat_extract_norm", "layer") == "layer"
        self.layer_weights = torch.nn.Parameter(torch.zeros(config.num_hidden_layers))
        self.hidden_size = config.hidden_size
        if self.freeze:
            self.model.requires_grad_(False)
            self.model.eval()

    def train(self, mode: bool = True):
        """A frozen upstream stays in eval mode (no dropout) while the ECAPA trains."""
        super().train(mode)
        if self.freeze:
            self.model.eval()
        return self

    def layers(self, wavs: torch.Tensor, lens: torch.Tensor | None) -> torch.Tensor:
        """(layers, batch, frames, hidden): each transformer layer's output (not the CNN's)."""
        mask = sample_mask(wavs, lens)
        if self.normalize:
            wavs = normalize_waveforms(wavs, mask)
        kwargs = {"attention_mask": mask.long()} if self.pass_mask else {}
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.freeze):
            out = self.model(wavs, output_hidden_states=True, **kwargs)
        return torch.stack(out.hidden_states[1:])

    def forward(self, wavs: torch.Tensor, lens: torch.Tensor | None = None) -> torch.Tensor:
        """(batch, frames, hidden): the softmax-weighted sum of the upstream's layers."""
        weights = F.softmax(self.layer_weights, dim=0)
        return torch.einsum("l,lbtd->btd", weights, self.layers(wavs, lens))

    def trainable_state(self) -> dict:
        """What a checkpoint holds: the layer weights, and the upstream when it is fine-tuned."""
        if not self.freeze:
            return self.state_dict()
        return {"layer_weights": self.layer_weights.detach().clone()}

    @checkpoints.mark_as_saver
    def save(self, path):
        torch.save(self.trainable_state(), path)

    @checkpoints.mark_as_loader
    def load(self, path, end_of_epoch=False):
        del end_of_epoch
        state = torch.load(path, map_location="cpu", weights_only=True)
        self.load_state_dict(state, strict=not self.freeze)


# --- VoicePrivacy 2026's attacker, for the record ------------------------------------------------

# configs/track1/eval_post.yaml (lr, epochs, batch_size, finetuning) and
# evaluation/privacy/asv/asv_train/hparams/train_ecapa_ssl_tdnn_small.yaml (sizes, crop)
VPC2026 = {
    "channels": [1024, 1024, 1024, 1024, 3072],
    "attention_channels": 128,
    "emb_dim": 192,
    "lr": 0.01,
    "number_of_epochs": 2,
    "batch_size": 32,
    "chunk_seconds": 3.0,
}
WAVLM_LARGE = {"model_type": "wavlm", "num_hidden_layers": 24, "hidden_size": 1024}
ARCHITECTURE = (
    "ECAPA-TDNN on the weighted sum of the upstream's layers alone; VoicePrivacy 2026's "
    "ECAPA_TDNN_test also runs an 80-band Fbank branch (3 s crops) and multiplies its SE-Res2Net "
    "outputs with those of the WavLM branch (separate 10 s crops) before aggregation, so its "
    "checkpoints do not load here"
)


def _differences(hp: dict, reference: dict) -> list:
    return [
        f"{key} {hp.get(key)} (2026: {value})"
        for key, value in reference.items()
        if (list(hp[key]) if isinstance(hp.get(key), (list, tuple)) else hp.get(key)) != value
    ]


def vpc2026_deviations(hp: dict) -> dict:
    """Named deviations of an ``ssl`` ECAPA run from VoicePrivacy 2026's attacker."""
    out = {"vpc2026_architecture": ARCHITECTURE}
    config = snapshot_config(hp["ssl_source"])
    upstream = {k: config.get(k) for k in WAVLM_LARGE}
    if upstream != WAVLM_LARGE:
        out["vpc2026_upstream"] = (
            f"upstream {upstream['model_type']} with {upstream['num_hidden_layers']} layers of "
            f"width {upstream['hidden_size']}; 2026 uses WavLM-Large (24 layers of width 1024)"
        )
    if not hp.get("freeze_upstream", True):
        out["vpc2026_fine_tuned_upstream"] = "the upstream is fine-tuned; 2026 keeps WavLM frozen"
    if not hp.get("init_from"):
        out["vpc2026_from_scratch"] = (
            "trained from scratch; 2026 fine-tunes a pretrained ECAPA-SSL on the (anonymized) "
            "training data (finetuning: True)"
        )
    if hp.get("wav_augment") is None:
        out["vpc2026_no_augmentation"] = (
            "no waveform augmentation; 2026 drops frequency bands and chunks"
        )
    if changed := _differences(hp, VPC2026):
        out["vpc2026_training"] = "; ".join(changed)
    return out
