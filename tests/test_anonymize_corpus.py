"""The corpus runner: outputs, cache and resume, failures, shards, Ray, CLI and recipe, on a few
real LibriSpeech samples listed in a manifest the tests write."""

import errno
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from anonymizers.base import Anonymizer
from anonymizers.identity import Identity
from anonymizers.mcadams import McAdams
from sparc_eval.anonymization import cli as anonymize_cli
from sparc_eval.anonymization import runner as runner_mod
from sparc_eval.anonymization.runner import anonymize_corpus, merge_shards, parse_shard, read_ledger
from sparc_eval.data.corpora import load_corpus, load_kaldi_dir
from sparc_eval.data.manifest import AudioRef, Manifest, Utterance
from sparc_eval.errors import DataError
from sparc_eval.speech.audio import read_utterance
from sparc_eval.speech.backends import DiskFull

REPO = Path(__file__).resolve().parents[1]
# in the order the Kaldi dir lists them
IDS = [
    "2414-128291-0009",
    "3005-163389-0007",
    "3331-159605-0004",
    "367-130732-0000",
    "367-130732-0006",
    "533-1066-0000",
]


@pytest.fixture(scope="module")
def source(data_dir):
    full = load_kaldi_dir(data_dir / "librispeech_samples")
    return full.subset(lambda u: u.id in IDS)


@pytest.fixture
def corpus(source, tmp_path):
    """A manifest.jsonl in a tmp folder listing six real files (absolute paths)."""
    path = tmp_path / "in" / "manifest.jsonl"
    source.write_jsonl(path)
    return load_corpus(path.parent)


def _bytes(manifest):
    return {u.id: Path(u.audio.path).read_bytes() for u in manifest}


class Interrupting(McAdams):
    """McAdams with the same cache key, that is interrupted (Ctrl-C) after ``after`` utterances."""

    def __init__(self, after):
        super().__init__()
        self.after, self.count = after, 0

    def settings(self):
        return McAdams().settings()

    def anonymize(self, wav, sr, utterance):
        if self.count == self.after:
            raise KeyboardInterrupt
        self.count += 1
        return super().anonymize(wav, sr, utterance)


def test_identity_run_writes_16k_wavs_and_the_manifest(corpus, tmp_path):
    out_dir = tmp_path / "identity"
    out = anonymize_corpus(corpus, Identity(), out_dir, options=RunnerOptions(progress=False))
    assert [u.id for u in out] == [u.id for u in corpus] == IDS
    ledger = read_ledger(out_dir)
    for src, dst in zip(corpus, out):
        assert (dst.speaker, dst.text, dst.episode, dst.sex) == (
            src.speaker,
            src.text,
            src.episode,
            src.sex,
        )
        assert dst.extra == {
            "anonymizer": "identity",
            "keeps_words": True,
            "anonymization_key": ledger[dst.id]["key"],
        }
        assert Path(dst.audio.path).is_file() and Path(dst.audio.path).is_relative_to(
            out_dir / "wav"
        )
        info = sf.info(dst.audio.path)
        assert info.samplerate == 16000 and info.subtype == "PCM_16" and info.channels == 1
        assert dst.duration == pytest.approx(src.duration, abs=1e-3)
        # 16-bit 16 kHz input: the copy is bit-exact
        a, _ = sf.read(src.audio.path, dtype="int16")
        b, _ = sf.read(dst.audio.path, dtype="int16")
        assert np.array_equal(a, b)
    lines = (out_dir / "manifest.jsonl").read_text().splitlines()
    assert (
        json.loads(lines[0])["audio"]["path"] == f"wav/{IDS[0].split('-')[0]}/{IDS[0]}.wav"
    )  # relocatable
    report = json.loads((out_dir / "anonymization.json").read_text())
    assert (
        report["processed"] == 6
        and report["failed"] == 0
        and report["complete"]
        and report["rtf"] >= 0
    )
    assert (out_dir / "failures.jsonl").read_text() == ""
    assert load_corpus(out_dir).by_id().keys() == out.by_id().keys()

    # a re-run does nothing and touches nothing
    stamps = {u.id: Path(u.audio.path).stat().st_mtime_ns for u in out}
    again = anonymize_corpus(corpus, Identity(), out_dir, options=RunnerOptions(progress=False))
    assert again.report["processed"] == 0 and again.report["cached"] == 6
    assert {u.id: Path(u.audio.path).stat().st_mtime_ns for u in again} == stamps


