"""Pretrained verification models from local snapshots (attackers/pretrained/): each format loads
offline and embeds in batches, a changed checkpoint changes the cache key, every bad source fails
naming its path, and the attacker recipe runs one on the demo corpus. The snapshots are tiny
random-weight copies of the real formats (tests/pretrained_fixtures.py)."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from pretrained_fixtures import (
    SPEECHBRAIN_EMBEDDING,
    XVECTOR_EMBEDDING,
    set_embedding_size,
    write_speechbrain_folder,
    write_xvector_folder,
)

from attackers.pretrained.attacker import PretrainedAttacker, open_encoder
from attackers.pretrained.source import resolve_source
from sparc_eval.errors import DataError

REPO = Path(__file__).resolve().parents[1]
FEW = ["--max_per_speaker=3", "--n_boot=50", "--plots=False"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """{name: folder} of tiny snapshots, built once for the module."""
    root = tmp_path_factory.mktemp("pretrained")
    return {
        "speechbrain": write_speechbrain_folder(root / "spkrec-ecapa-tiny"),
        "wavlm": write_xvector_folder(root / "wavlm-sv-tiny", "WavLMForXVector"),
        "unispeech_bin": write_xvector_folder(
            root / "unispeech-sat-sv-tiny", "UniSpeechSatForXVector", safe=False
        ),
    }


@pytest.fixture(autouse=True)
def no_hub(monkeypatch):
    """Any attempt to reach a model hub fails the test."""
    import huggingface_hub

    def refuse(*args, **kwargs):
        raise AssertionError(f"tried to download {args} {kwargs}")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", refuse)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", refuse)


def _encoder(folder, **options):
    return open_encoder(*resolve_source(folder), **options)


def _waves(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [(0.1 * rng.standard_normal(n)).astype(np.float32) for n in lengths]


def _cosines(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


# --- loading and embedding -------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, fmt, architecture, size",
    [
        ("speechbrain", "speechbrain", "ECAPA_TDNN", SPEECHBRAIN_EMBEDDING),
        ("wavlm", "huggingface", "WavLMForXVector", XVECTOR_EMBEDDING),
        ("unispeech_bin", "huggingface", "UniSpeechSatForXVector", XVECTOR_EMBEDDING),
    ],
)
def test_each_format_loads_offline_and_embeds_a_batch(models, name, fmt, architecture, size):
    before = sorted(p.name for p in models[name].iterdir())
    encoder = _encoder(models[name])
    out = encoder.embed(_waves([16000, 9000, 12000]))
    assert out.shape == (3, size) and out.dtype == np.float32 and np.isfinite(out).all()
    settings = encoder.settings()
    assert (settings["format"], settings["architecture"]) == (fmt, architecture)
    assert settings["embedding_size"] == size and encoder.sample_rate == 16000
    assert sorted(p.name for p in models[name].iterdir()) == before  # nothing linked or written


@pytest.mark.parametrize("name", ["speechbrain", "wavlm"])
def test_batching_gives_the_embeddings_of_one_at_a_time(models, name):
    waves = _waves([12000, 8000, 12000, 16000, 8000, 12000], seed=1)
    encoder = _encoder(models[name], batch_size=2)
    alone = np.vstack([encoder.embed([w]) for w in waves])
    np.testing.assert_allclose(encoder.embed(waves), alone, rtol=1e-4, atol=1e-6)
    # padded batches reach the edges of the convolutions: close to one at a time, not equal
    padded = _encoder(models[name], batch_size=6, padded_batches=True)
    assert padded.settings()["weights"] == encoder.settings()["weights"]
    assert padded.settings() != encoder.settings()  # never one cache for both
    assert (_cosines(padded.embed(waves), alone) > 0.95).all()


def test_the_weights_digest_changes_with_the_weights(models, tmp_path):
    sb = _encoder(models["speechbrain"]).settings()["weights"]
    shutil.copytree(models["speechbrain"], tmp_path / "copy")
    assert _encoder(tmp_path / "copy").settings()["weights"] == sb  # bytes, not paths or times
    retrained = write_speechbrain_folder(tmp_path / "retrained", seed=1)
    assert _encoder(retrained).settings()["weights"] != sb
    wavlm = _encoder(models["wavlm"]).settings()["weights"]
    other = write_xvector_folder(tmp_path / "wavlm-1", "WavLMForXVector", seed=1)
    assert _encoder(other).settings()["weights"] != wavlm


# --- bad sources -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hub_id", ["speechbrain/spkrec-ecapa-voxceleb", "microsoft/wavlm-base-plus-sv"]
)
def test_a_hub_id_is_refused_with_the_download_command(hub_id, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # so that the id is no folder here
    with pytest.raises(DataError) as err:
        PretrainedAttacker(source=hub_id)
    text = str(err.value)
    assert "never downloaded" in text and hub_id in text
    assert f"huggingface-cli download {hub_id} --local-dir DIR" in text
    assert f"git clone https://huggingface.co/{hub_id}" in text


def test_a_missing_source_says_to_set_it():
    with pytest.raises(DataError, match="needs source.*--source="):
        PretrainedAttacker(source=None)


def _bad_sources(models, root: Path) -> dict:
    """{case: (folder, words the error must hold)}: each a snapshot that cannot be used."""
    (root / "empty").mkdir()
    (root / "notes").mkdir()
    (root / "notes" / "README.md").write_text("weights elsewhere")
    plain = write_xvector_folder(root / "wavlm-plain", "WavLMModel")
    ctc = write_xvector_folder(root / "wav2vec2-ctc", "Wav2Vec2ForCTC", vocab_size=8)
    resized = Path(shutil.copytree(models["wavlm"], root / "wavlm-resized"))
    set_embedding_size(resized, 12)
    sb_resized = Path(shutil.copytree(models["speechbrain"], root / "sb-resized"))
    text = (sb_resized / "hyperparams.yaml").read_text()
    (sb_resized / "hyperparams.yaml").write_text(
        text.replace(f": {SPEECHBRAIN_EMBEDDING}\n", ": 12\n")
    )
    sb_no_ckpt = Path(shutil.copytree(models["speechbrain"], root / "sb-no-ckpt"))
    (sb_no_ckpt / "embedding_model.ckpt").unlink()
    hf_no_weights = Path(shutil.copytree(models["wavlm"], root / "wavlm-no-weights"))
    (hf_no_weights / "model.safetensors").unlink()
    return {
        "missing": (root / "nowhere", ["no such folder"]),
        "empty": (root / "empty", ["neither", "hyperparams.yaml", "config.json"]),
        "other files": (root / "notes", ["neither", "README.md"]),
        "plain WavLMModel": (
            plain,
            ["WavLMModel", "no speaker-verification head", "WavLMForXVector"],
        ),
        "CTC model": (ctc, ["Wav2Vec2ForCTC", "no speaker-verification head"]),
        "x-vector size": (resized, ["8-dim x-vectors", "xvector_output_dim 12"]),
        "ECAPA size": (sb_resized, ["does not fit", "(8, ", "(12, "]),
        "no embedding_model.ckpt": (sb_no_ckpt, ["without embedding_model.ckpt"]),
        "no weights": (hf_no_weights, ["without weights", "model.safetensors"]),
    }


def test_every_bad_source_fails_naming_the_path_before_any_audio(models, tmp_path):
    for case, (folder, words) in _bad_sources(models, tmp_path).items():
        with pytest.raises(DataError) as err:
            attacker = PretrainedAttacker(source=str(folder))
            attacker._load()  # what embedding does first, before reading any utterance
        text = str(err.value)
        assert str(folder) in text, (case, text)
        for word in words:
            assert word in text, (case, word, text)


# --- the attacker recipe ---------------------------------------------------------------------


def _recipe_args(demo_dir, tmp_path, source):
    return [
        str(REPO / "hparams/pretrained.yaml"),
        f"--source={source}",
        f"--data_folder={demo_dir}",
        f"--output_folder={tmp_path / 'out'}",
        f"--cache_folder={tmp_path / 'cache'}",
        *FEW,
    ]


REWRITE = {
    "speechbrain": lambda folder: write_speechbrain_folder(folder, seed=1),
    "wavlm": lambda folder: write_xvector_folder(folder, "WavLMForXVector", seed=1),
}


def _prepare_again(source, demo_dir, tmp_path):
    """The attacker rebuilt on the same cache, its embeddings prepared: (utterances it embedded,
    utterances the run reads)."""
    from sparc_eval.attack import load_attack, prepare_attack

    overrides = {
        "source": str(source),
        "data_folder": str(demo_dir),
        "cache_folder": str(tmp_path / "cache"),
        "max_per_speaker": 3,
    }
    _, plan, attacker = load_attack(REPO / "hparams/pretrained.yaml", overrides)
    prepare_attack(attacker, plan)
    read = {u.id for u in [*plan.enroll_utterances(), *plan.trial_utterances()]}
    return attacker.n_embedded, len(read)


@pytest.mark.slow("the recipe with a pretrained model, per format: about 2.5 s each")
@pytest.mark.parametrize(
    "name, architecture", [("speechbrain", "ECAPA_TDNN"), ("wavlm", "WavLMForXVector")]
)
def test_the_attacker_recipe_runs_a_pretrained_model_end_to_end(
    models, name, architecture, demo_dir, tmp_path, capsys, recipe
):
    source = shutil.copytree(models[name], tmp_path / "model")
    args = _recipe_args(demo_dir, tmp_path, source)
    assert recipe("train_attacker").main(args) == 0, capsys.readouterr().err
    results = tmp_path / "out" / "results.json"
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(results)
    doc = json.loads(results.read_text())
    run = doc["run"]
    assert run["attacker"] == "pretrained" and run["training"] == "none"
    assert architecture in run["encoder"] and "pretrained_verification_model" in run["deviations"]
    assert 0.0 <= doc["overall"]["eer"] <= 1.0 and doc["overall"]["n_target"] > 0
    # the cache is keyed by the weights' bytes: the same model embeds nothing twice, a
    # checkpoint rewritten in the same folder embeds everything again
    assert _prepare_again(source, demo_dir, tmp_path)[0] == 0
    REWRITE[name](source)
    embedded, read = _prepare_again(source, demo_dir, tmp_path)
    assert embedded == read > 0


def test_the_recipe_refuses_a_hub_id_before_reading_data(
    demo_dir, tmp_path, capsys, recipe, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    args = _recipe_args(demo_dir, tmp_path, "speechbrain/spkrec-ecapa-voxceleb")
    assert recipe("train_attacker").main(args) == 2
    err = capsys.readouterr().err
    assert "huggingface-cli download speechbrain/spkrec-ecapa-voxceleb" in err
    assert not (tmp_path / "out" / "results.json").exists() and not (tmp_path / "cache").exists()


def test_the_recipe_asks_for_source_when_it_is_not_set(demo_dir, tmp_path, capsys, recipe):
    args = [a for a in _recipe_args(demo_dir, tmp_path, "x") if not a.startswith("--source=")]
    assert recipe("train_attacker").main(args) == 2
    err = capsys.readouterr().err
    assert "needs source" in err and "--source=/models/spkrec-ecapa-voxceleb" in err
