"""Language as data (issue 65, item 1): an utterance says its language (English when it does not),
every language-dependent component reads it and refuses a language it cannot serve before any
work, naming itself and the language; the WER normalisers of the multilingual track."""

import json

import pytest

from sparc_eval.data.languages import check_served, corpus_language, language_code
from sparc_eval.data.manifest import Manifest, Utterance
from sparc_eval.data.plan import DataSettings
from sparc_eval.errors import DataError
from sparc_eval.utility.wer import check_normalizer_language, normalizer_of


def _corpus(language=None, n_speakers=4, per_speaker=3) -> Manifest:
    words = "der die das und ist nicht ein eine zu den mit von".split()
    utts = [
        Utterance(
            id=f"s{s}_{i}",
            speaker=f"s{s}",
            text=" ".join(words[(s + i + k) % len(words)] for k in range(8)),
            episode=f"s{s}_e{i % 2}",
            language=language,
        )
        for s in range(n_speakers)
        for i in range(per_speaker)
    ]
    return Manifest(utts, name="toy")


def test_a_language_is_a_code_by_any_of_its_names():
    assert [language_code(v) for v in ("de", "German", "DE", "en-US", "es_ES", None, "")] == [
        "de",
        "de",
        "de",
        "en",
        "es",
        None,
        None,
    ]
    with pytest.raises(DataError, match="unknown language 'klingon'"):
        language_code("klingon")
    assert DataSettings(language="French").language == "fr"
    with pytest.raises(DataError, match="unknown language"):
        DataSettings(language="xx")


def test_the_manifest_says_the_language_and_english_lines_stay_as_they_were():
    english = Utterance(id="a", speaker="s", text="hello")
    assert "language" not in english.to_dict()  # an English corpus keeps its lines and digests
    german = Utterance.from_dict({"id": "b", "speaker": "s", "text": "hallo", "language": "German"})
    assert german.language == "de" and json.loads(json.dumps(german.to_dict()))["language"] == "de"
    with pytest.raises(DataError, match="line 3: unknown language 'xx'"):
        Utterance.from_dict({"id": "c", "speaker": "s", "language": "xx"}, where="line 3")
    assert _corpus().language == "en" and _corpus("fr").language == "fr"
    assert _corpus().with_language("es").language == "es"
    # English said or set is stored as unsaid: the same lines, digests and cell keys
    said = Utterance.from_dict({"id": "a", "speaker": "s", "text": "hello", "language": "en"})
    assert said.to_dict() == english.to_dict()
    assert _corpus("de").with_language("English").utterances[0].language is None
    mixed = Manifest([english, german], name="mixed")
    with pytest.raises(DataError, match="mixed mixes languages \\(de, en\\)"):
        _ = mixed.language
    assert corpus_language([]) == "en"


def test_every_component_refuses_what_it_cannot_serve_naming_itself_and_the_language():
    with pytest.raises(
        DataError, match="the stylometric text scorer does not serve German \\(de\\)"
    ):
        check_served("the stylometric text scorer", "de", ("en",))
    for component_languages in (None, ("en", "de")):  # Chinese: refused by every component
        with pytest.raises(DataError, match="does not serve Chinese \\(zh\\)"):
            check_served("the tfidf text scorer", "zh", component_languages)
    check_served("the tfidf text scorer", "fr", None)


def test_english_only_text_scorers_refuse_a_german_corpus_before_any_work(tmp_path):
    from attackers.text.embedding import EmbeddingScorer
    from attackers.text.llm import LLMScorer
    from attackers.text.stylometric import StylometricScorer
    from attackers.text.tfidf import TfidfScorer
    from sparc_eval.jobs.text.evaluate import evaluate_text
    from sparc_eval.jobs.text.settings import TextEvaluationOptions

    german = _corpus("de")
    quick = TextEvaluationOptions(n_boot=0, plots=False, save_trials=False)
    for scorer, name in (
        (StylometricScorer(), "stylometric"),
        (LLMScorer(base_url="http://127.0.0.1:9/v1", model="m"), "llm"),
        (EmbeddingScorer(cache_dir=None), "embedding:all-MiniLM-L6-v2"),
    ):
        with pytest.raises(DataError, match=f"the {name}.* does not serve German \\(de\\)"):
            evaluate_text(german, scorer, settings=[(8, 2)], options=quick)
    assert TfidfScorer().languages is None  # its token pattern reads any alphabet


