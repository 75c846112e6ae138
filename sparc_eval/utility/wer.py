"""Word error rate of (anonymized) speech against the reference transcripts: the utility
measure that the VoicePrivacy Challenge reports next to the EER.

WER = (substitutions + deletions + insertions) / reference words, summed over the corpus (not
averaged per utterance), after the same normalisation of both sides. Two normalisers
(``normalizer``):

- ``whisper`` (default): Whisper's English text normaliser (Radford et al. 2023, appendix C; the
  ``whisper-normalizer`` package's ``EnglishTextNormalizer``), the rule Whisper transcripts are
  scored by: lower case, punctuation and filler words (``um``, ``hmm``) removed, contractions and
  abbreviations spelled out (``Mr.`` -> ``mister``, ``won't`` -> ``will not``), numbers written as
  digits (``twenty five`` -> ``25``), British spellings made American; a token left with no letter
  or digit (the lone ``.`` the rule leaves of an ellipsis) is dropped. A Whisper ASR writes digits
  and abbreviations that read-speech references (LibriSpeech's ``MISTER``, ``TWENTY FIVE``) spell
  out; without this the WER counts those as errors.
- ``basic``: upper case, punctuation removed (apostrophes inside words kept: ``DON'T``), hyphens and
  slashes split words, whitespace collapsed (:func:`normalize`; this module's rule before 0.4). It
  suits an ASR that writes LibriSpeech's own style (VoicePrivacy's ASR_eval) and counts Whisper's
  digits as errors.
- ``vpc2026``: VoicePrivacy 2026's multilingual rule, exactly: lower case, the characters
  ``.,!?;:»«"()[]…—–-`` deleted with no space put in (``là-bas`` -> ``làbas``), apostrophes kept
  (``l'homme``), whitespace collapsed. Any language.
- ``whisper_basic``: Whisper's language-independent ``BasicTextNormalizer`` (lower case, marks and
  punctuation, apostrophes included, turned into spaces). Any language.

``whisper`` and ``basic`` are English rules: a corpus in another language
(:mod:`sparc_eval.data.languages`) is refused with them (:func:`check_normalizer_language`).

An utterance given as failed (the anonymizer produced no audio for it) counts as all deletions:
every one of its reference words is an error, so failing on hard utterances cannot lower the WER.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from ..errors import DataError

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'", "\u02bc": "'"})
_SPLITTERS = re.compile(r"[-/\u2013\u2014_]+")
_NOT_WORD = re.compile(r"[^\w' ]+")
_LONE_APOSTROPHE = re.compile(r"(?<!\w)'|'(?!\w)")


def normalize(text: str) -> str:
    """The ``basic`` normalisation (see the module doc): upper case, punctuation removed."""
    text = unicodedata.normalize("NFKC", text or "").translate(_APOSTROPHES)
    text = _SPLITTERS.sub(" ", text)
    text = _NOT_WORD.sub(" ", text)
    text = _LONE_APOSTROPHE.sub(" ", text)
    return " ".join(text.upper().split())


_HAS_WORD = re.compile(r"\w")


@functools.lru_cache(maxsize=None)
def _whisper_normalizer(kind: str):
    """One of ``whisper-normalizer``'s classes (``english.EnglishTextNormalizer``, which reads a
    spelling table, or ``basic.BasicTextNormalizer``), built once per process."""
    import importlib
    import warnings

    from ..speech.backends import BackendUnavailable

    module, name = kind.split(".")
    try:
        with warnings.catch_warnings():  # its basic.py has an invalid escape in a docstring
            warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
            found = getattr(importlib.import_module(f"whisper_normalizer.{module}"), name)
    except ImportError as err:
        raise BackendUnavailable(
            f"the whisper WER normalisers need the 'whisper-normalizer' package ({err})",
            hint="pip install whisper-normalizer (a dependency of sparc-eval), or set the WER "
            "normalizer to basic or vpc2026",
        ) from None
    return found()


def whisper_normalize(text: str) -> str:
    """Whisper's English text normaliser (``whisper-normalizer``; see the module doc)."""
    normalise = _whisper_normalizer("english.EnglishTextNormalizer")
    # a token without a letter or digit is no word: the lone "." Whisper's rule leaves of an ellipsis
    return " ".join(w for w in normalise(text or "").split() if _HAS_WORD.search(w))


