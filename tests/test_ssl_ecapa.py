"""ECAPA-TDNN on self-supervised features (hparams/ssl_ecapa.yaml, attackers/ssl_upstream.py) on
tiny random WavLM and HuBERT snapshots written by the tests: no real weights anywhere."""

import json
from pathlib import Path

import pytest
from capture import call_captured
from pretrained_fixtures import SSL_HIDDEN as HIDDEN
from pretrained_fixtures import write_ssl_snapshot

from sparc_eval.errors import DataError

REPO = Path(__file__).resolve().parents[1]
TINY_ECAPA = {"channels": [16, 16, 16, 16, 48], "attention_channels": 8, "emb_dim": 16}


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory):
    """{"wavlm": folder, "hubert": folder}: tiny random models saved like hub snapshots. WavLM as
    in WavLM-Large (layer-norm feature encoder, attention mask), HuBERT as in the base models
    (group norm, no mask)."""
    root = tmp_path_factory.mktemp("ssl_snapshots")
    write_ssl_snapshot(root / "wavlm", "wavlm")
    write_ssl_snapshot(root / "hubert", "hubert")
    return {"wavlm": root / "wavlm", "hubert": root / "hubert"}


def _batch():
    import torch

    torch.manual_seed(0)
    return torch.randn(2, 8000), torch.tensor([1.0, 0.5])


def test_weighted_sum_of_layers_learns_its_weights_and_frozen_upstream_does_not_train(snapshots):
    import torch

    from attackers.ssl_upstream import SSLUpstream

    upstream = SSLUpstream(snapshots["wavlm"], freeze=True).train()
    assert not upstream.model.training and upstream.normalize  # frozen: eval mode, no dropout
    wavs, lens = _batch()
    with torch.no_grad():
        upstream.layer_weights.copy_(torch.tensor([0.3, -0.2]))
    feats = upstream(wavs, lens)
    frames = int(upstream.model._get_feat_extract_output_lengths(torch.tensor(8000)))
    assert feats.shape == (2, frames, HIDDEN) and frames == 25
    layers = upstream.layers(wavs, lens)
    weights = torch.softmax(torch.tensor([0.3, -0.2]), dim=0)
    assert torch.allclose(feats, weights[0] * layers[0] + weights[1] * layers[1], atol=1e-6)
    feats.pow(2).mean().backward()
    assert upstream.layer_weights.grad is not None and upstream.layer_weights.grad.abs().sum() > 0
    assert all(p.grad is None for p in upstream.model.parameters())
    assert set(upstream.trainable_state()) == {
        "layer_weights"
    }  # a checkpoint skips the frozen model


def test_unfrozen_upstream_trains_with_the_weights(snapshots):
    from attackers.ssl_upstream import SSLUpstream

    upstream = SSLUpstream(snapshots["hubert"], freeze=False).train()
    assert upstream.model.training and not upstream.pass_mask and not upstream.normalize
    wavs, lens = _batch()
    upstream(wavs, lens).pow(2).mean().backward()
    grads = [p.grad for p in upstream.model.encoder.parameters()]
    assert all(g is not None for g in grads) and sum(g.abs().sum() for g in grads) > 0
    assert upstream.layer_weights.grad is not None
    assert len(upstream.trainable_state()) > 1


def test_waveforms_are_normalised_over_their_real_samples():
    import torch

    from attackers.ssl_upstream import normalize_waveforms, sample_mask

    wavs = torch.cat([torch.randn(1, 100) * 3 + 1, torch.randn(1, 100)])
    mask = sample_mask(wavs, torch.tensor([1.0, 0.4]))
    out = normalize_waveforms(wavs, mask)
    assert out[1, 40:].abs().sum() == 0 and abs(float(out[1, :40].mean())) < 1e-5
    assert abs(float(out[0].std(unbiased=False)) - 1) < 1e-3


def test_bad_ssl_sources_are_refused_with_what_to_do(snapshots, tmp_path):
    from attackers.ssl_upstream import SSLUpstream, hidden_size

    with pytest.raises(DataError, match="needs ssl_source"):
        hidden_size(None)
    with pytest.raises(DataError, match="hub id.*point ssl_source at that folder"):
        hidden_size("microsoft/wavlm-large")
    with pytest.raises(DataError, match="not a folder"):
        SSLUpstream(tmp_path / "absent")
    other = tmp_path / "bert"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 16}))
    with pytest.raises(
        DataError, match=f"{other}.*'bert'.*expected one of wavlm, wav2vec2, hubert"
    ):
        SSLUpstream(other)
    assert hidden_size(snapshots["wavlm"]) == HIDDEN


def _recipe_args(snapshots, demo_dir, out, *extra):
    return [
        str(REPO / "hparams/ssl_ecapa.yaml"),
        f"--data_folder={demo_dir}",
        f"--output_folder={out}",
        f"--cache_folder={out / 'cache'}",
        f"--ssl_source={snapshots['wavlm']}",
        "--model_size=custom",
        *[f"--{k}={json.dumps(v)}" for k, v in TINY_ECAPA.items()],
        "--number_of_epochs=1",
        "--batch_size=16",
        "--eval_batch_size=16",
        "--chunk_seconds=1.0",
        "--lr_step_size=5",
        "--max_per_speaker=12",
        "--n_enroll=6",
        "--n_boot=50",
        "--plots=False",
        "--progress=False",
        *extra,
    ]


