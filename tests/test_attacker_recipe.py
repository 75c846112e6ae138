"""recipes/train_attacker.py end to end on the demo corpus, with a tiny model."""

import importlib.util
import json
from pathlib import Path

import pytest
from capture import call_captured

from sparc_eval.errors import DataError

REPO = Path(__file__).resolve().parents[1]
TINY = [
    "--channels=[32,32,32,32,96]",
    "--emb_dim=32",
    "--number_of_epochs=2",
    "--batch_size=16",
    "--n_boot=50",
    "--progress=False",
]


def plan_data(hp: dict):
    from sparc_eval.data.plan import DataSettings
    from sparc_eval.data.plan import plan_data as plan

    return plan(DataSettings.from_hparams(hp))


def _recipe():
    spec = importlib.util.spec_from_file_location(
        "train_attacker", REPO / "recipes/train_attacker.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(capsys, hparams, *args):
    code = _recipe().main([str(REPO / "hparams" / hparams), *map(str, args)])
    out = capsys.readouterr()
    return code, out.out.strip().splitlines(), out.err


@pytest.fixture(scope="module")
def demo_dir(demo_reading_corpus):
    return Path(demo_reading_corpus.name).parent


@pytest.fixture(scope="module")
def phones_args(demo_dir, tmp_path_factory):
    """The phone attacker's output folder and recipe arguments."""
    out = tmp_path_factory.mktemp("phones")
    return out, [
        f"--data_folder={demo_dir}",
        f"--output_folder={out}",
        f"--cache_folder={out / 'cache'}",
        *TINY,
    ]


@pytest.fixture(scope="module")
def phones_run(phones_args):
    """The phone attacker trained and evaluated once; each test reads its folder (and may run the
    recipe again into it): its output folder, its arguments and what the first run returned."""
    out, args = phones_args
    return out, args, call_captured(_recipe().main, [str(REPO / "hparams/phones.yaml"), *args])


def test_phone_ecapa_trains_and_scores_the_small_demo_corpus(small_demo, tmp_path, capsys):
    """The paper's phone attacker through the recipe on 12 speakers, one epoch: make test's ECAPA
    run (the full-size one is test_phone_attacker_end_to_end)."""
    code, lines, err = _run(
        capsys,
        "phones.yaml",
        f"--data_folder={small_demo}",
        f"--output_folder={tmp_path}",
        f"--cache_folder={tmp_path / 'cache'}",
        *TINY,
        "--number_of_epochs=1",
        "--plots=False",
    )
    assert code == 0, err
    assert lines[-1] == str(tmp_path / "results.json")
    results = json.loads((tmp_path / "results.json").read_text())
    run, overall = results["run"], results["overall"]
    assert run["features"] == "phones" and run["n_train_speakers"] == 6
    assert overall["n_target"] == 6 * 4 and overall["n_nontarget"] == 6 * 4 * 5
    assert 0.0 <= overall["eer"] <= 1.0 and len(results["per_speaker"]) == 6
    assert (tmp_path / "train_log.txt").read_text().count("epoch:") == 1
    assert any((tmp_path / "save").glob("CKPT*"))


@pytest.mark.slow("trains the phone ECAPA on the full demo corpus: about 10 s")
def test_phone_attacker_end_to_end(phones_run):
    out, _, (code, lines, err) = phones_run
    assert code == 0, err
    assert lines[-1] == str(out / "results.json")
    results = json.loads((out / "results.json").read_text())
    assert set(results) >= {"run", "overall", "per_speaker", "segments", "not_applicable"}
    run = results["run"]
    assert (
        run["features"] == "phones"
        and run["scenario"] == "original"
        and run["n_train_speakers"] == 24
    )
    assert run["n_enroll_speakers"] == 24 and set(run["timings_s"]) >= {
        "training",
        "embeddings",
        "scoring",
    }
    overall = results["overall"]
    # 24 evaluation speakers x 20 utterances, split 10/10: every trial against every enrollment model
    assert overall["n_target"] == 240 and overall["n_nontarget"] == 240 * 23
    assert (
        0.0 <= overall["eer"] <= 1.0
        and overall["ci95"]["eer"][0] <= overall["eer"] <= overall["ci95"]["eer"][1]
    )
    assert len(results["per_speaker"]) == 24 and "sex" in results["segments"]
    scores = (out / "scores.txt").read_text().splitlines()
    assert len(scores) == 240 * 24 and scores[0].split()[3] in ("target", "nontarget")
    for name in ("report.md", "roc.png", "det.png", "per_speaker_eer.png", "train_log.txt"):
        assert (out / name).stat().st_size > 0
    assert any((out / "save").glob("CKPT*"))


@pytest.mark.slow("reruns the trained phone ECAPA (about 10 s)")
def test_resume_reuses_checkpoints_and_rejects_changed_hparams(phones_run, capsys):
    out, args, (first_code, _, first_err) = phones_run
    assert first_code == 0, first_err
    before = json.loads((out / "results.json").read_text())["overall"]
    log = (out / "train_log.txt").read_text()
    code, lines, err = _run(capsys, "phones.yaml", *args)
    assert code == 0, err
    after = json.loads((out / "results.json").read_text())
    assert after["overall"] == before  # same checkpoint, same seed: same numbers
    assert (out / "train_log.txt").read_text() == log  # nothing left to train: no epoch ran
    # evaluation settings may change on a trained attacker; model settings may not
    code, lines, err = _run(capsys, "phones.yaml", *args, "--emb_dim=48")
    assert code == 2 and "emb_dim: 32 -> 48" in err


def test_unknown_hparams_key_is_named(phones_args, capsys):
    _, args = phones_args
    code, lines, err = _run(capsys, "phones.yaml", *args, "--no_such_key=3")
    assert code == 2 and "no_such_key" in err


def test_audio_features_on_a_text_only_corpus_are_refused(data_dir, tmp_path, capsys):
    code, lines, err = _run(
        capsys,
        "mel.yaml",
        f"--data_folder={data_dir / 'edacc/spane_lists/edacc-test.txt'}",
        f"--output_folder={tmp_path}",
        *TINY,
    )
    assert code == 2 and "mel features need audio" in err and "text-only" in err


@pytest.mark.slow("trains the mel ECAPA on demo audio: about 6 s")
def test_mel_attacker_runs_on_demo_audio(demo_dir, tmp_path, capsys):
    code, lines, err = _run(
        capsys,
        "mel.yaml",
        f"--data_folder={demo_dir}",
        f"--output_folder={tmp_path}",
        f"--cache_folder={tmp_path / 'cache'}",
        *TINY,
        "--number_of_epochs=1",
        "--chunk_seconds=1.5",
        "--plots=False",
        "--min_verdict_speakers=30",
    )
    assert code == 0, err
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["run"]["features"] == "mel" and results["overall"]["n_target"] == 240
    # 24 test speakers under a rule asking for 30: the report says so and prints the counted bound
    small = results["overall"]["small_evaluation"]
    assert (
        small["n_speakers"] == 24
        and small["min_speakers"] == 30
        and small["eer_bound95"][1] > results["overall"]["eer"]
    )
    report = (tmp_path / "report.md").read_text()
    assert "**Small evaluation.** small evaluation (24 test speakers, 240 target" in report
    assert "too few speakers for a verdict" in report


def test_short_inputs_do_not_crash_ecapa():
    import torch

    from attackers.ecapa import pad_to_min_length
    from sparc_eval.speechbrain_compat import import_speechbrain

    ECAPA_TDNN = import_speechbrain("speechbrain.lobes.models.ECAPA_TDNN").ECAPA_TDNN

    model = ECAPA_TDNN(39, channels=[16, 16, 16, 16, 48], lin_neurons=8).eval()
    feats, lens = torch.zeros(2, 3, 39), torch.tensor([1.0, 2 / 3])
    with pytest.raises(RuntimeError):
        model(feats, lens)  # the failure the padding rule exists for
    padded, new_lens = pad_to_min_length(feats, lens, 8)
    assert padded.shape == (2, 8, 39) and torch.allclose(new_lens, torch.tensor([3 / 8, 2 / 8]))
    assert model(padded, new_lens).shape == (2, 1, 8)


def test_semi_informed_needs_the_anonymized_corpus(demo_dir, tmp_path, capsys):
    code, lines, err = _run(
        capsys,
        "phones.yaml",
        f"--data_folder={demo_dir}",
        f"--output_folder={tmp_path}",
        "--scenario=semi-informed",
        *TINY,
    )
    assert code == 2 and "anon_eval_folder" in err
    with pytest.raises(DataError):
        plan_data(
            {"scenario": "bogus", "cache_folder": str(tmp_path), "data_folder": str(demo_dir)}
        )


def _manifest_dir(path, speakers, n, *, skip=()):
    from sparc_eval.data.manifest import Manifest, Utterance

    utts = [
        Utterance(f"{s}-{i}", s, f"words of {s} number {i}", f"{s}-ep", duration=3.0)
        for s in speakers
        for i in range(n)
        if f"{s}-{i}" not in skip
    ]
    path.mkdir(parents=True, exist_ok=True)
    Manifest(utts).write_jsonl(path / "manifest.jsonl")
    return path


def test_a_few_anonymizer_failures_are_left_out_and_listed(tmp_path):
    train = _manifest_dir(tmp_path / "train", ["t1", "t2", "t3"], 4)
    original = _manifest_dir(tmp_path / "eval", ["e1", "e2", "e3"], 30)
    anonymized = _manifest_dir(tmp_path / "anon", ["e1", "e2", "e3"], 30, skip={"e2-5"})
    hp = {
        "cache_folder": str(tmp_path),
        "data_folder": str(train),
        "eval_folder": str(original),
        "anon_eval_folder": str(anonymized),
        "scenario": "lazy-informed",
    }
    with pytest.warns(UserWarning, match="1 enrollment and trial utterances are missing"):
        plan = plan_data(hp)
    assert "e2-5" not in plan.split.trial_ids and "e2-5" not in plan.split.enroll["e2"]
    assert plan.split.dropped["utterance e2-5"].startswith("missing from the anonymized corpus")
    many = _manifest_dir(
        tmp_path / "anon2", ["e1", "e2", "e3"], 30, skip={f"e1-{i}" for i in range(10)}
    )
    with pytest.raises(DataError, match="10 of the 90 enrollment and trial utterances are missing"):
        plan_data({**hp, "anon_eval_folder": str(many)})


def test_only_the_split_needs_anonymizing(tmp_path):
    """An anonymized corpus holding just the split's utterances (what the anonymizer card
    anonymizes) plans without a warning; one of those missing is a listed failure."""
    import warnings

    train = _manifest_dir(tmp_path / "train", ["t1", "t2", "t3"], 4)
    original = _manifest_dir(tmp_path / "eval", ["e1", "e2", "e3"], 30)
    hp = {
        "cache_folder": str(tmp_path),
        "data_folder": str(train),
        "eval_folder": str(original),
        "scenario": "original",
        "max_per_speaker": 12,
        "n_enroll": 6,
    }
    split = plan_data(hp).split
    used = {u for ids in split.enroll.values() for u in ids} | set(split.trial_ids)
    assert len(used) == 36
    unused = {f"{s}-{i}" for s in ("e1", "e2", "e3") for i in range(30)} - used
    anonymized = _manifest_dir(tmp_path / "anon", ["e1", "e2", "e3"], 30, skip=unused)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan = plan_data({**hp, "scenario": "lazy-informed", "anon_eval_folder": str(anonymized)})
    assert plan.split.enroll == split.enroll and plan.split.trial_ids == split.trial_ids
    lost = sorted(used)[0]
    thinner = _manifest_dir(tmp_path / "anon_b", ["e1", "e2", "e3"], 30, skip=unused | {lost})
    with pytest.warns(UserWarning, match="1 enrollment and trial utterances are missing"):
        plan = plan_data({**hp, "scenario": "ignorant", "anon_eval_folder": str(thinner)})
    assert f"utterance {lost}" in plan.split.dropped


def test_model_signature_sees_nested_model_settings(demo_dir, tmp_path):
    from attackers.resume import model_signature
    from sparc_eval.attack import load_attack

    overrides = {
        "data_folder": str(demo_dir),
        "output_folder": str(tmp_path),
        "cache_folder": str(tmp_path),
    }
    base = model_signature(load_attack(REPO / "hparams/phones.yaml", overrides)[0])
    assert model_signature(load_attack(REPO / "hparams/phones.yaml", overrides)[0]) == base
    edited = tmp_path / "phones.yaml"
    edited.write_text(
        (REPO / "hparams/phones.yaml").read_text().replace("margin: 0.2", "margin: 0.3")
    )
    assert model_signature(load_attack(edited, overrides)[0]) != base
