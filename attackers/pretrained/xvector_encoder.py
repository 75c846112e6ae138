"""A Hugging Face x-vector snapshot (``microsoft/wavlm-base-plus-sv`` and its kin) as an encoder.

The snapshot's ``config.json`` must name an x-vector architecture (a plain ``WavLMModel`` or a
CTC model has no speaker head) whose ``xvector_output_dim`` matches the weights. The model and
its ``AutoFeatureExtractor`` load with ``local_files_only=True``; batches (:mod:`.batching`)
are padded by the extractor, with an attention mask where the extractor asks for one, and the
embedding is the model's x-vector (``outputs.embeddings``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sparc_eval.errors import DataError

from .encoder import SnapshotEncoder
from .source import HF_WEIGHT_FILES, HUGGINGFACE, XVECTOR_ARCHITECTURES, weights_digest

HEAD_WEIGHT = "feature_extractor.weight"  # the x-vector head's last linear layer: (D, 2 * tdnn)


class XVectorEncoder(SnapshotEncoder):
    """``embed(waves) -> (n, D)`` with a Hugging Face x-vector model, loaded offline."""

    format = HUGGINGFACE

    def __init__(self, folder, **options):
        super().__init__(folder, **options)
        config = _read_json(self.folder / "config.json")
        self.architecture = _xvector_architecture(config, self.folder / "config.json")
        self.weights_file = next(
            self.folder / n for n in HF_WEIGHT_FILES if (self.folder / n).is_file()
        )
        self.embedding_size = int(config.get("xvector_output_dim") or 512)
        _check_head(self.weights_file, self.embedding_size)
        self._extractor, self._model = self._load()
        self.sample_rate = int(self._extractor.sampling_rate)

    def _load(self):
        import transformers

        try:
            extractor = transformers.AutoFeatureExtractor.from_pretrained(
                self.folder, local_files_only=True
            )
            model = getattr(transformers, self.architecture).from_pretrained(
                self.folder, local_files_only=True
            )
        except (OSError, ValueError, RuntimeError) as err:
            raise DataError(
                f"cannot load the {self.architecture} snapshot ({err})", path=self.folder
            ) from None
        return extractor, model.to(self.device).eval()

    def _embed_batch(self, waves: list) -> np.ndarray:
        import torch

        mask = bool(getattr(self._extractor, "return_attention_mask", False))
        inputs = self._extractor(
            waves,
            sampling_rate=self.sample_rate,
            padding=True,
            return_attention_mask=mask,
            return_tensors="pt",
        )
        inputs = {key: value.to(self.device) for key, value in inputs.items()}
        with torch.no_grad():
            return self._model(**inputs).embeddings.cpu().numpy()

    def settings(self) -> dict:
        files = [
            self.folder / "config.json",
            self.folder / "preprocessor_config.json",
            self.weights_file,
        ]
        return {
            "format": self.format,
            "architecture": self.architecture,
            "embedding_size": self.embedding_size,
            "sample_rate": self.sample_rate,
            "padded_batches": self.padded_batches,
            "weights": weights_digest(files),
        }


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise DataError(f"cannot read it as JSON ({err})", path=path) from None


def _xvector_architecture(config: dict, path: Path) -> str:
    names = config.get("architectures") or []
    for name in names:
        if name in XVECTOR_ARCHITECTURES:
            return name
    raise DataError(
        f"architecture {', '.join(names) or 'unnamed'} (model_type {config.get('model_type')!r}) "
        "has no speaker-verification head",
        path=path,
        hint=f"expected an x-vector snapshot: one of {', '.join(XVECTOR_ARCHITECTURES)}, "
        "such as microsoft/wavlm-base-plus-sv",
    )


def _check_head(weights_file: Path, embedding_size: int) -> None:
    """The weights' x-vector size against config.json's, before transformers builds the model."""
    shape = _tensor_shape(weights_file, HEAD_WEIGHT)
    if shape is None:
        raise DataError(
            f"no {HEAD_WEIGHT}: the weights hold no x-vector head",
            path=weights_file,
            hint="expected the weights of an x-vector model such as microsoft/wavlm-base-plus-sv",
        )
    if shape[0] != embedding_size:
        raise DataError(
            f"the weights give {shape[0]}-dim x-vectors but config.json says xvector_output_dim "
            f"{embedding_size}",
            path=weights_file,
            hint="use the config.json that came with these weights",
        )


def _tensor_shape(weights_file: Path, key: str):
    if weights_file.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(weights_file), framework="pt") as handle:
            return tuple(handle.get_slice(key).get_shape()) if key in handle.keys() else None
    import torch

    state = torch.load(weights_file, map_location="cpu", weights_only=True, mmap=True)
    return tuple(state[key].shape) if key in state else None
