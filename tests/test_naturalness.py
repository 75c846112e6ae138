"""Naturalness (issue 63): predicted MOS of original and anonymized speech, paired, cached by audio
and model; the predictors rank white-noise copies of real speech below the original, in order."""

import dataclasses
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from anonymizers.white_noise import WhiteNoise  # noqa: E402
from sparc_eval.data.manifest import AudioRef, Manifest, Utterance  # noqa: E402
from sparc_eval.errors import DataError  # noqa: E402
from sparc_eval.jobs.card.settings import anonymizer_specs, utility_metrics  # noqa: E402
from sparc_eval.speech.audio import read_utterance  # noqa: E402
from sparc_eval.utility.metrics import UtilityInput  # noqa: E402
from sparc_eval.utility.naturalness import (  # noqa: E402
    DNSMOS,
    DistillMOS,
    PredictedMOS,
    paired_means,
)

DATA = Path(os.environ.get("SPARC_EVAL_DATA", REPO.parent / "shared" / "data"))
SAMPLES = DATA / "librispeech_samples"


# --- the paired summary --------------------------------------------------------------------------


def test_paired_means_on_a_hand_made_case():
    """Two speakers: a resample holds A twice, A and B, or B twice, so every CI bound is one of
    the three means those give; the difference is paired per utterance."""
    original = [4.0, 4.0, 3.0, 3.0]
    anonymized = [3.0, 3.5, 1.0, 2.0]  # differences -1, -0.5 (speaker a), -2, -1 (speaker b)
    found = paired_means(original, anonymized, ["a", "a", "b", "b"], n_boot=2000, seed=0)
    assert found["original"]["value"] == 3.5
    assert found["anonymized"]["value"] == 2.375
    assert found["diff"]["value"] == pytest.approx(-1.125)
    # a resample of (b, b) gives -1.5, of (a, a) -0.75: the 2.5% and 97.5% points (each has 25%)
    assert found["diff"]["ci95"] == pytest.approx([-1.5, -0.75])
    assert found["original"]["ci95"] == pytest.approx([3.0, 4.0])
    assert (found["utterances"], found["speakers"]) == (4, 2)


class Loudness(PredictedMOS):
    """A stand-in predictor: 1 + 4 x the peak (two outputs), counted, for the metric's plumbing."""

    name = "loudness"
    outputs = ("peak", "rms")
    model = "a peak meter"

    def model_files(self):
        return []

    def settings(self):
        return {}

    def predict_one(self, wav):
        return [1 + 4 * float(np.max(np.abs(wav))), float(np.sqrt(np.mean(wav**2)))]


def _tone(path: Path, amplitude: float, seconds: float = 0.5) -> AudioRef:
    t = np.arange(int(16000 * seconds)) / 16000
    sf.write(path, (amplitude * np.sin(2 * np.pi * 220 * t)).astype(np.float32), 16000)
    return AudioRef(str(path))


def _pair(tmp_path: Path, levels: dict, scale: float) -> UtilityInput:
    """Speakers f1, f2 (F) and m1 (M), two utterances each; the anonymized side scaled."""
    original, anonymized = [], []
    for speaker, (sex, amplitudes) in levels.items():
        for k, amp in enumerate(amplitudes):
            uid = f"{speaker}-{k}"
            o = Utterance(uid, speaker, "a b", sex=sex, audio=_tone(tmp_path / f"{uid}.wav", amp))
            a_path = tmp_path / f"{uid}_anon.wav"
            original.append(o)
            anonymized.append(dataclasses.replace(o, audio=_tone(a_path, amp * scale)))
    return UtilityInput(
        "half", Manifest(original), Manifest(anonymized), cache_folder=str(tmp_path / "cache")
    )


LEVELS = {"f1": ("F", [0.5, 0.6]), "f2": ("F", [0.45, 0.55]), "m1": ("M", [0.75, 0.85])}


def test_compute_gives_both_sides_the_paired_difference_per_list_and_caches(tmp_path):
    pair = _pair(tmp_path, LEVELS, scale=0.5)
    metric = Loudness()
    found = metric.compute(pair)
    peaks = np.array([a for _, amps in LEVELS.values() for a in amps])
    assert found["original"]["value"] == pytest.approx(np.mean(1 + 4 * peaks), abs=1e-3)
    assert found["diff"]["value"] == pytest.approx(-2 * np.mean(peaks), abs=1e-3)
    assert found["diff"]["ci95"][1] < 0
    assert set(found["per_list"]) == {"trials_f", "trials_m"}
    assert found["per_list"]["trials_m"]["utterances"] == 2
    assert set(found["outputs"]) == {"peak", "rms"}
    assert found["higher_is_better"] and "not a listening test" in found["measure"]
    assert found["predicted_now"] == 12
    again = metric.compute(pair)  # every prediction read back from the cache
    assert again["predicted_now"] == 0 and again["diff"] == found["diff"]


