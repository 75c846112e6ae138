"""The content-leakage paper's protocol rules for audio attackers, each on a fixture made here:
the words of anonymized speech, silence in recognizer phones, model sizes, bootstrap unit."""

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from sparc_eval.anonymization.options import RunnerOptions
from sparc_eval.data.manifest import AudioRef, Manifest, Utterance
from sparc_eval.data.words import mark_anonymized, reference_text_deviation, spoken_text
from sparc_eval.errors import DataError
from sparc_eval.metrics.settings import trial_settings
from sparc_eval.phones.features import PhoneFeatures
from sparc_eval.phones.phoneset import PHONE_INDEX

REPO = Path(__file__).resolve().parents[1]


def utt(uid="u1", text="speech is silver", **extra):
    return Utterance(id=uid, speaker="s1", text=text, extra=dict(extra))


# --- rule 1: the words anonymized speech says ------------------------------------------------


def test_spoken_text_follows_the_anonymizer():
    assert spoken_text(utt()) == "speech is silver"  # original speech: its reference
    stt_tts = utt(anonymizer="stt_tts", keeps_words=False, asr_text="speech is silva")
    assert spoken_text(stt_tts) == "speech is silva"  # its own transcript, not the reference
    mcadams = utt(anonymizer="mcadams", keeps_words=True)
    assert spoken_text(mcadams) == "speech is silver"
    with pytest.raises(DataError, match="u1.*'mystery'.*keeps_words"):
        spoken_text(utt(anonymizer="mystery"))  # never assumed to keep the words
    # the reference only by name, and then it is a deviation that results record
    assert spoken_text(stt_tts, "reference") == "speech is silver"
    assert "reference_text_of_anonymized_speech" in reference_text_deviation([stt_tts], "reference")
    assert (
        reference_text_deviation([stt_tts], "spoken") == {}
        and reference_text_deviation([mcadams], "reference") == {}
    )
    with pytest.raises(DataError, match="asr_text"):
        spoken_text(mcadams, "asr")


def test_corpus_anonymized_by_another_tool_is_marked_and_declared():
    plain = Manifest([utt()], name="vpc_anon")
    with pytest.raises(DataError, match="anon_keeps_words"):
        spoken_text(mark_anonymized(plain)[0])
    kept = mark_anonymized(plain, name="vc", keeps_words=True)[0]
    assert (
        kept.extra == {"anonymizer": "vc", "keeps_words": True}
        and spoken_text(kept) == "speech is silver"
    )


def test_phone_features_of_stt_tts_output_are_its_transcripts_phones(tmp_path):
    stt_tts = utt(anonymizer="stt_tts", keeps_words=False, asr_text="yes")
    features = PhoneFeatures(cache_dir=tmp_path)  # the defaults
    assert features.phones(stt_tts) == ["Y", "EH", "S"]
    assert PhoneFeatures(cache_dir=tmp_path, text="reference").phones(stt_tts)[:3] == [
        "S",
        "P",
        "IY",
    ]


class TextRecorder:
    """A forced 'aligner' that records the transcript it is given and returns one phone per word."""

    needs_text = True
    seen = []

    def recognize(self, wav, sr, text=None):
        TextRecorder.seen.append(text)
        n = len(text.split())
        return [("AH", i / n, (i + 1) / n) for i in range(n)] + [("SIL", 1.0, 1.2)]


def test_alignment_of_anonymized_audio_uses_the_words_it_says(tmp_path):
    wav = tmp_path / "a.wav"
    sf.write(wav, np.zeros(19200, np.float32), 16000)
    anon = Utterance(
        id="a1",
        speaker="s1",
        text="one two three",
        audio=AudioRef(str(wav)),
        extra={"anonymizer": "stt_tts", "keeps_words": False, "asr_text": "one to"},
    )
    TextRecorder.seen.clear()
    features = PhoneFeatures(
        source="audio",
        recognizer="test_protocol_audio.TextRecorder",
        silence=True,
        cache_dir=tmp_path / "cache",
    )
    matrix = features(anon)
    assert TextRecorder.seen == ["one to"]
    # rule 2: a recognizer's silence stays a phone: 2 words + SIL, 40 columns
    assert matrix.shape == (3, 40) and matrix[2, PHONE_INDEX["SIL"]] == 1.0


