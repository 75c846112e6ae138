"""A re-run is never stale (issue 24): every cached anonymization and trained model is keyed by
what made it, and the attacker anonymizes its own speech with its own draws.

The invariant, not a symptom: a card re-run into an old folder after a change of the anonymizer's
options gives the numbers of a fresh run with those options."""

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from anonymizers.base import Anonymizer  # noqa: E402
from anonymizers.mcadams import McAdams  # noqa: E402
from sparc_eval.anonymization.options import RunnerOptions
from sparc_eval.anonymization.runner import anonymize_corpus, build_anonymizer, settings_of  # noqa: E402
from sparc_eval.data.manifest import AudioRef, Manifest, Utterance  # noqa: E402
from sparc_eval.digest import digest  # noqa: E402


class Gain(Anonymizer):
    """Keeps its one option under a private name: the key must hold it all the same."""

    keeps_words = True
    deterministic = True

    def __init__(self, gain=1.0):
        self._gain = float(gain)

    def anonymize(self, wav, sr, utterance):
        return wav * np.float32(self._gain), sr


class Plain:
    """No base class, no settings(): its state cannot be known."""

    keeps_words = True

    def __init__(self, gain=1.0):
        self.gain = gain

    def anonymize(self, wav, sr, utterance):
        return wav * np.float32(self.gain), sr


def _key(anonymizer) -> str:
    return digest(settings_of(anonymizer), n=None, default=repr)


def test_options_kept_under_other_names_are_in_the_key():
    assert _key(Gain(1.0)) != _key(Gain(0.1))
    assert _key(Gain(0.1)) == _key(Gain(gain=0.1))
    assert settings_of(Gain(0.1))["gain"] == 0.1
    import copy
    import pickle

    twin = pickle.loads(pickle.dumps(Gain(0.3)))  # the Ray runner's copy keys as the original
    assert _key(twin) == _key(copy.copy(Gain(0.3))) == _key(Gain(0.3))


class Noisy(Anonymizer):
    """Derives a generator from its seed and keeps the seed privately: an argument named like a
    class attribute (``seed``, ``draws``) must not be read from the class."""

    keeps_words = True

    def __init__(self, level=0.1, seed=0):
        self._level, self._seed = level, seed
        self.rng = np.random.default_rng(seed)

    def anonymize(self, wav, sr, utterance):
        return wav + self._level * self.rng.standard_normal(wav.shape).astype(np.float32), sr


def test_an_argument_named_like_a_class_attribute_is_keyed_by_its_value():
    assert settings_of(Noisy(seed=3))["seed"] == 3 and _key(Noisy(seed=3)) != _key(Noisy(seed=4))


def test_the_attackers_copy_is_built_again_with_its_own_seed():
    """with_seed rebuilds from the constructor's arguments: what __init__ derives from the seed
    (a generator, a private copy) is the attacker's, not the user's."""
    user = build_anonymizer("test_rerun_keys.Noisy", {"level": 0.2})
    twin = user.with_seed(11)
    assert twin.rng is not user.rng and twin._seed == 11 and twin._level == 0.2
    assert settings_of(twin)["seed"] == 11 and settings_of(twin)["options"] == {"level": 0.2}
    assert twin.rng.standard_normal() == np.random.default_rng(11).standard_normal()


def test_the_built_in_anonymizers_keep_their_keys():
    """Caches made before this change stay valid: the same settings records as before."""
    assert settings_of(McAdams()) == {
        "class": "anonymizers.mcadams.McAdams",
        "version": 1,
        "alpha": 0.8,
        "random_per_speaker": None,
        "seed": 0,
        "win_ms": 20.0,
        "shift_ms": 10.0,
        "lp_order": 20,
    }
    assert settings_of(build_anonymizer("identity")) == {
        "class": "anonymizers.identity.Identity",
        "version": 1,
    }


def test_options_given_by_name_are_always_in_the_key():
    built = build_anonymizer("mcadams", {"alpha": 0.7})
    assert settings_of(built)["options"] == {"alpha": 0.7}
    assert _key(built) != _key(build_anonymizer("mcadams", {"alpha": 0.6}))