def test_compare_is_paired_on_the_trial_utterances_both_scored(tmp_path):
    metric = Loudness()
    half = _pair(tmp_path, LEVELS, scale=0.5)
    (tmp_path / "quieter").mkdir()
    quieter = _pair(tmp_path / "quieter", LEVELS, scale=0.25)
    a, b = metric.compute(half), metric.compute(quieter)
    found = metric.compare(a, b, half, quieter)
    peaks = np.array([x for _, amps in LEVELS.values() for x in amps])
    assert found["diff"] == pytest.approx(-np.mean(peaks), abs=1e-3)  # 4 x (0.25 - 0.5) x peak
    assert found["ci95"][1] < 0 and found["n_utterances"] == 6


def test_failed_and_shared_audio(tmp_path):
    """A trial utterance the anonymizer failed on is counted, not scored; two utterances with the
    same audio bytes are scored once and both get the score."""
    pair = _pair(tmp_path, LEVELS, 0.5)
    twin = dataclasses.replace(pair.original.by_id()["f1-0"], id="f1-9")  # f1-0's very file
    twin_anon = dataclasses.replace(pair.anonymized.by_id()["f1-0"], id="f1-9")
    failed = Utterance("m1-7", "m1", "a b", sex="M", audio=pair.original.by_id()["m1-0"].audio)
    pair = dataclasses.replace(
        pair,
        original=Manifest([*pair.original, twin]),
        anonymized=Manifest([*pair.anonymized, twin_anon]),
        failed=Manifest([failed]),
    )
    found = Loudness().compute(pair)
    assert found["failed_left_out"] == 1 and found["utterances"] == 7
    assert found["predicted_now"] == 12  # 14 sides, 12 distinct files
    assert found["per_utterance"]["f1-9"] == found["per_utterance"]["f1-0"]
    not_a_trial = dataclasses.replace(pair, trial_ids=frozenset({"f1-0"}))
    assert Loudness().compute(not_a_trial)["failed_left_out"] == 0


@pytest.mark.slow("loads onnxruntime, librosa and both DNSMOS models: about 3.5 s")
def test_dnsmos_scores_audio_louder_than_full_scale():
    """Resampled or float audio can exceed [-1, 1], which speechmos refuses: it is clipped."""
    wav = np.full(int(16000 * 4.6), 1.5, np.float32)  # 4.6 s: doubled once to 9.01 s, one window
    wav[::2] = -1.5
    scores = DNSMOS().predict_one(wav)
    assert len(scores) == 4 and all(1.0 <= s <= 5.0 for s in scores)


def test_a_missing_package_fails_when_the_card_is_set_up(monkeypatch):
    import sparc_eval.utility.naturalness as naturalness

    real = naturalness.package_folder
    monkeypatch.setattr(
        naturalness, "package_folder", lambda m: None if m == "xls_r_sqa" else real(m)
    )
    with pytest.raises(DataError, match="needs xls_r_sqa, which is not installed"):
        DistillMOS()
    monkeypatch.undo()
    with pytest.raises(DataError, match="no weights file"):
        DistillMOS(weights="/nowhere.pt")


def test_only_trial_utterances_are_scored(tmp_path):
    pair = dataclasses.replace(_pair(tmp_path, LEVELS, 0.5), trial_ids=frozenset({"f1-0", "m1-1"}))
    found = Loudness().compute(pair)
    assert found["utterances"] == 2 and found["predicted_now"] == 4
    none = dataclasses.replace(pair, trial_ids=frozenset())
    assert "not_applicable" in Loudness().compute(none)


# --- the cache key follows the model's bytes -----------------------------------------------------


def test_the_cache_key_changes_with_the_model_file(tmp_path):
    import torch

    weights = tmp_path / "distill.pt"
    state = torch.load(DistillMOS().model_files()[0], map_location="cpu", weights_only=True)
    torch.save(state, weights)
    pair = _pair(tmp_path, {"f1": ("F", [0.5])}, scale=0.5)
    first = DistillMOS(weights=weights)
    found = first.compute(pair)
    assert (
        found["predicted_now"] == 2
        and DistillMOS(weights=weights).compute(pair)["predicted_now"] == 0
    )
    assert found["predictor"]["model"] == "DistillMOS" and found["predictor"]["package"] == "0.9.1"
    key = first.cache(pair.cache_folder).dir
    name = next(k for k, v in state["model"].items() if v.dtype.is_floating_point and v.ndim == 1)
    state["model"][name] = state["model"][name] + 0.5  # another model under the same file name
    torch.save(state, weights)
    changed = DistillMOS(weights=weights)
    assert changed.cache(pair.cache_folder).dir != key
    assert changed.compute(pair)["predicted_now"] == 2  # predicted again, never read stale
    # DNSMOS: the personalized model is another file, so another key
    assert (
        DNSMOS().cache(pair.cache_folder).dir
        != DNSMOS(personalized=True).cache(pair.cache_folder).dir
    )