def test_an_attacker_that_reads_english_phones_is_not_applicable_to_french():
    from attackers.bag_of_phones import BagOfPhones
    from sparc_eval.attack.run import not_applicable
    from sparc_eval.data.planned import DataPlan

    french = _corpus("fr")
    plan = DataPlan(french, french, french, None, french, "original")
    why = not_applicable(BagOfPhones(cache_folder="unused"), plan)
    assert why is not None and "bag_of_phones attacker does not serve French (fr)" in why
    english = _corpus()
    assert (
        not_applicable(
            BagOfPhones(), DataPlan(english, english, english, None, english, "original")
        )
        is None
    )


def test_the_vpc2026_normaliser_is_the_challenges_rule():
    norm = normalizer_of("vpc2026")
    assert norm("Là-bas, L'Homme dit: «Non!» (vraiment)…") == "làbas l'homme dit non vraiment"
    assert norm('Er sagte "schön"; ja?') == "er sagte schön ja"
    assert norm("a—b – c") == "ab c"  # dashes deleted with no space put in
    assert normalizer_of("whisper_basic")("Schön, l'homme!") == "schön l homme"


def test_an_english_normaliser_on_another_language_names_the_wer_metric():
    for name in ("whisper", "basic"):
        with pytest.raises(DataError, match=f"WER metric's '{name}' normaliser is English's"):
            check_normalizer_language(name, "de")
        check_normalizer_language(name, "en")
    check_normalizer_language("vpc2026", "de")
    from sparc_eval.utility.metrics import UtilityInput, WordErrorRate

    german = _corpus("de")
    with pytest.raises(DataError, match="corpus is German"):  # before any transcription
        WordErrorRate(asr="unused", normalizer="whisper").compute(UtilityInput("x", german, german))


def test_the_card_checks_its_wer_normaliser_against_the_corpus_before_anonymizing():
    from sparc_eval.utility.metrics import WordErrorRate, check_utility_language

    metrics = {"wer": WordErrorRate(asr="unused", normalizer="whisper")}
    with pytest.raises(DataError, match="WER metric's 'whisper' normaliser"):
        check_utility_language(metrics, "es")
    check_utility_language({"wer": WordErrorRate(asr="unused", normalizer="vpc2026")}, "es")
    check_utility_language(metrics, "en")


def test_the_wer_asr_is_given_the_corpus_language_and_english_only_models_refuse():
    """tiny.en and pocketsphinx are English-only: refused on German before any transcription; a
    multilingual model name is told the corpus's language unless its options say one."""
    from sparc_eval.utility.metrics import WordErrorRate

    for asr in ("tiny.en", "pocketsphinx"):
        metric = WordErrorRate(asr=asr, normalizer="vpc2026")
        with pytest.raises(DataError, match="WER metric's ASR .* does not serve German \\(de\\)"):
            metric.check_language("de")
    base = WordErrorRate(asr="base", normalizer="vpc2026")
    base.check_language("fr")  # built, not loaded: no weights are read here
    assert base.asr.language == "fr" and base.asr.settings()["language"] == "fr"
    told = WordErrorRate(asr="base", normalizer="vpc2026", asr_options={"language": "de"})
    with pytest.raises(DataError, match="is told to transcribe 'de'; the corpus is 'fr'"):
        told.check_language("fr")
    english = WordErrorRate()
    english.check_language("en")
    assert english.asr is None  # an English corpus builds nothing before the card needs it
    assert english.normalizer == "whisper"


def test_the_wer_defaults_on_another_language_are_the_multilingual_asr_and_vpc2026():
    """Left unset, the WER's ASR and normaliser follow the corpus: Whisper base told the language
    and VoicePrivacy 2026's rule, both named in the metric's deviations."""
    from sparc_eval.utility.metrics import WordErrorRate

    metric = WordErrorRate()
    metric.check_language("es")
    assert metric.normalizer == "vpc2026"
    assert metric.asr.settings()["model"] == "base" and metric.asr.language == "es"
    chosen = WordErrorRate(normalizer="whisper_basic", asr="base")
    chosen.check_language("de")
    assert chosen.normalizer == "whisper_basic"