def test_settings_change_redoes_and_deleted_outputs_are_redone(corpus, tmp_path):
    out_dir = tmp_path / "mc"
    first = anonymize_corpus(
        corpus, McAdams(alpha=0.8), out_dir, options=RunnerOptions(progress=False)
    )
    assert first.report["processed"] == 6
    before = _bytes(first)
    for u in list(first)[:2]:
        Path(u.audio.path).unlink()
    redo = anonymize_corpus(
        corpus, McAdams(alpha=0.8), out_dir, options=RunnerOptions(progress=False)
    )
    assert (redo.report["processed"], redo.report["cached"]) == (2, 4)
    assert _bytes(redo) == before
    other = anonymize_corpus(
        corpus, McAdams(alpha=0.7), out_dir, options=RunnerOptions(progress=False)
    )
    assert other.report["processed"] == 6


def test_interrupted_run_resumes_only_the_missing(corpus, tmp_path):
    out_dir = tmp_path / "resume"
    with pytest.raises(KeyboardInterrupt):
        anonymize_corpus(
            corpus, Interrupting(after=4), out_dir, options=RunnerOptions(progress=False)
        )
    assert len(read_ledger(out_dir)) == 4
    resumed = anonymize_corpus(corpus, McAdams(), out_dir, options=RunnerOptions(progress=False))
    assert (resumed.report["processed"], resumed.report["cached"]) == (2, 4)
    assert len(resumed) == 6 and resumed.report["rtf_all"] > 0
    # same output as an uninterrupted run
    fresh = anonymize_corpus(
        corpus, McAdams(), tmp_path / "fresh", options=RunnerOptions(progress=False)
    )
    assert _bytes(resumed) == _bytes(fresh)


def test_bad_files_are_listed_and_the_rest_finishes(source, tmp_path):
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    (bad_dir / "corrupt.flac").write_bytes(b"fLaC" + bytes(range(256)) * 4)
    (bad_dir / "empty.wav").write_bytes(b"")
    utts = list(source)
    utts.insert(
        2,
        Utterance(
            id="corrupt-1", speaker="x", text="A", audio=AudioRef(str(bad_dir / "corrupt.flac"))
        ),
    )
    utts.append(
        Utterance(id="empty-1", speaker="x", text="B", audio=AudioRef(str(bad_dir / "empty.wav")))
    )
    out_dir = tmp_path / "out"
    out = anonymize_corpus(
        Manifest(utts), McAdams(), out_dir, options=RunnerOptions(progress=False)
    )
    assert [u.id for u in out] == IDS
    failures = [json.loads(line) for line in (out_dir / "failures.jsonl").read_text().splitlines()]
    assert {f["id"] for f in failures} == {"corrupt-1", "empty-1"}
    assert all(f["error"] == "DataError" and f["reason"] for f in failures)
    report = json.loads((out_dir / "anonymization.json").read_text())
    assert report["failed"] == 2 and report["finished"] == 6 and not report["complete"]


