"""A SpeechBrain pretrained-interface folder (``spkrec-ecapa-voxceleb`` and its kin) as an encoder.

Such a folder's ``hyperparams.yaml`` names a hub id as ``pretrained_path`` (and its
``pretrainer`` paths point there), so ``EncoderClassifier.from_hparams`` would try the hub: the
failure VoicePAT's users hit offline. Here the hyperparams are read with ``pretrained_path``
overridden to the folder, the pretrainer's paths are pointed at the folder's own files (older
folders spell the hub id in each path) and collected without a savedir, so nothing is linked,
copied or fetched. ``EncoderClassifier.encode_batch`` then embeds batches with relative lengths
(:mod:`.batching` says which waves share one), without the optional ``mean_var_norm_emb``, as
SpeechBrain's own verification (``SpeakerRecognition.verify_batch``) does.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from sparc_eval.errors import DataError

from .batching import pad
from .encoder import SnapshotEncoder
from .source import SPEECHBRAIN, weights_digest

DEFAULT_SAMPLE_RATE = 16000  # SpeechBrain's verification models; hyperparams may say otherwise
NEEDED_MODULES = ("compute_features", "mean_var_norm", "embedding_model")


class SpeechBrainEncoder(SnapshotEncoder):
    """``embed(waves) -> (n, D)`` with the model in a SpeechBrain folder, loaded offline."""

    format = SPEECHBRAIN

    def __init__(self, folder, **options):
        super().__init__(folder, **options)
        hparams = self._read_hparams()
        self.sample_rate = int(hparams.get("sample_rate") or DEFAULT_SAMPLE_RATE)
        self._files = self._load_weights(hparams)
        self._interface = self._build_interface(hparams)
        self.embedding_size = int(self.embed([np.zeros(self.sample_rate, np.float32)]).shape[1])

    # --- loading ---------------------------------------------------------------------------

    def _read_hparams(self) -> dict:
        from sparc_eval.speechbrain_compat import import_speechbrain

        import_speechbrain()
        from hyperpyyaml import load_hyperpyyaml

        path = self.folder / "hyperparams.yaml"
        text = path.read_text()
        # an override of a key the file lacks is an error in hyperpyyaml
        overrides = (
            {"pretrained_path": str(self.folder)} if _has_key(text, "pretrained_path") else {}
        )
        try:
            hparams = load_hyperpyyaml(text, overrides=overrides)
        except Exception as err:  # a class this SpeechBrain lacks, a YAML error, a bad !ref
            raise DataError(
                f"cannot build the model it describes ({type(err).__name__}: {err})", path=path
            ) from None
        missing = [name for name in NEEDED_MODULES if name not in hparams]
        if missing:
            raise DataError(
                f"no {', '.join(missing)}: not a SpeechBrain speaker-embedding model",
                path=path,
                hint="expected the hyperparams of an EncoderClassifier folder such as "
                "speechbrain/spkrec-ecapa-voxceleb",
            )
        return hparams

    def _load_weights(self, hparams: dict) -> list:
        """Load every checkpoint the pretrainer names that the folder holds (embedding_model.ckpt
        at least) from the folder itself; the files loaded, for the digest."""
        pretrainer = hparams.get("pretrainer") or _bare_pretrainer(hparams)
        # a pretrainer that forgot the encoder would leave it with random weights, silently
        pretrainer.loadables.setdefault("embedding_model", hparams["embedding_model"])
        pretrainer.collect_in = None  # no savedir: fetch returns the local files as they are
        files = []
        for name in list(pretrainer.loadables):
            local = self.folder / Path(str(pretrainer.paths.get(name, f"{name}.ckpt"))).name
            if local.is_file():
                pretrainer.paths[name] = str(local)
                files.append(local)
            elif name == "embedding_model":
                raise DataError(
                    f"the pretrainer's embedding_model file {local.name} is missing",
                    path=self.folder,
                )
            else:  # the classifier and label encoder are not needed for embeddings
                del pretrainer.loadables[name]
        _check_shapes(hparams["embedding_model"], Path(pretrainer.paths["embedding_model"]))
        pretrainer.collect_files(default_source=str(self.folder))
        pretrainer.load_collected()
        return [self.folder / "hyperparams.yaml", *files]

    def _build_interface(self, hparams: dict):
        from speechbrain.inference.classifiers import EncoderClassifier

        modules = dict(hparams.get("modules") or {name: hparams[name] for name in NEEDED_MODULES})
        modules.setdefault("mean_var_norm_emb", hparams.get("mean_var_norm_emb"))
        return EncoderClassifier(modules=modules, hparams=hparams, run_opts={"device": self.device})

    # --- the encoder ---------------------------------------------------------------------------

    def _embed_batch(self, waves: list) -> np.ndarray:
        import torch

        padded, lengths = pad(waves)
        relative = torch.from_numpy(lengths / lengths.max()).float()
        with torch.no_grad():
            out = self._interface.encode_batch(torch.from_numpy(padded), relative)
        return out.reshape(len(waves), -1).cpu().numpy()

    def settings(self) -> dict:
        return {
            "format": self.format,
            "architecture": type(self._interface.mods.embedding_model).__name__,
            "embedding_size": getattr(self, "embedding_size", None),
            "sample_rate": self.sample_rate,
            "padded_batches": self.padded_batches,
            "weights": weights_digest(self._files),
        }


def _has_key(yaml_text: str, key: str) -> bool:
    return re.search(rf"^{re.escape(key)}\s*:", yaml_text, re.MULTILINE) is not None


def _bare_pretrainer(hparams: dict):
    """Hyperparams without a pretrainer: load embedding_model.ckpt alone."""
    from speechbrain.utils.parameter_transfer import Pretrainer

    return Pretrainer(loadables={"embedding_model": hparams["embedding_model"]})


def _check_shapes(model, checkpoint: Path) -> None:
    """A checkpoint made for other sizes (another embedding size, other channels) than the
    hyperparams build, named before loading, instead of a bare size-mismatch traceback."""
    import torch

    saved = torch.load(checkpoint, map_location="cpu", weights_only=True)
    built = model.state_dict()
    differ = [
        f"{key} {tuple(saved[key].shape)} in the file, {tuple(built[key].shape)} in hyperparams.yaml"
        for key in built
        if key in saved and tuple(saved[key].shape) != tuple(built[key].shape)
    ]
    missing = [key for key in built if key not in saved]
    if differ or missing:
        raise DataError(
            "the checkpoint does not fit the model hyperparams.yaml builds (another embedding size "
            f"or architecture): {'; '.join(differ[:3] + [f'{k} missing' for k in missing[:3]])}",
            path=checkpoint,
            hint="use the hyperparams.yaml that came with this checkpoint",
        )