@pytest.fixture(scope="module")
def ssl_run(snapshots, demo_dir, tmp_path_factory, recipe):
    """A tiny run on the demo corpus, made once: the recipe's arguments, its output folder and
    what the run returned (code, stdout lines, stderr)."""
    out = tmp_path_factory.mktemp("ssl_run")
    args = _recipe_args(snapshots, demo_dir, out)
    return args, out, call_captured(recipe("train_attacker").main, args)


@pytest.mark.slow("trains ECAPA on a tiny WavLM over the demo corpus: about 6 s")
def test_recipe_trains_and_scores_end_to_end(ssl_run):
    import torch

    args, out, (code, lines, err) = ssl_run
    assert code == 0, err
    assert lines[-1] == str(out / "results.json")
    results = json.loads((out / "results.json").read_text())
    run, overall = results["run"], results["overall"]
    assert run["features"] == "ssl" and run["freeze_upstream"] is True and run["init_from"] is None
    assert 0.0 <= overall["eer"] <= 1.0 and overall["n_target"] == 24 * 6
    deviations = run["deviations"]
    assert {"vpc2026_architecture", "vpc2026_upstream", "vpc2026_from_scratch"} <= set(deviations)
    assert "number_of_epochs 1 (2026: 2)" in deviations["vpc2026_training"]
    # the layer weights (from zeros) trained and were checkpointed, without the frozen upstream
    saved = next((out / "save").glob("CKPT*"))
    weights = torch.load(saved / "ssl_upstream.ckpt", weights_only=True)
    assert set(weights) == {"layer_weights"} and weights["layer_weights"].abs().sum() > 0


@pytest.mark.slow("reruns the trained SSL ECAPA (about 6 s)")
def test_a_rerun_resumes_the_trained_weights_and_a_changed_upstream_is_refused(
    ssl_run, snapshots, recipe, capsys
):
    args, out, (first_code, _, first_err) = ssl_run
    assert first_code == 0, first_err
    before = json.loads((out / "results.json").read_text())["overall"]
    log = (out / "train_log.txt").read_text()
    assert recipe("train_attacker").main(args) == 0, capsys.readouterr().err
    assert json.loads((out / "results.json").read_text())["overall"] == before
    assert (out / "train_log.txt").read_text() == log  # nothing retrained
    code = recipe("train_attacker").main([*args, "--freeze_upstream=False"])
    assert code == 2 and "freeze_upstream: True -> False" in capsys.readouterr().err


def test_the_recipe_without_ssl_source_says_what_to_do(demo_dir, recipe, tmp_path, capsys):
    hparams = str(REPO / "hparams/ssl_ecapa.yaml")
    code = recipe("train_attacker").main(
        [hparams, f"--data_folder={demo_dir}", f"--output_folder={tmp_path}"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "needs ssl_source" in err and "huggingface-cli download" in err


def _loaded_attacker(snapshots, demo_dir, tmp_path, init_from):
    from sparc_eval.attack import load_attack

    overrides = {
        "data_folder": str(demo_dir),
        "output_folder": str(tmp_path / "out"),
        "cache_folder": str(tmp_path / "cache"),
        "ssl_source": str(snapshots["wavlm"]),
        "model_size": "custom",
        "init_from": str(init_from),
        **TINY_ECAPA,
    }
    return load_attack(REPO / "hparams/ssl_ecapa.yaml", overrides)[2]


def _tiny_ecapa(input_size):
    from sparc_eval.speechbrain_compat import import_speechbrain

    ECAPA_TDNN = import_speechbrain("speechbrain.lobes.models.ECAPA_TDNN").ECAPA_TDNN
    return ECAPA_TDNN(
        input_size,
        channels=TINY_ECAPA["channels"],
        attention_channels=TINY_ECAPA["attention_channels"],
        lin_neurons=TINY_ECAPA["emb_dim"],
    )


def test_fine_tuning_starts_from_the_init_from_checkpoint(snapshots, demo_dir, tmp_path):
    import torch

    pretrained = tmp_path / "pretrained"
    pretrained.mkdir()
    state = _tiny_ecapa(HIDDEN).state_dict()
    torch.save(state, pretrained / "embedding_model.ckpt")
    torch.save({"layer_weights": torch.tensor([2.0, -1.0])}, pretrained / "ssl_upstream.ckpt")
    attacker = _loaded_attacker(snapshots, demo_dir, tmp_path, pretrained)
    attacker._install_upstream()
    attacker._initialise()
    loaded = attacker.hp["embedding_model"].state_dict()
    assert all(torch.equal(loaded[k], v) for k, v in state.items())
    upstream = attacker.hp["modules"]["compute_features"]
    assert torch.equal(upstream.layer_weights.detach(), torch.tensor([2.0, -1.0]))
    assert "vpc2026_from_scratch" not in attacker.deviations(_plan_stub())


def test_an_init_from_of_other_sizes_is_an_error_naming_both_shapes(tmp_path):
    import torch

    from attackers.ecapa import load_pretrained

    fbank_model = tmp_path / "embedding_model.ckpt"  # an Fbank ECAPA, like spkrec-ecapa-voxceleb
    torch.save(_tiny_ecapa(80).state_dict(), fbank_model)
    with pytest.raises(
        DataError, match=r"blocks.0.conv.conv.weight: checkpoint \(16, 80, 5\), model \(16, 16, 5\)"
    ):
        load_pretrained(_tiny_ecapa(HIDDEN), tmp_path)
    with pytest.raises(DataError, match="no ECAPA-TDNN checkpoint"):
        load_pretrained(_tiny_ecapa(HIDDEN), tmp_path / "absent")


class _plan_stub:
    @staticmethod
    def utterances():
        return []
