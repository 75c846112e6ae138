"""German, French and Spanish speech end to end: espeak-ng phones, the per-language demo corpora,
STT-TTS in the corpus's language, and VoicePrivacy 2026's multilingual track as a preset
(hparams/vpc2026_track2.yaml) on a synthetic track-2 tree with the challenge's folder names,
relative wav.scp paths and mixed lists."""

import json
from dataclasses import replace
from pathlib import Path

import pytest
from vpc_fixtures import build_track2_tree

from sparc_eval.errors import DataError

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def language_corpora(tmp_path_factory):
    from sparc_eval.demo.corpus import build_demo_corpus

    return {
        code: build_demo_corpus(
            tmp_path_factory.mktemp(f"demo_{code}"),
            mode=code,
            n_speakers=9,  # three speakers for each of training, dev and test
            utts_per_speaker=6,
            progress=False,
        )
        for code in ("de", "fr")
    }


@pytest.fixture(scope="module")
def track2(language_corpora, tmp_path_factory):
    """(the challenge root's data folder, {list: (targets, non-targets)} as the builder wrote)."""
    root = tmp_path_factory.mktemp("track2")
    written = build_track2_tree(language_corpora, root, suffix="_identity", anonymize=None)
    return root / "data", written


def test_espeak_phones_are_the_tables_phonemes_without_stress():
    """One phone per espeak phoneme: stress marks dropped, length part of the name, pauses gone;
    every phone is in the language's inventory, which is sorted and fixed."""
    from sparc_eval.phones.espeak_phones import EspeakPhonemizer, inventory

    german = EspeakPhonemizer("de")
    assert german.words("Schön ist das Wetter.") == [
        ["S", "Y:", "n"],
        ["I", "s", "t"],
        ["d", "a", "s"],
        ["v", "E", "t", "3"],
    ]
    for code, text in (("fr", "L'homme est là-bas."), ("es", "El niño come una manzana.")):
        phones = inventory(code)
        assert list(phones) == sorted(set(phones)) and len(phones) > 40
        words = EspeakPhonemizer(code).words(text)
        assert words and all(p in phones for w in words for p in w)
    assert "n^" in inventory("es") and "n^" in EspeakPhonemizer("es").words("niño")[0]
    with pytest.raises(DataError, match="espeak-ng phonemization does not serve English"):
        EspeakPhonemizer("en")


def test_language_demo_corpus_has_mls_ids_books_and_its_language(language_corpora):
    german = language_corpora["de"]
    assert german.language == "de" and len(german) == 54
    for u in german:
        speaker, book, _ = u.id.split("_")
        assert speaker == u.speaker and book == u.episode
    books = {u.speaker: {v.episode for v in german if v.speaker == u.speaker} for u in german}
    assert all(len(b) == 2 for b in books.values())  # one book, and two sentences of the next


def test_phone_features_of_german_use_its_inventory(language_corpora):
    from attackers.features import FeatureSettings
    from sparc_eval.phones.features import PhoneFeatures
    from sparc_eval.phones.phoneset import inventory

    utt = next(iter(language_corpora["de"]))
    matrix = PhoneFeatures(use_cache=False)(utt)
    assert matrix.shape == (len(PhoneFeatures(use_cache=False).phones(utt)), len(inventory("de")))
    assert FeatureSettings("phones").input_size_for("de") == len(inventory("de"))
    assert FeatureSettings("phones").input_size_for(None) == 39  # English: the paper's CMU phones
    assert FeatureSettings("phone_durations").languages == ("en",)  # no aligner beyond English


def test_phone_distinctiveness_of_german_counts_its_phones(language_corpora):
    from sparc_eval.phones.distinct import speaker_distinctiveness
    from sparc_eval.phones.features import PhoneFeatures

    german = language_corpora["de"]
    features = PhoneFeatures(use_cache=False)
    table = speaker_distinctiveness(german, features)
    for speaker, row in table.items():
        said = [p for u in german if u.speaker == speaker for p in features.phones(u)]
        assert row["n_phones"] == len(said) > 0  # every espeak phone counted, none as English


def test_books_come_from_mls_ids_only():
    from sparc_eval.data.manifest import Manifest, Utterance
    from sparc_eval.data.vpc import Books

    libri = Manifest([Utterance("1272-128104-0000", "1272", "a", episode="1272-128104")])
    assert Books.of(libri, {"1272": ["1272-128104-0000"]}) is None
    mls = Manifest([Utterance("10087_10388_000000", "10087", "a")])
    books = Books.of(mls, {"10087": ["10087_10388_000000"]})
    assert books.utterance == {"10087_10388_000000": "10388"}
    assert books.speaker == {"10087": frozenset({"10388"})}