class Broken(Anonymizer):
    name = "broken"

    def anonymize(self, wav, sr, utterance):
        if utterance.id.startswith("3331"):
            return np.full(10, np.nan, np.float32), sr
        if utterance.id.startswith("367"):
            return np.zeros(0, np.float32), sr
        if utterance.id.startswith("2414"):
            raise RuntimeError("backend exploded")
        utterance.extra["asr_text"] = "words"
        return wav[: sr // 2] * 0.5, 22050  # another rate: resampled to 16 kHz


def test_bad_anonymizer_outputs_are_failures_with_names(corpus, tmp_path):
    out = anonymize_corpus(
        corpus,
        Broken(),
        tmp_path / "b",
        options=RunnerOptions(progress=False, batch_size=3),
    )
    assert [u.id for u in out] == ["3005-163389-0007", "533-1066-0000"]
    for u in out:
        key = u.extra.pop("anonymization_key")
        assert (
            u.extra == {"asr_text": "words", "anonymizer": "broken", "keeps_words": None}
            and u.text
            and len(key) == 64
        )
        assert u.duration == pytest.approx(0.5 * 16000 / 22050, abs=1e-3)
    failures = {
        json.loads(line)["id"]: json.loads(line)
        for line in (tmp_path / "b" / "failures.jsonl").read_text().splitlines()
    }
    assert failures["3331-159605-0004"]["error"] == "AnonymizerOutputError"
    assert "NaN" in failures["3331-159605-0004"]["reason"]
    assert failures["367-130732-0006"]["error"] == "AnonymizerOutputError"
    assert failures["2414-128291-0009"] == {
        **failures["2414-128291-0009"],
        "error": "RuntimeError",
        "reason": "backend exploded",
    }


def test_full_disk_stops_and_keeps_what_is_finished(corpus, tmp_path, monkeypatch):
    real_open, calls = runner_mod.atomic_open, {"n": 0}

    def filling_open(path, mode="w", **kwargs):
        if mode == "wb":
            calls["n"] += 1
            if calls["n"] > 2:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, mode, **kwargs)

    monkeypatch.setattr(runner_mod, "atomic_open", filling_open)
    out_dir = tmp_path / "full"
    with pytest.raises(DiskFull, match="2 of 6 utterances are finished"):
        anonymize_corpus(corpus, McAdams(), out_dir, options=RunnerOptions(progress=False))
    monkeypatch.setattr(runner_mod, "atomic_open", real_open)
    resumed = anonymize_corpus(corpus, McAdams(), out_dir, options=RunnerOptions(progress=False))
    assert (resumed.report["processed"], resumed.report["cached"]) == (4, 2)


def test_segments_are_cut_and_keyed(source, tmp_path):
    utt = source.by_id()["3005-163389-0007"]
    seg = [
        Utterance(
            id=f"seg-{k}",
            speaker="3005",
            text="X",
            episode="e",
            audio=AudioRef(utt.audio.path, start=0.5 * k, stop=0.5 * k + 0.5),
        )
        for k in range(3)
    ]
    out = anonymize_corpus(
        Manifest(seg), Identity(), tmp_path / "seg", options=RunnerOptions(progress=False)
    )
    assert [u.duration for u in out] == [0.5, 0.5, 0.5]
    wav, _ = read_utterance(utt)
    for k, u in enumerate(out):
        got, _ = sf.read(u.audio.path, dtype="float32")
        assert np.allclose(got, wav[8000 * k : 8000 * (k + 1)], atol=1 / 32767)
        assert u.audio.start is None and u.audio.stop is None


