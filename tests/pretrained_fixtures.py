"""Tiny pretrained verification snapshots in the real file formats, with random weights.

What a researcher downloads (SpeechBrain's ``spkrec-ecapa-voxceleb``, Hugging Face's
``microsoft/wavlm-base-plus-sv``) cannot be fetched here, so the tests write folders laid out
like them: the same file names and hyperparams, a model small enough to build in a second.
"""

from __future__ import annotations

import json
from pathlib import Path

# spkrec-ecapa-voxceleb's hyperparams.yaml, with a tiny ECAPA-TDNN and 4 classes: the hub id in
# pretrained_path is what breaks offline loading unless it is overridden
SPEECHBRAIN_HYPERPARAMS = """\
# ############################################################################
# Model: ECAPA big for Speaker verification (tiny copy for tests)
# ############################################################################

# Feature parameters
n_mels: 24

# Pretrain folder (HuggingFace)
pretrained_path: speechbrain/spkrec-ecapa-voxceleb

# Output parameters
out_n_neurons: 4

# Model params
compute_features: !new:speechbrain.lobes.features.Fbank
    n_mels: !ref <n_mels>

mean_var_norm: !new:speechbrain.processing.features.InputNormalization
    norm_type: sentence
    std_norm: False

embedding_model: !new:speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN
    input_size: !ref <n_mels>
    channels: [16, 16, 16, 16, 48]
    kernel_sizes: [5, 3, 3, 3, 1]
    dilations: [1, 2, 3, 4, 1]
    attention_channels: 8
    lin_neurons: {lin_neurons}

classifier: !new:speechbrain.lobes.models.ECAPA_TDNN.Classifier
    input_size: {lin_neurons}
    out_neurons: !ref <out_n_neurons>

mean_var_norm_emb: !new:speechbrain.processing.features.InputNormalization
    norm_type: global
    std_norm: False

modules:
    compute_features: !ref <compute_features>
    mean_var_norm: !ref <mean_var_norm>
    embedding_model: !ref <embedding_model>
    mean_var_norm_emb: !ref <mean_var_norm_emb>
    classifier: !ref <classifier>

label_encoder: !new:speechbrain.dataio.encoder.CategoricalEncoder

pretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer
    loadables:
        embedding_model: !ref <embedding_model>
        mean_var_norm_emb: !ref <mean_var_norm_emb>
        classifier: !ref <classifier>
        label_encoder: !ref <label_encoder>
    paths:
        embedding_model: !ref <pretrained_path>/embedding_model.ckpt
        mean_var_norm_emb: !ref <pretrained_path>/mean_var_norm_emb.ckpt
        classifier: !ref <pretrained_path>/classifier.ckpt
        label_encoder: !ref <pretrained_path>/label_encoder.txt
"""

SPEECHBRAIN_EMBEDDING = 8
XVECTOR_EMBEDDING = 8


def write_speechbrain_folder(folder, *, seed: int = 0, lin_neurons: int = SPEECHBRAIN_EMBEDDING):
    """A ``spkrec-ecapa-voxceleb``-like folder: hyperparams.yaml, embedding_model.ckpt,
    mean_var_norm_emb.ckpt, classifier.ckpt and label_encoder.txt, random weights."""
    import torch

    from sparc_eval.speechbrain_compat import import_speechbrain

    import_speechbrain()
    from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN, Classifier
    from speechbrain.processing.features import InputNormalization

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hyperparams.yaml").write_text(
        SPEECHBRAIN_HYPERPARAMS.replace("{lin_neurons}", str(lin_neurons))
    )
    torch.manual_seed(seed)
    ecapa = ECAPA_TDNN(
        24, channels=[16, 16, 16, 16, 48], attention_channels=8, lin_neurons=lin_neurons
    )
    _randomise_batch_norms(ecapa, seed)
    torch.save(ecapa.state_dict(), folder / "embedding_model.ckpt")
    torch.save(Classifier(lin_neurons, out_neurons=4).state_dict(), folder / "classifier.ckpt")
    norm = InputNormalization(norm_type="global", std_norm=False)
    norm._save(folder / "mean_var_norm_emb.ckpt")
    labels = "\n".join(f"'id1000{i}' => {i}" for i in range(4))
    (folder / "label_encoder.txt").write_text(
        f"{labels}\n================\n'starting_index' => 0\n"
    )
    return folder