_VPC2026_DELETED = str.maketrans("", "", '.,!?;:»«"()[]…—–-')


def vpc2026_normalize(text: str) -> str:
    """VoicePrivacy 2026's multilingual rule (see the module doc)."""
    return " ".join((text or "").lower().translate(_VPC2026_DELETED).split())


def whisper_basic_normalize(text: str) -> str:
    """Whisper's ``BasicTextNormalizer`` (``whisper-normalizer``; see the module doc)."""
    return " ".join(_whisper_normalizer("basic.BasicTextNormalizer")(text or "").split())


NORMALIZERS = {
    "whisper": whisper_normalize,
    "basic": normalize,
    "vpc2026": vpc2026_normalize,
    "whisper_basic": whisper_basic_normalize,
}
ENGLISH_NORMALIZERS = ("whisper", "basic")  # rules written for English words


def check_normalizer_language(name, language) -> None:
    """An English normaliser on a corpus in another language is a DataError naming the WER metric."""
    from ..data.languages import ENGLISH, language_name

    if isinstance(name, str) and name in ENGLISH_NORMALIZERS and (language or ENGLISH) != ENGLISH:
        raise DataError(
            f"the WER metric's {name!r} normaliser is English's; the corpus is "
            f"{language_name(language)} ({language})",
            hint="set utility.wer.normalizer to vpc2026 (VoicePrivacy 2026's rule) or whisper_basic",
        )


def normalizer_of(name):
    """The normalising function named ``name`` (``NORMALIZERS``), or ``name`` itself when it
    is callable."""
    if callable(name):
        return name
    if name not in NORMALIZERS:
        raise DataError(
            f"unknown WER normalizer {name!r}",
            hint=f"use one of {', '.join(NORMALIZERS)} (whisper: Whisper's English normaliser)",
        )
    return NORMALIZERS[name]


def _counts(reference: str, hypothesis: str, norm=normalize) -> dict:
    import jiwer

    ref, hyp = norm(reference), norm(hypothesis)
    words = len(ref.split())
    if words == 0:
        return {
            "words": 0,
            "substitutions": 0,
            "deletions": 0,
            "insertions": len(hyp.split()),
            "errors": len(hyp.split()),
            "ref": ref,
            "hyp": hyp,
        }
    if not hyp:
        return {
            "words": words,
            "substitutions": 0,
            "deletions": words,
            "insertions": 0,
            "errors": words,
            "ref": ref,
            "hyp": hyp,
        }
    out = jiwer.process_words(ref, hyp)
    s, d, i = out.substitutions, out.deletions, out.insertions
    return {
        "words": words,
        "substitutions": s,
        "deletions": d,
        "insertions": i,
        "errors": s + d + i,
        "ref": ref,
        "hyp": hyp,
    }