# --- one switch, and registered names ------------------------------------------------------------


def test_naturalness_is_off_by_default_and_on_with_one_switch():
    base = {"utility": {"wer": {"kind": "wer"}}, "utility_enabled": None}
    assert list(utility_metrics(base)) == ["wer"]
    on = utility_metrics({**base, "naturalness": True})
    assert list(on) == ["wer", "dnsmos", "distillmos"]
    assert isinstance(on["dnsmos"], DNSMOS) and isinstance(on["distillmos"], DistillMOS)
    # any registered metric by its name, with its default options
    assert list(utility_metrics({**base, "utility_enabled": ["distillmos"]})) == ["distillmos"]
    with pytest.raises(DataError, match="neither in utility"):
        utility_metrics({**base, "utility_enabled": ["nisqa"]})


def test_one_anonymizer_under_several_names():
    specs = anonymizer_specs(
        {
            "anonymizer": [
                "mcadams",
                {"noise_20db": {"kind": "white_noise", "snr_db": 20}},
                {"noise_5db": {"kind": "white_noise", "snr_db": 5}},
            ],
            "anonymizer_options": {"noise_5db": {"seed": 3}},
        }
    )
    assert [(s.name, s.anonymizer, s.options) for s in specs] == [
        ("mcadams", "mcadams", {}),
        ("noise_20db", "white_noise", {"snr_db": 20}),
        ("noise_5db", "white_noise", {"snr_db": 5, "seed": 3}),
    ]
    with pytest.raises(DataError, match="is not"):
        anonymizer_specs({"anonymizer": [{"noise": {"snr_db": 20}}]})
    with pytest.raises(DataError, match="listed twice"):
        anonymizer_specs({"anonymizer": [{"mcadams": "white_noise"}, "mcadams"]})
    with pytest.raises(DataError, match="cannot name a folder"):
        anonymizer_specs({"anonymizer": [{"../up": "white_noise"}]})


def test_white_noise_has_the_snr_it_names_and_the_same_draw_per_utterance():
    rng = np.random.default_rng(0)
    wav = (0.1 * rng.standard_normal(32000)).astype(np.float32)
    utt = Utterance("u1", "s", "a")
    for snr in (20.0, 10.0, 5.0):
        noisy, _ = WhiteNoise(snr).anonymize(wav, 16000, utt)
        noise = noisy.astype(np.float64) - wav
        measured = 10 * np.log10(np.mean(wav.astype(np.float64) ** 2) / np.mean(noise**2))
        assert measured == pytest.approx(snr, abs=0.1)
    first, _ = WhiteNoise(10).anonymize(wav, 16000, utt)
    second, _ = WhiteNoise(10).anonymize(wav, 16000, utt)
    other, _ = WhiteNoise(10).anonymize(wav, 16000, Utterance("u2", "s", "a"))
    assert np.array_equal(first, second) and not np.array_equal(first, other)
    assert WhiteNoise(10).name == "noise_10db"


# --- the card's lines ----------------------------------------------------------------------------


def test_the_card_lines_name_both_sides_and_what_a_predicted_mos_is_not():
    from sparc_eval.jobs.card.utility_report import utility_section

    side = {"value": 3.0, "ci95": [2.8, 3.2]}
    result = {
        "value": 2.0,
        "ci95": [1.8, 2.2],
        "original": side,
        "anonymized": {"value": 2.0, "ci95": [1.8, 2.2]},
        "diff": {"value": -1.0, "ci95": [-1.2, -0.8]},
        "per_list": {
            "trials_f": {"diff": {"value": -0.9, "ci95": None}},
            "trials_m": {"diff": side},
        },
        "utterances": 40,
        "speakers": 10,
        "predictor": {"model": "DistillMOS"},
        "measure": "predicted MOS (DistillMOS), not a listening test",
        "higher_is_better": True,
    }
    doc = {"utility": {"mcadams": {"distillmos": result}}, "run": {"synthetic_speech": True}}
    text = "\n".join(utility_section(doc))
    assert "| mcadams | 2.000 [1.800, 2.200] |" in text
    assert (
        "original 3.00 [2.80, 3.20] -> anonymized 2.00 [1.80, 2.20], difference -1.00 [-1.20, -0.80]"
        in text
    )
    assert "trials_f -0.90, trials_m 3.00 [2.80, 3.20]" in text
    assert "neither predictor was validated on the output of speaker anonymizers" in text
    assert "smoke test" in text
    doc["run"]["synthetic_speech"] = False
    assert "smoke test" not in "\n".join(utility_section(doc))


# --- real speech ---------------------------------------------------------------------------------


