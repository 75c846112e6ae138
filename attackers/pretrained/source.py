"""The ``source`` key: a local snapshot folder, never a hub id; which format it holds.

Every check here runs when the attacker is built, so a wrong ``source`` fails before any audio
is read, with the path and what was expected.
"""

from __future__ import annotations

import re
from pathlib import Path

from sparc_eval.errors import DataError

SPEECHBRAIN = "speechbrain"
HUGGINGFACE = "huggingface"
XVECTOR_ARCHITECTURES = ("WavLMForXVector", "UniSpeechSatForXVector", "Wav2Vec2ForXVector")
HF_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

# owner/name, as the Hugging Face hub spells a repository: one slash, no leading . / or ~
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def looks_like_hub_id(value: str) -> bool:
    return bool(_HUB_ID.match(value))


def hub_id_error(hub_id: str) -> DataError:
    return DataError(
        f"source {hub_id!r} is no folder here and looks like a model hub id, but weights are "
        "never downloaded here",
        hint=(
            f"download the snapshot elsewhere, with `huggingface-cli download {hub_id} "
            f"--local-dir DIR` or `git clone https://huggingface.co/{hub_id}`, copy it here and "
            "point source at the folder (--source=DIR)"
        ),
    )


def resolve_source(source) -> tuple[Path, str]:
    """(folder, format) of a ``source`` value; a DataError for anything that is not a local
    snapshot of a supported format."""
    if source is None or str(source).strip() == "":
        raise DataError(
            "the pretrained attacker needs source: the folder of a pretrained verification model",
            hint="set it in the hparams or on the command line: --source=/models/spkrec-ecapa-voxceleb",
        )
    folder = Path(str(source)).expanduser()
    if not folder.is_dir():
        if looks_like_hub_id(str(source)) and not folder.exists():
            raise hub_id_error(str(source))
        what = "is a file, not a folder" if folder.exists() else "no such folder"
        raise DataError(
            f"{what}: source must be the folder of a local model snapshot",
            path=folder,
            hint="a SpeechBrain folder (hyperparams.yaml, embedding_model.ckpt) or a Hugging Face "
            "x-vector snapshot (config.json, preprocessor_config.json, model.safetensors)",
        )
    return folder, detect_format(folder)


def detect_format(folder: Path) -> str:
    """SPEECHBRAIN or HUGGINGFACE, after checking the files that format needs are there."""
    if (folder / "hyperparams.yaml").is_file():
        _require(folder, ["embedding_model.ckpt"], "a SpeechBrain pretrained-interface folder")
        return SPEECHBRAIN
    if (folder / "config.json").is_file():
        _require(folder, ["preprocessor_config.json"], "a Hugging Face x-vector snapshot")
        if not any((folder / name).is_file() for name in HF_WEIGHT_FILES):
            raise DataError(
                "a Hugging Face x-vector snapshot without weights",
                path=folder,
                hint=f"expected one of {', '.join(HF_WEIGHT_FILES)} beside config.json",
            )
        return HUGGINGFACE
    found = sorted(p.name for p in folder.iterdir())[:8]
    raise DataError(
        f"neither a SpeechBrain folder nor a Hugging Face snapshot (found: {', '.join(found) or 'nothing'})",
        path=folder,
        hint="expected hyperparams.yaml + embedding_model.ckpt (SpeechBrain) or config.json + "
        "preprocessor_config.json + model.safetensors (Hugging Face x-vector)",
    )


def _require(folder: Path, names: list, what: str) -> None:
    missing = [name for name in names if not (folder / name).is_file()]
    if missing:
        raise DataError(
            f"{what} without {', '.join(missing)}",
            path=folder,
            hint="copy the whole snapshot, not only some of its files",
        )


def weights_digest(files) -> str:
    """One digest of the bytes of the files a model is built from (in the order given), so a
    changed checkpoint never reuses embeddings cached for another."""
    from sparc_eval.digest import IN_PROCESS, digest

    return digest([[Path(f).name, IN_PROCESS(f)] for f in files])