def _randomise_batch_norms(model, seed: int) -> None:
    """Give batch norms running statistics of a trained model (fresh ones are 0 and 1), so that
    two seeds differ in every part of the network."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            module.running_mean.copy_(torch.randn(module.running_mean.shape, generator=generator))
            module.running_var.uniform_(0.5, 2.0, generator=generator)


def tiny_xvector_config(architecture: str = "WavLMForXVector", **changes):
    """A tiny x-vector config of ``architecture`` (hidden size 16, 2 layers, 2 heads, three
    small convolutions, 8-dim x-vectors); ``changes`` override any field."""
    import transformers

    config_class = {
        "WavLMForXVector": transformers.WavLMConfig,
        "UniSpeechSatForXVector": transformers.UniSpeechSatConfig,
        "Wav2Vec2ForXVector": transformers.Wav2Vec2Config,
        "WavLMModel": transformers.WavLMConfig,
        "Wav2Vec2ForCTC": transformers.Wav2Vec2Config,
    }[architecture]
    fields = dict(
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        conv_dim=(8, 8, 8),
        conv_stride=(5, 8, 8),  # 320 samples a frame, as the real models (20 ms at 16 kHz)
        conv_kernel=(10, 8, 8),
        num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=2,
        tdnn_dim=(16, 16, 24),
        tdnn_kernel=(3, 3, 1),
        tdnn_dilation=(1, 2, 1),
        xvector_output_dim=XVECTOR_EMBEDDING,
        feat_extract_norm="layer",
        do_stable_layer_norm=True,
        architectures=[architecture],
    )
    if architecture.startswith("WavLM"):
        fields.update(num_buckets=16, max_bucket_distance=32)
    fields.update(changes)
    return config_class(**fields)


def write_xvector_folder(
    folder, architecture: str = "WavLMForXVector", *, seed: int = 0, safe: bool = True, **changes
):
    """A Hugging Face snapshot like ``microsoft/wavlm-base-plus-sv``: config.json,
    preprocessor_config.json and model.safetensors (``safe=False``: pytorch_model.bin)."""
    import torch
    import transformers

    folder = Path(folder)
    torch.manual_seed(seed)
    model = getattr(transformers, architecture)(tiny_xvector_config(architecture, **changes))
    model.save_pretrained(folder, safe_serialization=safe)
    if not safe:  # transformers 5 always writes safetensors: the older format by hand
        (folder / "model.safetensors").unlink(missing_ok=True)
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
    extractor = transformers.Wav2Vec2FeatureExtractor(
        feature_size=1,
        sampling_rate=16000,
        padding_value=0.0,
        do_normalize=False,
        return_attention_mask=True,
    )
    extractor.save_pretrained(folder)
    return folder


def set_embedding_size(folder, size: int) -> None:
    """Claim another x-vector size in a snapshot's config.json (its weights unchanged)."""
    path = Path(folder) / "config.json"
    config = json.loads(path.read_text())
    config["xvector_output_dim"] = size
    path.write_text(json.dumps(config))


SSL_HIDDEN = 16
# a 50 Hz frame rate like the real models: strides 16 x 20 = 320 samples
SSL_CONV = {"conv_dim": (8, 8), "conv_stride": (16, 20), "conv_kernel": (16, 20)}
SSL_TRANSFORMER = {
    "hidden_size": SSL_HIDDEN,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 32,
    "num_conv_pos_embeddings": 8,
    "num_conv_pos_embedding_groups": 2,
}


def write_ssl_snapshot(folder, kind: str = "wavlm"):
    """A tiny random self-supervised model saved like a hub snapshot: WavLM as in WavLM-Large
    (layer-norm feature encoder, attention mask), HuBERT as in the base models (group norm)."""
    from transformers import HubertConfig, HubertModel, WavLMConfig, WavLMModel

    if kind == "wavlm":
        config = WavLMConfig(
            **SSL_CONV,
            **SSL_TRANSFORMER,
            feat_extract_norm="layer",
            do_stable_layer_norm=True,
            num_buckets=16,
            max_bucket_distance=32,
        )
        WavLMModel(config).save_pretrained(folder)
    else:
        config = HubertConfig(**SSL_CONV, **SSL_TRANSFORMER, feat_extract_norm="group")
        HubertModel(config).save_pretrained(folder)
    return Path(folder)