def test_wer_on_another_language_keeps_a_model_named_in_its_options():
    from sparc_eval.utility.metrics import WordErrorRate

    metric = WordErrorRate(asr_options={"model": "base"})
    metric.check_language("de")
    assert metric.asr.settings()["model"] == "base" and metric.asr.language == "de"


def test_phone_durations_and_cross_language_phones_are_refused(language_corpora):
    """Phone+duration features need a recognizer (English only); phones of a German corpus cannot
    be scored by a model trained on English phones."""
    from attackers.ecapa_attacker import EcapaAttacker
    from sparc_eval.attack.run import not_applicable
    from sparc_eval.data.planned import DataPlan

    german = language_corpora["de"]
    hp = {"feature_type": "phone_durations", "cache_folder": "unused", "batch_size": 2}
    plan = DataPlan(german, german, german, None, german, "original")
    why = not_applicable(EcapaAttacker(hp), plan)
    assert "phone_durations attacker does not serve German (de)" in why
    english = german.replace([replace(u, language=None) for u in german], name="english train")
    phones = EcapaAttacker({**hp, "feature_type": "phones"})
    why = not_applicable(phones, DataPlan(english, german, german, None, german, "original"))
    assert "cannot train on English" in why and "score German" in why


def test_stt_tts_speaks_the_corpus_language_and_refuses_another(language_corpora):
    from anonymizers.stt_tts import SttTts
    from sparc_eval.anonymization.runner import anonymize_corpus

    german = SttTts(language="de").settings()
    assert german["asr"]["model"] == "base" and german["asr"]["language"] == "de"
    assert german["tts"]["backend"] == "espeak" and german["tts"]["voice"] == "de"
    assert "language" not in SttTts().settings()  # English: its settings as before
    for options, role in (
        ({"tts": "piper"}, "voice"),
        ({"asr_options": {"model": "tiny.en"}}, "ASR"),
    ):
        with pytest.raises(
            DataError, match=f"stt_tts anonymizer's {role} .* does not serve German"
        ):
            SttTts(language="de", **options)
    with pytest.raises(DataError, match="ASR is told to transcribe 'fr'"):
        SttTts(language="de", asr_options={"language": "fr"})
    with pytest.raises(DataError, match="the stt_tts anonymizer does not serve French \\(fr\\)"):
        anonymize_corpus(language_corpora["fr"], SttTts(language="de"), "unused")


def test_track2_layout_reads_relative_wav_paths_books_and_language(track2):
    from sparc_eval.data.plan import DataSettings, plan_data

    data_folder, written = track2
    plan = plan_data(
        DataSettings(data_folder=str(data_folder), vpc_preset="vpc2026_track2", language="fr")
    )
    assert plan.eval_original.language == "fr" and plan.train.language == "fr"
    assert plan.train.name.endswith("train_french")
    some = next(iter(plan.eval_original))
    assert Path(some.audio.path).is_file() and some.episode == some.id.split("_")[1]
    assert [t.name for t, _ in plan.lists.lists] == ["fr_dev_trials_mixed", "fr_test_trials_mixed"]
    for trial_list, pairs in plan.lists.lists:
        targets = sum(1 for p in pairs if p[2])
        assert (targets, len(pairs) - targets) == written[trial_list.name]


def test_track2_needs_a_language_it_holds_and_keeps_its_mixed_lists(track2):
    from sparc_eval.data.vpc import find_layout

    data_folder, _ = track2
    with pytest.raises(DataError, match="one language per run; .* holds de, fr"):
        find_layout(data_folder, "vpc2026_track2")
    with pytest.raises(DataError, match="vpc2026_track2 preset does not serve Chinese"):
        find_layout(data_folder, "vpc2026_track2", language="zh")
    with pytest.raises(DataError, match="es_dev_enrolls .* missing"):
        find_layout(data_folder, "vpc2026_track2", language="es")
    with pytest.raises(DataError, match="reads its mixed lists as they are"):
        find_layout(data_folder, "vpc2026_track2", language="de", regenerate_mixed=True)