def test_shards_together_equal_the_full_run(corpus, tmp_path):
    full = anonymize_corpus(
        corpus, McAdams(), tmp_path / "full", options=RunnerOptions(progress=False)
    )
    out_dir = tmp_path / "sharded"
    s0 = anonymize_corpus(
        corpus, McAdams(), out_dir, shard="0/2", options=RunnerOptions(progress=False)
    )
    assert [u.id for u in s0] == IDS[0::2] and not (out_dir / "manifest.jsonl").exists()
    s1 = anonymize_corpus(
        corpus, McAdams(), out_dir, shard=(1, 2), options=RunnerOptions(progress=False)
    )
    assert [u.id for u in s1] == IDS[1::2]
    merged = load_corpus(out_dir)  # merged automatically once both shards were there
    assert [u.to_dict() | {"audio": None} for u in merged] == [
        u.to_dict() | {"audio": None} for u in full
    ]
    assert _bytes(merged) == _bytes(full)
    again = merge_shards(out_dir)
    assert (
        again.report["shards"] == 2 and again.report["finished"] == 6 and again.report["complete"]
    )
    with pytest.raises(DataError, match="0-based"):
        parse_shard("2/2")
    with pytest.raises(DataError, match="shards \\[1, 2\\] of 3"):
        anonymize_corpus(
            corpus,
            McAdams(),
            tmp_path / "three",
            shard="0/3",
            options=RunnerOptions(progress=False),
        )
        merge_shards(tmp_path / "three", 3)


@pytest.mark.slow("starts a local Ray cluster: about 8 s")
def test_ray_runner_gives_the_local_outputs(corpus, tmp_path):
    ray = pytest.importorskip("ray")
    local = anonymize_corpus(
        corpus,
        McAdams(random_per_speaker=(0.6, 0.9)),
        tmp_path / "local",
        options=RunnerOptions(progress=False),
    )
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = anonymize_corpus(
            corpus,
            McAdams(random_per_speaker=(0.6, 0.9)),
            tmp_path / "ray",
            options=RunnerOptions(runner="ray", batch_size=2, progress=False),
        )
    finally:
        if started:
            ray.shutdown()
    assert remote.report["runner"] == "ray" and remote.report["processed"] == 6
    assert [u.id for u in remote] == [u.id for u in local]
    assert [u.extra for u in remote] == [u.extra for u in local]
    assert _bytes(remote) == _bytes(local)


def _cli(*args):
    """sparc-eval anonymize with the old spellings (--param, --no-progress) of 0.3."""
    code = anonymize_cli.main(list(map(str, args)))
    if code == 2:
        raise DataError("see stderr")
    return code


def test_cli(corpus, tmp_path, capsys):
    src = Path(corpus.name).parent
    out_dir = tmp_path / "cli"
    assert (
        _cli(
            "--anonymizer",
            "mcadams",
            "--param",
            "alpha=0.7",
            "--input",
            src,
            "--out",
            out_dir,
            "--no-progress",
            "--shard",
            "1/2",
        )
        == 0
    )
    lines = dict(line.split(": ", 1) for line in capsys.readouterr().out.strip().splitlines())
    assert lines["processed"] == "3" and lines["manifest"].endswith("manifest.shard-1-of-2.jsonl")
    assert (
        json.loads((out_dir / "anonymization.shard-1-of-2.json").read_text())["settings"]["alpha"]
        == 0.7
    )
    assert (
        _cli(
            "--anonymizer",
            "mcadams",
            "--param",
            "alpha=0.7",
            "--input",
            src,
            "--out",
            out_dir,
            "--no-progress",
            "--shard",
            "0/2",
        )
        == 0
    )
    assert (
        capsys.readouterr().out.strip().splitlines()[-1]
        == f"manifest: {out_dir / 'manifest.jsonl'}"
    )
    assert len(load_corpus(out_dir)) == 6
    assert (
        anonymize_cli.main(["--anonymizer", "nope", "--input", str(src), "--out", str(out_dir)])
        == 2
    )
    assert "unknown anonymizer 'nope'" in capsys.readouterr().err
    assert anonymize_cli.parse_params(
        ["a=0.5", "r=[0.5, 0.9]", "tts_options.variant=f3", "s=x"]
    ) == {"a": 0.5, "r": [0.5, 0.9], "tts_options": {"variant": "f3"}, "s": "x"}