def test_anonymizer_declaration_reaches_the_output_manifest(tmp_path):
    from anonymizers.base import Anonymizer
    from anonymizers.mcadams import McAdams
    from anonymizers.stt_tts import SttTts
    from sparc_eval.anonymization.runner import anonymize_corpus

    assert (
        McAdams.keeps_words is True
        and SttTts.keeps_words is False
        and Anonymizer.keeps_words is None
    )

    class Quiet(Anonymizer):
        keeps_words = True

        def anonymize(self, wav, sr, utterance):
            return wav * 0.5, sr

    wav = tmp_path / "in.wav"
    sf.write(wav, 0.1 * np.sin(np.arange(8000) / 5).astype(np.float32), 16000)
    corpus = Manifest(
        [Utterance(id="x1", speaker="s1", text="hello", audio=AudioRef(str(wav)))],
        name="in",
        read_passages=True,
    )
    out = anonymize_corpus(corpus, Quiet(), tmp_path / "out", options=RunnerOptions(progress=False))
    record = json.loads((tmp_path / "out/manifest.jsonl").read_text().splitlines()[0])
    assert record["extra"]["keeps_words"] is True and spoken_text(out[0]) == "hello"
    # the input loader's mark (EdAcc's read passages) survives anonymization and reloading
    from sparc_eval.data.corpora import load_corpus

    assert out.read_passages and load_corpus(tmp_path / "out").read_passages


# --- rules 2 and 3: silence columns and model sizes, through the recipe's hparams loading ----------


@pytest.fixture(scope="module")
def demo_dir(demo_reading_corpus):
    return Path(demo_reading_corpus.name).parent


def _prepare(demo_dir, tmp_path, hparams="phones.yaml", **overrides):
    from sparc_eval.attack import load_attack as prepare

    base = {
        "data_folder": str(demo_dir),
        "output_folder": str(tmp_path / "out"),
        "cache_folder": str(tmp_path),
    }
    return prepare(REPO / "hparams" / hparams, {**base, **overrides})[0]


def test_recognizer_phones_keep_silence_transcript_phones_have_none(demo_dir, tmp_path):
    assert _prepare(demo_dir, tmp_path)["input_size"] == 39
    assert _prepare(demo_dir, tmp_path, phone_source="audio")["input_size"] == 40
    assert _prepare(demo_dir, tmp_path, phone_source="audio", silence=False)["input_size"] == 39


def test_model_size_presets(demo_dir, tmp_path):
    from attackers.model_size import size_deviation

    cpu = _prepare(demo_dir, tmp_path)
    assert cpu["model_size"] == "cpu" and cpu["attention_channels"] == 64
    assert "model_size_cpu" in size_deviation(cpu)
    spane = _prepare(demo_dir, tmp_path, model_size="spane")
    assert (
        spane["channels"] == [1024, 1024, 1024, 1024, 3072] and spane["attention_channels"] == 128
    )
    block = spane["embedding_model"].blocks[0].conv.conv
    assert block.out_channels == 1024 and size_deviation(spane) == {}
    asp = spane["embedding_model"].asp.tdnn.conv.conv
    assert asp.out_channels == 128  # SpeechBrain's attention_channels, no longer hard-coded to 64
    vpc = _prepare(demo_dir, tmp_path, "mel.yaml", model_size="vpc2024")
    assert vpc["channels"] == [512, 512, 512, 512, 1536] and "model_size_vpc2024" in size_deviation(
        vpc
    )
    # sizes by hand make the size custom; sizes that contradict a named size are refused
    assert _prepare(demo_dir, tmp_path, channels=[32, 32, 32, 32, 96])["model_size"] == "custom"
    with pytest.raises(DataError, match="contradicts model_size: spane"):
        _prepare(demo_dir, tmp_path, model_size="spane", channels=[32, 32, 32, 32, 96])


# --- rule 1 end to end, with rule 10 and the provenance record -------------------------------------

TINY = [
    "--channels=[32,32,32,32,96]",
    "--emb_dim=32",
    "--number_of_epochs=4",
    "--batch_size=16",
    "--n_boot=50",
    "--progress=False",
    "--plots=False",
]


def _train(capsys, *args):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "train_attacker", REPO / "recipes/train_attacker.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    code = module.main([str(REPO / "hparams/phones.yaml"), *map(str, args)])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(Path(out.out.strip().splitlines()[-1]).read_text())


@pytest.mark.slow("STT-TTS anonymizes the demo split and trains ECAPA: about 12 s")
def test_stt_tts_trials_are_scored_on_the_words_they_say(
    demo_reading_corpus, demo_dir, tmp_path, capsys
):
    """An 'STT-TTS' that says the same random common words for everybody: by default its trials
    are near chance; read as their reference transcripts (by name) they leak, and say so."""
    words = "the a of to and in that it was for on are with as his they be at one have this from or".split()
    rng = np.random.default_rng(0)
    anon = Manifest(
        [
            Utterance(
                **{
                    **vars(u),
                    "extra": {
                        **u.extra,
                        "anonymizer": "stt_tts",
                        "keeps_words": False,
                        "asr_text": " ".join(rng.choice(words, 12)),
                    },
                }
            )
            for u in demo_reading_corpus
        ],
        name="anon",
    )
    (tmp_path / "anon").mkdir()
    anon.write_jsonl(tmp_path / "anon/manifest.jsonl")
    common = [
        f"--data_folder={demo_dir}",
        f"--cache_folder={tmp_path / 'cache'}",
        "--scenario=lazy-informed",
        f"--anon_eval_folder={tmp_path / 'anon'}",
        *TINY,
    ]
    spoken = _train(capsys, *common, f"--output_folder={tmp_path / 'spoken'}")
    forced = _train(
        capsys, *common, f"--output_folder={tmp_path / 'forced'}", "--phone_text=reference"
    )
    assert spoken["run"]["phone_text"] == "spoken" and spoken["overall"]["eer"] >= 0.4
    assert "reference_text_of_anonymized_speech" not in spoken["run"]["deviations"]
    assert forced["overall"]["eer"] < spoken["overall"]["eer"] - 0.05
    assert "reference_text_of_anonymized_speech" in forced["run"]["deviations"]
    assert "reference transcripts" in (tmp_path / "forced/report.md").read_text()
    # rule 10 and provenance: speaker-level CIs by default, what the number depends on
    run = spoken["run"]
    assert (
        run["bootstrap_unit"] == "two_way" and "model_size_cpu" not in run["deviations"]
    )  # custom sizes here
    assert "model_size_custom" in run["deviations"]
    env = run["environment"]
    assert env["packages"]["torch"] and env["torch_threads"] >= 1 and env["machine"]
    assert (
        "resamples of the speakers on both sides of the trials"
        in (tmp_path / "spoken/report.md").read_text()
    )