def test_an_object_whose_state_cannot_be_known_is_never_reused(tmp_path):
    wav = tmp_path / "a.wav"
    sf.write(wav, np.random.default_rng(0).uniform(-0.3, 0.3, 16000).astype(np.float32), 16000)
    corpus = Manifest(
        [Utterance("u1", "s1", "one two", "e", audio=AudioRef(str(wav)), duration=1.0)]
    )
    with pytest.warns(UserWarning, match="settings\\(\\)"):
        first = anonymize_corpus(
            corpus, Plain(1.0), tmp_path / "out", options=RunnerOptions(progress=False)
        )
    assert first.report["processed"] == 1
    with pytest.warns(UserWarning, match="recomputes"):
        again = anonymize_corpus(
            corpus, Plain(0.5), tmp_path / "out", options=RunnerOptions(progress=False)
        )
    assert (
        again.report["processed"] == 1 and again.report["cached"] == 0
    )  # another gain: not the old file
    assert _key(Plain(1.0)) != _key(Plain(1.0))  # two objects, two keys: nothing is reused

    class Holder(Anonymizer):  # a setting that is an object with no settings of its own
        def __init__(self, backend=None):
            self.backend = backend

    with pytest.warns(UserWarning):
        assert "unknown_state" in settings_of(Holder(object()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "unknown_state" not in settings_of(Gain(0.5))


def test_going_back_restores_the_kept_audio_and_never_a_damaged_or_anothers_file(tmp_path):
    """Issue 62: files made under another setting are kept by key and id and come back; a damaged
    file of the wanted key is made again, not restored; two ids over the same audio keep apart."""
    from sparc_eval.anonymization.runner import read_ledger

    wav = tmp_path / "a.wav"
    sf.write(wav, np.random.default_rng(0).uniform(-0.3, 0.3, 16000).astype(np.float32), 16000)
    corpus = Manifest(
        [
            Utterance(i, "s1", "one two", "e", audio=AudioRef(str(wav)), duration=1.0)
            for i in ("u1", "u2")  # the same audio under two ids
        ]
    )
    out = tmp_path / "out"

    def run(gain):
        report = anonymize_corpus(
            corpus, Gain(gain), out, options=RunnerOptions(progress=False)
        ).report
        audio = {i: sf.read(out / e["audio"])[0] for i, e in read_ledger(out).items()}
        return report, audio

    first, audio = run(1.0)
    assert first["processed"] == 2
    assert run(0.5)[0]["processed"] == 2
    back, again = run(1.0)
    assert back["processed"] == 0 and back["cached"] == 2
    assert all(np.array_equal(again[i], audio[i]) for i in audio)
    damaged = out / read_ledger(out)["u1"]["audio"]
    damaged.write_bytes(damaged.read_bytes()[:100])  # a file cut short
    mended, again = run(1.0)
    assert mended["processed"] == 1 and np.array_equal(again["u1"], audio["u1"])


def test_draws_per_speaker_or_per_utterance_and_the_attackers_own_seed():
    speaker_level = McAdams(random_per_speaker=[0.5, 0.9])
    utterance_level = McAdams(random_per_speaker=[0.5, 0.9], draws="utterance")
    a, b = Utterance("s1-0", "s1", "x", "e"), Utterance("s1-1", "s1", "x", "e")
    assert speaker_level._alpha(a) == speaker_level._alpha(b)
    assert utterance_level._alpha(a) != utterance_level._alpha(b)
    assert utterance_level._alpha(a) == McAdams(
        random_per_speaker=[0.5, 0.9], draws="utterance"
    )._alpha(a)
    attacker = speaker_level.with_seed(7)
    assert attacker.seed == 7 and speaker_level.seed == 0  # a copy: the user's object is unchanged
    assert attacker._alpha(a) != speaker_level._alpha(a) and _key(attacker) != _key(speaker_level)
    assert not speaker_level.deterministic and McAdams(0.7).deterministic
    assert (
        "draws" not in settings_of(speaker_level)
        and settings_of(utterance_level)["draws"] == "utterance"
    )


# --- the card ------------------------------------------------------------------------------------

RERUN_CARD = """
seed: 0
anonymizer: mcadams
anonymizer_options: {{}}
output_folder: !PLACEHOLDER
cache_folder: !PLACEHOLDER
progress: False
plots: False
num_threads: 1
data_folder: !PLACEHOLDER
scenarios: [semi-informed]
attackers:
    mel:
        hparams: {repo}/hparams/mel.yaml
        overrides:
            number_of_epochs: 2
            channels: [32, 32, 32, 32, 96]
            attention_channels: 16
            emb_dim: 32
            batch_size: 8
            chunk_seconds: 1.5
    resemblyzer:
        hparams: {repo}/hparams/resemblyzer.yaml
attackers_enabled: [mel]
content_attacker: null
learning_curve: True
learning_fractions: [0.5]
utility: {{}}
n_boot: 50
"""


def _card(recipe, tiny_demo, out: Path, *extra) -> dict:
    hparams = out.parent / f"{out.name}.yaml"
    hparams.write_text(RERUN_CARD.format(repo=REPO))
    args = [
        str(hparams),
        f"--data_folder={tiny_demo}",
        f"--output_folder={out}",
        f"--cache_folder={out / 'cache'}",
        "--n_enroll=2",
        *extra,
    ]
    assert recipe("evaluate_anonymizer").main(args) == 0
    return json.loads((out / "results.json").read_text())


def _numbers(doc: dict) -> dict:
    """Every cell's metrics (learning-curve points included), by where / attacker / scenario."""
    cells = {
        (w, a, sc): c.get("overall")
        for w, by in doc["cells"].items()
        for a, by_sc in by.items()
        for sc, c in by_sc.items()
    }
    curves = {
        (r["where"], r["attacker"], r["scenario"]): r["eer"]
        for r in doc.get("learning_curves") or []
    }
    return {"cells": cells, "curves": curves}


@pytest.mark.slow("four cards with a trained mel ECAPA: about 25 s")
def test_a_rerun_after_new_options_equals_a_fresh_run(recipe, tiny_demo, tmp_path):
    """McAdams alpha 0.8 then 0.6 into one folder gives what a fresh folder gives at 0.6: the
    semi-informed attacker and its learning-curve variant are trained anew on the new speech."""
    old = tmp_path / "old"
    first = _card(recipe, tiny_demo, old, "--anonymizer_options={mcadams: {alpha: 0.8}}")
    rerun = _card(recipe, tiny_demo, old, "--anonymizer_options={mcadams: {alpha: 0.6}}")
    fresh = _card(
        recipe, tiny_demo, tmp_path / "fresh", "--anonymizer_options={mcadams: {alpha: 0.6}}"
    )
    assert _numbers(rerun) == _numbers(fresh)
    assert (
        rerun["anonymizers"]["mcadams"]["train_content"]
        == fresh["anonymizers"]["mcadams"]["train_content"]
    )
    assert (
        first["anonymizers"]["mcadams"]["train_content"]
        != rerun["anonymizers"]["mcadams"]["train_content"]
    )
    models = sorted(p.name for p in (old / "models" / "mel").iterdir())
    assert (
        len(
            [
                m
                for m in models
                if m.startswith("semi_informed_mcadams_") and not m.endswith("train50")
            ]
        )
        == 2
    )
    assert (
        len([m for m in models if m.endswith("train50") and m.startswith("semi")]) == 2
    )  # the variant too
    semi = rerun["cells"]["mcadams"]["mel"]["semi-informed"]
    assert rerun["anonymizers"]["mcadams"]["train_content"][:12] in semi["model_folder"]
    # going back to 0.8 finds the 0.8 model and cells again (the audio is made anew, the model is not)
    back = _card(recipe, tiny_demo, old, "--anonymizer_options={mcadams: {alpha: 0.8}}")
    assert _numbers(back) == _numbers(first)
    assert rerun["anonymizers"]["mcadams"]["draws"] == {
        "mode": "deterministic",
        "attacker": "the user's audio (no draws)",
    }
    assert not (old / "anonymized" / "mcadams" / "attacker").exists()  # deterministic: made once


@pytest.mark.slow("two cards with random McAdams and Resemblyzer: about 9 s")
def test_a_randomized_anonymizer_gives_the_attacker_its_own_draws(recipe, tiny_demo, tmp_path):
    """Random McAdams: the attacker's enrollment and training speech use the attacker's seed, the
    trials the user's; with attacker_draws: user the attacker reuses the user's (named)."""
    out = tmp_path / "own"
    options = "--anonymizer_options={mcadams: {random_per_speaker: [0.5, 0.9]}}"
    pytest.importorskip("resemblyzer")
    quick = (
        "--scenarios=[lazy-informed]",
        "--learning_curve=False",
        "--attackers_enabled=[resemblyzer]",
    )
    doc = _card(recipe, tiny_demo, out, options, *quick)
    assert doc["cells"]["mcadams"]["resemblyzer"]["lazy-informed"]["status"] == "ok"
    record = doc["anonymizers"]["mcadams"]
    assert record["draws"]["mode"] == "speaker" and record["draws"]["attacker"] == "its own draws"
    assert record["draws"]["attacker_seed"] != 0
    assert "draws (mcadams): speaker" in doc["run"]["deviations"]
    user = {
        json.loads(line)["id"]: json.loads(line)
        for line in (out / "anonymized/mcadams/eval/manifest.jsonl").read_text().splitlines()
    }
    mine = {
        json.loads(line)["id"]: json.loads(line)
        for line in (out / "anonymized/mcadams/attacker/enroll/manifest.jsonl")
        .read_text()
        .splitlines()
    }
    assert mine and set(mine) < set(user)  # the enrollment utterances only
    for uid, record_ in mine.items():
        assert record_["extra"]["mcadams_alpha"] != user[uid]["extra"]["mcadams_alpha"]
        a, _ = sf.read(out / "anonymized/mcadams/attacker/enroll" / record_["audio"]["path"])
        b, _ = sf.read(out / "anonymized/mcadams/eval" / user[uid]["audio"]["path"])
        assert not np.allclose(a, b)
    assert (
        "Draws: mcadams: speaker; the attacker used its own draws" in (out / "card.md").read_text()
    )
    # the lazy-informed attack enrolls on the attacker's copy and tests on the user's
    from sparc_eval.data.plan import DataSettings, plan_data

    plan = plan_data(
        DataSettings(
            data_folder=str(tiny_demo),
            cache_folder=str(out / "cache"),
            n_enroll=2,
            scenario="lazy-informed",
            anon_eval_folder=str(out / "anonymized/mcadams/eval"),
            anon_enroll_folder=str(out / "anonymized/mcadams/attacker/enroll"),
        )
    )
    assert {Path(u.audio.path).parts[-5] for u in plan.enroll_utterances()} == {"attacker"}
    assert {Path(u.audio.path).parts[-4] for u in plan.trial_utterances()} == {"eval"}
    strong = _card(recipe, tiny_demo, tmp_path / "user", options, *quick, "--attacker_draws=user")
    assert strong["anonymizers"]["mcadams"]["attacker_enroll_folder"] is None
    assert "attacker draws (mcadams): user" in strong["run"]["deviations"]


def test_a_checkpoint_folder_is_resumed_only_by_the_same_training_content(tmp_path):
    """The fingerprint holds the training manifest's content digest: checkpoints of re-anonymized
    training speech are kept aside (a new model trains) and come back with that speech; other
    hparams are refused; a folder from before the digest existed is trusted for original speech
    only."""
    from attackers.resume import check_resume
    from sparc_eval.errors import DataError

    save = tmp_path / "save"
    (save / "CKPT+1").mkdir(parents=True)
    path = tmp_path / "run_fingerprint.json"
    train = Manifest(
        [
            Utterance("u1", "s1", "one", "e", extra={"anonymization_key": "k1"}),
            Utterance("u2", "s2", "two", "e", extra={"anonymization_key": "k2"}),
        ]
    )
    again = Manifest(
        [
            Utterance("u1", "s1", "one", "e", extra={"anonymization_key": "k1"}),
            Utterance("u2", "s2", "two", "e", extra={"anonymization_key": "other settings"}),
        ]
    )
    assert train.content_digest() != again.content_digest()
    assert (
        train.content_digest() == Manifest(reversed(train.utterances)).content_digest()
    )  # order-free
    semi = {
        "lr": 0.001,
        "trained_on_speech": "anonymized",
        "trained_on_content": train.content_digest(),
    }
    check_resume(tmp_path, save, semi)
    other = {**semi, "trained_on_content": again.content_digest()}
    check_resume(tmp_path, save, other)  # other speech: the checkpoints go aside
    assert not any(save.iterdir()) and json.loads(path.read_text()) == other  # empty, for the new
    (save / "CKPT+2").mkdir(parents=True)  # the new model's
    check_resume(tmp_path, save, semi)  # back: the first model returns, the second goes aside
    assert [p.name for p in save.iterdir()] == ["CKPT+1"]
    with pytest.raises(DataError, match="lr: 0.001 -> 0.01"):
        check_resume(tmp_path, save, {**semi, "lr": 0.01})  # other hparams: refused
    path.write_text(json.dumps({"lr": 0.001}))  # written before the content digest existed
    check_resume(tmp_path, save, semi)  # anonymized speech: not trusted, set aside
    assert not any(save.iterdir())
    (save / "CKPT+3").mkdir(parents=True)
    path.write_text(json.dumps({"lr": 0.001}))
    check_resume(tmp_path, save, {**semi, "trained_on_speech": "original"})
    assert [p.name for p in save.iterdir()] == ["CKPT+3"]  # original speech: trusted


def test_model_files_are_keyed_by_content_not_name(tmp_path):
    """Issue 62: the same bytes under another name key alike; a file rewritten in place, even
    with its size and modification time put back, keys differently (its ctime moved)."""
    import os

    from sparc_eval.digest import content_digest

    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    a.write_bytes(b"voice one")
    b.write_bytes(b"voice one")
    assert content_digest([a]) == content_digest([b])
    before, st = content_digest([a]), a.stat()
    a.write_bytes(b"voice two")
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert a.stat().st_size == st.st_size and a.stat().st_mtime_ns == st.st_mtime_ns
    assert content_digest([a]) != before
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.bin").write_bytes(b"weights")
    first = content_digest([folder])
    (folder / "model.bin").write_bytes(b"other weights")
    assert content_digest([folder]) != first


def test_a_cell_cut_off_midway_gives_way_to_its_kept_cell(tmp_path):
    """Issue 62: a cell folder left without cell.json (a run cut off while scoring) is cleared
    before the kept cell of the wanted key comes back; a finished cell of another key is kept."""
    from sparc_eval.attack.cells import _finished
    from sparc_eval.cache import kept_path

    cell_dir = tmp_path / "cells" / "bag"
    kept = kept_path(cell_dir.parent, f"bag-{'a' * 8}")
    kept.mkdir(parents=True)
    (kept / "cell.json").write_text(json.dumps({"key": "a" * 8, "status": "ok"}))
    cell_dir.mkdir(parents=True)
    (cell_dir / "scores.txt").write_text("half written\n")
    assert _finished(cell_dir, "a" * 8) == {"key": "a" * 8, "status": "ok"}
    assert not (cell_dir / "scores.txt").exists()
    assert _finished(cell_dir, "b" * 8) is None  # the a-cell is kept aside again
    assert (kept / "cell.json").is_file()


def test_a_model_folder_resumes_under_another_spelling_of_its_path(tmp_path):
    """The same output folder named by an absolute and by a relative path holds the same model:
    its checkpoints resume (a card run by benchmarks/bench_card.py, then by hand, was refused)."""
    from attackers.resume import check_resume

    save = tmp_path / "save"
    (save / "CKPT+1").mkdir(parents=True)
    spelled = {"lr": 0.001, "output_folder": str(tmp_path), "save_folder": str(save)}
    check_resume(tmp_path, save, spelled)
    relative = {**spelled, "output_folder": "out", "save_folder": "out/save"}
    check_resume(tmp_path, save, relative)
    assert [p.name for p in save.iterdir()] == ["CKPT+1"]
    assert json.loads((tmp_path / "run_fingerprint.json").read_text()) == relative