def _cheap_samples(per_speaker: int) -> Manifest:
    """``per_speaker`` LibriSpeech samples per speaker that cost DNSMOS the fewest 9 s windows (a
    clip is doubled until it is 9.01 s long, then read every second)."""
    from sparc_eval.data.corpora import load_kaldi_dir

    def windows(seconds):
        while seconds < 9.01:
            seconds *= 2
        return int(seconds - 9.01) + 1

    by_speaker = {}
    for utt in load_kaldi_dir(str(SAMPLES)):
        by_speaker.setdefault(utt.speaker, []).append(utt)
    return Manifest(
        [
            u
            for _, utts in sorted(by_speaker.items())
            for u in sorted(utts, key=lambda u: (windows(u.duration), u.duration))[:per_speaker]
        ]
    )


def _noisy(original: Manifest, snr_db: float, folder: Path) -> Manifest:
    folder.mkdir(parents=True, exist_ok=True)
    out, noise = [], WhiteNoise(snr_db)
    for utt in original:
        wav, sr = read_utterance(utt)
        noisy, _ = noise.anonymize(wav, sr, utt)
        sf.write(folder / f"{utt.id}.wav", noisy, sr)
        out.append(dataclasses.replace(utt, audio=AudioRef(str(folder / f"{utt.id}.wav"))))
    return Manifest(out)


@pytest.mark.slow("both predictors on 20 LibriSpeech files at four noise levels: about 35 s")
@pytest.mark.skipif(not SAMPLES.is_dir(), reason="needs $SPARC_EVAL_DATA/librispeech_samples")
def test_both_predictors_rank_white_noise_copies_below_the_original_in_order(tmp_path):
    original = _cheap_samples(per_speaker=2)
    sides = {snr: _noisy(original, snr, tmp_path / f"{snr}db") for snr in (20, 10, 5)}
    for metric in (DNSMOS(), DistillMOS()):
        pairs = {
            snr: UtilityInput("noise", original, m, cache_folder=str(tmp_path))
            for snr, m in sides.items()
        }
        found = {snr: metric.compute(p) for snr, p in pairs.items()}
        assert found[20]["diff"]["ci95"][1] < 0, (
            metric.name,
            found[20]["diff"],
        )  # original -> 20 dB
        for louder, quieter in ((20, 10), (10, 5)):
            step = metric.compare(found[louder], found[quieter], pairs[louder], pairs[quieter])
            assert step["ci95"][1] < 0, (metric.name, louder, quieter, step)
        means = [found[20]["original"]["value"]] + [found[s]["value"] for s in (20, 10, 5)]
        assert means == sorted(means, reverse=True), (metric.name, means)
        assert all(found[s]["utterances"] == 20 for s in sides)


@pytest.mark.slow("a card on the 12-speaker demo with DistillMOS on two anonymizers: about 20 s")
def test_the_card_gives_naturalness_for_each_anonymizer(recipe, tiny_demo, tmp_path):
    out = tmp_path / "card"
    args = [
        str(REPO / "hparams" / "evaluate.yaml"),
        "--anonymizer=[mcadams,{noise_10db: {kind: white_noise, snr_db: 10}}]",
        f"--data_folder={tiny_demo}",
        f"--output_folder={out}",
        f"--cache_folder={out / 'cache'}",
        "--n_enroll=2",
        "--attackers_enabled=[resemblyzer]",
        "--content_attacker=null",
        "--scenarios=[ignorant]",
        "--utility_enabled=[distillmos]",
        "--progress=False",
        "--plots=False",
        "--n_boot=100",
    ]
    assert recipe("evaluate_anonymizer").main(args) == 0
    doc = json.loads((out / "results.json").read_text())
    for name in ("mcadams", "noise_10db"):
        found = doc["utility"][name]["distillmos"]
        assert found["original"]["ci95"] and found["diff"]["ci95"] and "per_utterance" not in found
    assert doc["run"]["synthetic_speech"] is True
    compared = doc["comparisons"][0]["utility"]["distillmos"]
    assert "diff" in compared and compared["ci95"]
    card = (out / "card.md").read_text()
    assert "noise_10db: distillmos (DistillMOS): original" in card and "smoke test" in card


def test_the_demo_corpus_is_known_as_synthetic(tmp_path):
    from sparc_eval.demo import is_demo_corpus

    assert is_demo_corpus("demo:reading") and not is_demo_corpus(str(SAMPLES))
    assert not is_demo_corpus("") and not is_demo_corpus(None)
    (tmp_path / "settings.json").write_text(json.dumps({"corpus": "sparc-eval demo"}))
    assert is_demo_corpus(tmp_path) and is_demo_corpus(tmp_path / "manifest.jsonl")
    (tmp_path / "settings.json").write_text("{not json")
    assert not is_demo_corpus(tmp_path)