def test_recipe_segments_list_accents_in_no_segment():
    """Figure 3's rule in every evaluation: labels that name no accent form no segment and are
    listed; the fine grouping keeps each self-reported accent."""
    from sparc_eval.metrics import evaluate_trials

    speakers = {
        f"s{i}": {"accent": a}
        for i, a in enumerate(["Irish accent", "irish", "Irish English", "Fluent", "Spanish", None])
    }
    rng = np.random.default_rng(0)
    enroll, test, scores, labels, utt2spk = [], [], [], [], {}
    for s in speakers:
        for k in range(4):
            utt2spk[f"{s}_{k}"] = s
            for e in speakers:
                enroll.append(e), test.append(f"{s}_{k}"), labels.append(e == s)
                scores.append(rng.normal(1.0 if e == s else 0.0))
    coarse = evaluate_trials(
        enroll,
        test,
        scores,
        labels,
        utt2spk=utt2spk,
        speakers=speakers,
        settings=trial_settings(n_boot=0),
    )
    fine = evaluate_trials(
        enroll,
        test,
        scores,
        labels,
        utt2spk=utt2spk,
        speakers=speakers,
        settings=trial_settings(n_boot=0, accent_grouping="fine"),
    )
    assert set(coarse["segments"]["accent_group"]) == {"Irish"}
    assert set(fine["segments"]["accent_group"]) == {"irish"}
    for result in (coarse, fine):
        assert (
            "says nothing about the accent"
            in result["not_applicable"]["segments.accent_left_out.Fluent"]
        )
        assert "no accent given" in result["not_applicable"]["segments.accent_left_out.(missing)"]


def test_run_folders_from_before_the_new_keys_still_resume(demo_dir, tmp_path):
    """A checkpoint folder written before model_size, attention_channels and silence: auto existed
    resumes when the model is the same, and is refused when it is not."""
    from attackers.resume import check_resume, fingerprint_of

    hp = _prepare(demo_dir, tmp_path)
    new = fingerprint_of(hp)
    old = {
        k: v
        for k, v in new.items()
        if k not in ("model_size", "attention_channels", "anon_keeps_words")
    }
    assert (
        new["silence"] is False and "phone_text" not in new
    )  # resolved; eval-only outside semi-informed
    (tmp_path / "out/save/CKPT+1").mkdir(parents=True)
    (tmp_path / "out/run_fingerprint.json").write_text(json.dumps(old))
    check_resume(tmp_path / "out", tmp_path / "out/save", new)
    bigger = fingerprint_of(_prepare(demo_dir, tmp_path, model_size="vpc2024"))
    with pytest.raises(DataError, match="attention_channels: 64 -> 128"):
        check_resume(tmp_path / "out", tmp_path / "out/save", bigger)


def test_fingerprints_from_before_silence_auto_and_eval_only_phone_text_resume(demo_dir, tmp_path):
    """A folder whose fingerprint stored ``silence: auto`` and ``phone_text`` (written before the
    first was resolved and the second became evaluation-only) resumes with the same model."""
    from attackers.resume import check_resume, fingerprint_of

    hp = _prepare(demo_dir, tmp_path)
    new = fingerprint_of(hp)
    old = {**new, "silence": "auto", "phone_text": "spoken"}
    (tmp_path / "out/save/CKPT+1").mkdir(parents=True)
    (tmp_path / "out/run_fingerprint.json").write_text(json.dumps(old))
    check_resume(tmp_path / "out", tmp_path / "out/save", new)
    (tmp_path / "out/run_fingerprint.json").write_text(json.dumps({**old, "silence": True}))
    with pytest.raises(DataError, match="silence: True -> False"):
        check_resume(tmp_path / "out", tmp_path / "out/save", new)