def _recipe(data_folder, out, *extra):
    from sparc_eval.attack.train import main

    args = [
        f"{REPO}/hparams/vpc2026_track2.yaml",
        f"--data_folder={data_folder}",
        f"--output_folder={out}",
        f"--cache_folder={out / 'cache'}",
        "--n_boot=50",
        "--anon_keeps_words=True",
    ]
    assert main([*args, *extra]) == 0


@pytest.mark.slow("trains phone-only ECAPA on German espeak phones (2 epochs): about 8 s")
def test_recipe_phone_only_ecapa_on_german_espeak_phones(track2, tmp_path):
    """The attacker recipe with the preset: phone-only ECAPA on the language's phones, one row per
    list with the builder's counts, the book-sharing block, the language recorded."""
    from sparc_eval.phones.phoneset import inventory

    data_folder, written = track2
    out = tmp_path / "phones"
    _recipe(
        data_folder,
        out,
        "--language=de",
        f"--attacker_hparams={REPO}/hparams/phones.yaml",
        "--attacker_overrides={number_of_epochs: 2}",
        "--scenario=semi-informed",
    )
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["language"] == "de"
    assert doc["lists"]["label"] == "VoicePrivacy 2026 track 2 (German) layout, attacker: phones"
    for row in doc["lists"]["rows"]:
        assert (row["n_target"], row["n_nontarget"]) == written[row["trial_list"]]
        assert 0 <= row["books"]["target_share_same_book"] <= 1
    fingerprint = json.loads((out / "run_fingerprint.json").read_text())
    assert fingerprint["input_size"] == len(inventory("de"))  # one column per German phoneme
    assert doc["run"]["n_train_speakers"] == 3  # train_german's speakers
    assert "vpc2026_track2: attackers" in doc["run"]["deviations"]


@pytest.mark.slow("the attacker recipe once per language over both languages: 7 s")
def test_recipe_without_a_language_runs_each_and_writes_one_table(track2, tmp_path):
    data_folder, written = track2
    out = tmp_path / "all"
    _recipe(
        data_folder,
        out,
        f"--attacker_hparams={REPO}/hparams/tfidf_utterances.yaml",
        "--scenario=lazy-informed",
    )
    table = json.loads((out / "languages.json").read_text())
    assert set(table["results"]) == {"de", "fr"}
    assert {r["trial_list"] for r in table["rows"]} == {n for n in written if "mixed" in n}
    for row in table["rows"]:
        assert (row["n_target"], row["n_nontarget"]) == written[row["trial_list"]]
        assert row["target_share_same_book"] is not None
    assert "| fr | _identity | tfidf_utterances |" in (out / "languages.md").read_text()


@pytest.mark.slow("the card on German and French with the multilingual Whisper base WER: 60 s")
def test_card_on_each_language_of_track2(track2, tmp_path):
    """The card with the preset over both languages (one card each, its objects built anew): WER
    by the multilingual ASR with the vpc2026 normaliser, the phone-only content attacker on espeak
    phones and TF-IDF with its book-sharing share; one table of every list."""
    from sparc_eval.jobs.card.cli import main

    data_folder, written = track2
    out = tmp_path / "card"
    args = [
        f"{REPO}/hparams/vpc2026_track2.yaml",
        f"--data_folder={data_folder}",
        f"--output_folder={out}",
        f"--cache_folder={out / 'cache'}",
        "--scenarios=[lazy-informed]",
        "--attackers_enabled=[phones,tfidf_utterances]",
        "--content_attacker=phones",
        "--utility_enabled=[wer]",
        "--n_boot=50",
        "--anon_keeps_words=True",
    ]
    assert main(args) == 0
    for code in ("de", "fr"):
        doc = json.loads((out / code / "results.json").read_text())
        assert doc["run"]["language"] == code
        wer = doc["utility"]["identity"]["wer"]
        assert wer["normalizer"] == "vpc2026" and wer["asr"]["model"] == "base"
        assert wer["asr"]["language"] == code and "wer: multilingual asr" in wer["deviations"]
        assert wer["value"] == wer["original"]["value"]  # identity copies: the same transcripts
        for attacker in ("phones", "tfidf_utterances"):
            for row in doc["lists"]["identity"][attacker]["lazy-informed"]["rows"]:
                assert (row["n_target"], row["n_nontarget"]) == written[row["trial_list"]]
                assert "target_share_same_book" in row["books"]
    table = json.loads((out / "languages.json").read_text())
    assert {(r["language"], r["trial_list"][:2]) for r in table["rows"]} == {
        ("de", "de"),
        ("fr", "fr"),
    }