def test_recipe(corpus, tmp_path):
    out_dir = tmp_path / "recipe"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "recipes" / "anonymize.py"),
            str(REPO / "hparams" / "anon" / "mcadams.yaml"),
            f"--input={Path(corpus.name).parent}",
            f"--out={out_dir}",
            "--random_per_speaker=[0.5,0.9]",
            "--progress=False",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == f"manifest: {out_dir / 'manifest.jsonl'}"
    out = load_corpus(out_dir)
    assert len(out) == 6 and all(0.5 <= u.extra["mcadams_alpha"] <= 0.9 for u in out)
    assert (out_dir / "hyperparams.yaml").is_file()
    missing = subprocess.run(
        [
            sys.executable,
            str(REPO / "recipes" / "anonymize.py"),
            str(REPO / "hparams" / "anon" / "mcadams.yaml"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert missing.returncode == 2 and "'input' is a !PLACEHOLDER" in missing.stderr


def test_one_front_door_takes_the_old_spellings_with_a_message(corpus, tmp_path, caplog):
    """recipes/anonymize.py's 0.3 keys (input_folder, output_folder, compute_wer) and sparc-eval
    anonymize's dashed flags reach the same run, each with a message naming its new key."""
    src = Path(corpus.name).parent
    old = [
        "hparams/anon/identity.yaml",
        f"--input_folder={src}",
        f"--output_folder={tmp_path / 'old'}",
        "--compute_wer=False",
        "--batch-size",
        "2",
        "--skip-missing",
        "--num-workers=1",
        "--num-cpus=1",
        "--num-gpus=0",
        "--ray-address=none",
        "--wer-asr=faster-whisper",
        "--wer-param",
        "model=tiny.en",
    ]
    settings, _, _ = anonymize_cli.read_settings(old, "test")
    said = caplog.text
    caplog.clear()
    for was, now in anonymize_cli.RENAMED.items():
        if was not in ("param", "no-progress"):  # exercised by test_cli
            assert f"--{was} is now --{now if isinstance(now, str) else now[0]}" in said
    assert (settings.input, settings.out, settings.wer) == (str(src), str(tmp_path / "old"), False)
    assert (settings.run.batch_size, settings.skip_missing, settings.run.num_workers) == (
        2,
        True,
        1,
    )
    assert settings.wer_asr_options == {"model": "tiny.en"}
    new, _, _ = anonymize_cli.read_settings(
        [
            f"--input={src}",
            "--out",
            str(tmp_path / "new"),
            "--anonymizer=mcadams",
            "--anonymizer_options={alpha: 0.7, tts_options: {variant: f3}}",
            "--merge",
        ],
        "test",
    )
    assert new.anonymizer_options == {"alpha": 0.7, "tts_options": {"variant": "f3"}}
    assert new.merge is True and not caplog.records  # the new keys: no message
    with pytest.raises(DataError, match="unknown option"):
        anonymize_cli.read_settings(
            ["--anonymizer=identity", "--input=x", "--out=y", "--nope=1"], "t"
        )


def test_sparc_eval_cli_wiring(corpus, tmp_path, capsys):
    from sparc_eval import cli

    assert "anonymize" in cli.COMMANDS
    src = Path(corpus.name).parent
    assert (
        cli.main(
            [
                "anonymize",
                "--anonymizer",
                "identity",
                "--input",
                str(src),
                "--out",
                str(tmp_path / "o"),
                "--no-progress",
            ]
        )
        == 0
    )
    assert (
        capsys.readouterr().out.strip().splitlines()[-1]
        == f"manifest: {tmp_path / 'o' / 'manifest.jsonl'}"
    )
    assert (
        cli.main(
            ["anonymize", "--anonymizer", "nope", "--input", str(src), "--out", str(tmp_path / "o")]
        )
        == 2
    )
    assert "unknown anonymizer 'nope'" in capsys.readouterr().err


# --- the example anonymizer of docs/plugins/anonymizer.md, verbatim ----------------------------

from scipy.signal import resample_poly  # noqa: E402

from sparc_eval.anonymization.options import RunnerOptions


class PitchShift(Anonymizer):
    """Raise (or lower) the voice by resampling: pitch and formants move together."""

    name = "pitch_shift"
    keeps_words = True  # it says the input's words: phone and text attackers read the reference

    def __init__(self, semitones=3.0, random_per_speaker=None, seed=0):
        self.semitones, self.random_per_speaker, self.seed = semitones, random_per_speaker, seed

    @property
    def deterministic(self):  # a fixed shift: the attacker's copy would be the same audio
        return self.random_per_speaker is None

    def shift_for(self, speaker):
        if self.random_per_speaker is None:
            return self.semitones
        if speaker not in self.speaker_state:  # one draw per speaker, the same in every run
            low, high = self.random_per_speaker
            self.speaker_state[speaker] = float(self.speaker_rng(speaker).uniform(low, high))
        return self.speaker_state[speaker]

    def anonymize(self, wav, sr, utterance):
        shift = self.shift_for(utterance.speaker)
        utterance.extra["semitones"] = round(shift, 3)  # kept in the output manifest
        factor = 2 ** (shift / 12)
        # played at sr, audio resampled to sr / factor sounds factor higher (and shorter)
        return resample_poly(wav, 1000, int(round(1000 * factor))).astype(np.float32), sr


def test_readme_example_anonymizer(corpus, tmp_path):
    out = anonymize_corpus(
        corpus,
        PitchShift(random_per_speaker=(2, 5)),
        tmp_path / "ps",
        options=RunnerOptions(progress=False),
    )
    assert len(out) == 6
    for src, dst in zip(corpus, out):
        assert 2 <= dst.extra["semitones"] <= 5 and dst.extra["anonymizer"] == "pitch_shift"
        assert dst.extra["keeps_words"] is True
        assert dst.duration == pytest.approx(
            src.duration / 2 ** (dst.extra["semitones"] / 12), abs=0.01
        )
    assert PitchShift().settings() == {
        "class": f"{PitchShift.__module__}.PitchShift",
        "version": 1,
        "semitones": 3.0,
        "random_per_speaker": None,
        "seed": 0,
    }
    again = anonymize_corpus(
        corpus,
        PitchShift(random_per_speaker=(2, 5)),
        tmp_path / "ps",
        options=RunnerOptions(progress=False),
    )
    assert again.report["processed"] == 0


def test_a_corrupt_flac_in_a_librispeech_tree_is_a_listed_failure(tmp_path):
    """Loading for the anonymizer keeps a file whose header cannot be read (its utterance goes to
    failures.jsonl, the others are anonymized); loading for anything else still names it as an error."""
    chapter = tmp_path / "LibriSpeech" / "test-other" / "1" / "2"
    chapter.mkdir(parents=True)
    for i in range(3):
        sf.write(
            chapter / f"1-2-000{i}.flac",
            0.1 * np.sin(np.arange(8000) / 5.0).astype(np.float32),
            16000,
        )
    (chapter / "1-2-0001.flac").write_bytes(b"fLaC" + bytes(range(256)) * 4)
    (chapter / "1-2.trans.txt").write_text("1-2-0000 ONE\n1-2-0001 TWO\n1-2-0002 THREE\n")
    corpus = chapter.parents[1]
    with pytest.raises(DataError, match="'1-2-0001': cannot read audio"):
        load_corpus(corpus)
    with pytest.warns(UserWarning, match="1 audio file"):
        kept = load_corpus(corpus, keep_unreadable=True)
    out = anonymize_corpus(
        kept, Identity(), tmp_path / "out", options=RunnerOptions(progress=False)
    )
    failures = [
        json.loads(line) for line in (tmp_path / "out/failures.jsonl").read_text().splitlines()
    ]
    assert [f["id"] for f in failures] == ["1-2-0001"] and "cannot read audio" in failures[0][
        "reason"
    ]
    assert sorted(u.id for u in out) == ["1-2-0000", "1-2-0002"]
