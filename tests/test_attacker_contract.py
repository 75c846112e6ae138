"""The attacker contract (sparc_eval/attack/): a new attacker is one class and one hparams file,
run by the attacker recipe and by the leakage comparison without touching either (the example in
docs/plugins/attacker.md: attackers/bag_of_phones.py, hparams/bag_of_phones.yaml)."""

import json
from pathlib import Path

import numpy as np
import pytest

from sparc_eval.attack import Needs, check_attacker, load_attack, not_applicable
from sparc_eval.attack.trials import Trials
from sparc_eval.errors import DataError

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow("the bag of phones on the full demo corpus with 100 resamples: about 8 s")
def test_bag_of_phones_through_the_attacker_recipe(demo_dir, tmp_path, capsys, recipe):
    args = [
        str(REPO / "hparams/bag_of_phones.yaml"),
        f"--data_folder={demo_dir}",
        f"--output_folder={tmp_path}",
        f"--cache_folder={tmp_path / 'cache'}",
        "--n_boot=100",
    ]
    assert recipe("train_attacker").main(args) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(tmp_path / "results.json")
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["run"]["attacker"] == "bag_of_phones" and doc["run"]["features"] == "bag_of_phones"
    assert doc["run"]["schema_version"] >= 2 and doc["run"]["bootstrap_unit"] == "two_way"
    # speakers of the demo corpus read their own topics: their phone frequencies differ, but not much
    assert 0.2 < doc["overall"]["eer"] < 0.5 and doc["overall"]["n_target"] == 240
    trials = Trials.read(tmp_path / "scores.txt")
    assert len(trials) == doc["overall"]["n_target"] + doc["overall"]["n_nontarget"]


def test_bag_of_phones_in_the_leakage_comparison(demo_dir, tmp_path, capsys, recipe):
    hp = tmp_path / "leakage.yaml"
    hp.write_text(f"""seed: 0
output_folder: {tmp_path / "out"}
cache_folder: {tmp_path / "cache"}
progress: False
plots: False
n_boot: 100
conditions: [all]
corpora:
    reading:
        data_folder: {demo_dir}
attackers:
    bag:
        hparams: {REPO}/hparams/bag_of_phones.yaml
    bag_inline:
        attacker: !new:attackers.bag_of_phones.BagOfPhones
            cache_folder: {tmp_path / "cache"}
""")
    assert recipe("compare_leakage").main([str(hp)]) == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "out/results.json").read_text())
    cells = doc["cells"]["reading"]
    assert cells["bag"]["all"]["status"] == "ok" and cells["bag_inline"]["all"]["status"] == "ok"
    # one attacker, two ways of naming it: the same trials and scores
    assert cells["bag"]["all"]["overall"] == cells["bag_inline"]["all"]["overall"]
    cell_doc = json.loads((tmp_path / "out/cells/reading/bag/all/results.json").read_text())
    assert cell_doc["overall"] == cells["bag"]["all"]["overall"]  # one evaluation per cell, one CI
    assert [r["paired"] for r in doc["comparisons"]["attackers"]] == ["trials"]


class _AudioOnly:
    name = "audio-only"
    needs = Needs(audio=True, training=False)

    def fit(self, train):
        raise AssertionError("not applicable: nothing may run")

    score = fit

    def describe(self):
        return {}

    def deviations(self, plan):
        return {}


def test_not_applicable_is_decided_before_any_work(data_dir, tmp_path):
    hp, plan, _ = load_attack(
        REPO / "hparams/bag_of_phones.yaml",
        {
            "data_folder": str(data_dir / "edacc/spane_lists/edacc-test.txt"),
            "cache_folder": str(tmp_path),
        },
    )
    why = not_applicable(check_attacker(_AudioOnly()), plan)
    assert "audio-only features need audio" in why and "text-only" in why
    with pytest.raises(DataError, match="is not an attacker"):
        check_attacker(object())


def test_trials_are_immutable_and_written_at_full_precision(tmp_path):
    t = Trials(
        ["a", "b"], ["u1", "u2"], [0.1234567890123, np.nan], [True, False], test_speaker=["a", "b"]
    )
    with pytest.raises(ValueError):
        t.score[0] = 1.0
    assert t.write(tmp_path / "s.txt") == 1
    assert Trials.read(tmp_path / "s.txt").score.tolist() == [0.1234567890123]
    with pytest.raises(DataError, match="values per trial"):
        Trials(["a"], ["u1", "u2"], [0.1, 0.2], [True, False])