def wer_from_pairs(pairs, *, normalizer="whisper", failed=()) -> dict:
    """``pairs``: iterable of ``(id, reference, hypothesis)``; ``failed``: iterable of ``(id,
    reference)`` for utterances the anonymizer failed on, each counted as all deletions (marked
    ``"failed": True`` in ``per_utterance``). Returns ``{"wer", "errors", "words",
    "substitutions", "deletions", "insertions", "utterances", "failed_utterances",
    "failed_words", "normalizer", "per_utterance": {id: {...}}}``; ``wer`` is None when there are
    no reference words. ``normalizer``: ``whisper`` (default), ``basic`` or a function."""
    norm = normalizer_of(normalizer)
    per, totals = {}, {"words": 0, "errors": 0, "substitutions": 0, "deletions": 0, "insertions": 0}
    lost = {"failed_utterances": 0, "failed_words": 0}
    rows = [(uid, ref, hyp, False) for uid, ref, hyp in pairs]
    rows += [(uid, ref, "", True) for uid, ref in failed]
    for uid, reference, hypothesis, gone in rows:
        counts = _counts(reference, hypothesis, norm)
        counts["wer"] = counts["errors"] / counts["words"] if counts["words"] else None
        if gone:
            counts["failed"] = True
            lost["failed_utterances"] += 1
            lost["failed_words"] += counts["words"]
        per[uid] = counts
        for key in totals:
            totals[key] += counts[key]
    wer = totals["errors"] / totals["words"] if totals["words"] else None
    return {
        "wer": wer,
        **totals,
        "utterances": len(per),
        **lost,
        "normalizer": normalizer
        if isinstance(normalizer, str)
        else getattr(normalizer, "__name__", "custom"),
        "per_utterance": per,
    }


def corpus_wer(
    manifest, asr=None, *, progress: bool = False, hypotheses=None, normalizer="whisper"
) -> dict:
    """Transcribe every utterance's audio with ``asr`` (a :mod:`sparc_eval.speech.asr` backend or a
    name; default faster-whisper tiny.en) and score it against ``utt.text``. Utterances without
    a reference transcript are skipped; ones whose audio cannot be read are listed under
    ``failed``. ``hypotheses`` (id -> text) skips the ASR and scores given transcripts."""
    from ..speech.asr import make_asr
    from ..speech.audio import read_utterance

    normalizer_of(normalizer)  # an unknown name fails before any transcription
    pairs, failed, skipped = [], {}, 0
    utterances = [u for u in manifest]
    if hypotheses is None:
        asr = make_asr("faster-whisper" if asr is None else asr)
    iterator = utterances
    if progress and hypotheses is None:
        from tqdm.auto import tqdm

        iterator = tqdm(utterances, desc="wer", unit="utt")
    for utt in iterator:
        if not utt.text.strip():
            skipped += 1
            continue
        if hypotheses is not None:
            if utt.id not in hypotheses:
                failed[utt.id] = "no hypothesis"
                continue
            pairs.append((utt.id, utt.text, hypotheses[utt.id] or ""))
            continue
        try:
            wav, sr = read_utterance(utt)
            pairs.append((utt.id, utt.text, asr.transcribe(wav, sr)))
        except DataError as err:
            failed[utt.id] = str(err)
    result = wer_from_pairs(pairs, normalizer=normalizer)
    result["skipped_no_reference"] = skipped
    result["failed"] = failed
    if hypotheses is None:
        settings = getattr(asr, "settings", None)
        result["asr"] = settings() if callable(settings) else type(asr).__name__
    return result


def anonymized_corpus_wer(
    manifest, asr=None, *, progress: bool = False, normalizer="whisper"
) -> dict:
    """``{"anonymized": WER of the re-transcribed audio}``, plus ``"anonymizer_asr"``: the WER
    of the anonymizer's own transcript (``extra.asr_text``, STT-TTS) where there is one."""
    result = {"anonymized": corpus_wer(manifest, asr, progress=progress, normalizer=normalizer)}
    own = {u.id: u.extra["asr_text"] for u in manifest if "asr_text" in u.extra}
    if own:
        result["anonymizer_asr"] = corpus_wer(
            manifest.subset(lambda u: u.id in own), hypotheses=own, normalizer=normalizer
        )
    return result


def summary(result: dict) -> str:
    if result.get("wer") is None:
        return "WER n/a (no reference words)"
    failed = result.get("failed_utterances") or 0
    return (
        f"WER {100 * result['wer']:.2f}% ({result['errors']} errors / {result['words']} words, "
        f"{result['substitutions']} sub, {result['deletions']} del, {result['insertions']} ins, "
        f"{result['utterances']} utterances"
        + (f", {failed} failed counted as all deletions" if failed else "")
        + f"; {result.get('normalizer', 'whisper')} normaliser)"
    )
