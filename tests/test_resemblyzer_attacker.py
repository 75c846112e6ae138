"""The pretrained voice attacker (attackers/resemblyzer_attacker.py, the ``voice`` extra): run by
the attacker recipe on the demo corpus without training; it refuses the semi-informed scenario."""

import json
from pathlib import Path

import pytest

pytest.importorskip("resemblyzer", reason="the voice extra (resemblyzer) is not installed")

REPO = Path(__file__).resolve().parents[1]
# a few utterances per speaker keep the run short: 24 test speakers x 6 = 144 utterances
FEW = ["--max_per_speaker=6", "--n_boot=100", "--plots=False"]


@pytest.mark.slow("Resemblyzer embeds 144 demo utterances: about 5 s")
def test_resemblyzer_recognises_demo_voices_without_training(
    demo_dir, tmp_path, capsys, recipe, monkeypatch
):
    from attackers.embedding import EmbeddingAttacker

    def no_fitting(self, train):
        raise AssertionError("a pretrained encoder with cosine scoring fits nothing")

    monkeypatch.setattr(EmbeddingAttacker, "fit", no_fitting)
    args = [
        str(REPO / "hparams/resemblyzer.yaml"),
        f"--data_folder={demo_dir}",
        f"--output_folder={tmp_path}",
        f"--cache_folder={tmp_path / 'cache'}",
        *FEW,
    ]
    assert recipe("train_attacker").main(args) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(tmp_path / "results.json")
    doc = json.loads((tmp_path / "results.json").read_text())
    run = doc["run"]
    assert run["attacker"] == "resemblyzer" and run["scenario"] == "original"
    assert "pretrained_resemblyzer_attacker" in run["deviations"]
    assert "GE2E" in run["deviations"]["pretrained_resemblyzer_attacker"]
    assert run["training"] == "none"  # and fit() was never called (it raises here)
    # each demo speaker has its own synthetic voice: a pretrained encoder tells them apart well
    # (4.6% EER on the full split, with 10 enrollment utterances per speaker)
    assert doc["overall"]["n_target"] == 72
    assert doc["overall"]["eer"] < 0.15  # 0.042 here, 0.5 is chance
    # embeddings are cached by audio content: a second run embeds nothing
    from sparc_eval.attack import load_attack, prepare_attack

    overrides = {
        "data_folder": str(demo_dir),
        "cache_folder": str(tmp_path / "cache"),
        "max_per_speaker": 6,
    }
    _, plan, attacker = load_attack(REPO / "hparams/resemblyzer.yaml", overrides)
    prepare_attack(attacker, plan)
    assert (
        attacker.n_embedded == 0 and len(attacker.score(plan)) == 72 + doc["overall"]["n_nontarget"]
    )


def test_resemblyzer_refuses_the_semi_informed_scenario(demo_dir, tmp_path, capsys, recipe):
    args = [
        str(REPO / "hparams/resemblyzer.yaml"),
        f"--data_folder={demo_dir}",
        f"--output_folder={tmp_path}",
        f"--cache_folder={tmp_path / 'cache'}",
        "--scenario=semi-informed",
        f"--anon_eval_folder={demo_dir}",
        f"--anon_train_folders=[{demo_dir}]",
        "--anonymizer_name=identity",
        *FEW,
    ]
    assert recipe("train_attacker").main(args) == 2
    err = capsys.readouterr().err
    assert "cannot run the semi-informed scenario" in err and "never trained" in err
    assert (
        not (tmp_path / "results.json").exists()
        and not (tmp_path / "cache" / "resemblyzer").exists()
    )
