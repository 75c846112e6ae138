"""Word error rate of (anonymized) speech against the reference transcripts: the utility
measure that the VoicePrivacy Challenge reports next to the EER.

WER = (substitutions + deletions + insertions) / reference words, summed over the corpus (not
averaged per utterance), after the VoicePrivacy-style normalisation of both sides: upper case,
punctuation removed (apostrophes inside words kept: ``DON'T``), hyphens and slashes split words,
whitespace collapsed. Whisper writes numbers as digits and ``Mr.`` for LibriSpeech's ``MISTER``;
such differences count as errors here, as they would in the challenge with a Whisper ASR.
"""

from __future__ import annotations

import re
import unicodedata

from ..errors import DataError

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'", "\u02bc": "'"})
_SPLITTERS = re.compile(r"[-/\u2013\u2014_]+")
_NOT_WORD = re.compile(r"[^\w' ]+")
_LONE_APOSTROPHE = re.compile(r"(?<!\w)'|'(?!\w)")


def normalize(text: str) -> str:
    """VoicePrivacy-style normalisation (see the module doc)."""
    text = unicodedata.normalize("NFKC", text or "").translate(_APOSTROPHES)
    text = _SPLITTERS.sub(" ", text)
    text = _NOT_WORD.sub(" ", text)
    text = _LONE_APOSTROPHE.sub(" ", text)
    return " ".join(text.upper().split())


def _counts(reference: str, hypothesis: str) -> dict:
    import jiwer

    ref, hyp = normalize(reference), normalize(hypothesis)
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


def wer_from_pairs(pairs) -> dict:
    """``pairs``: iterable of ``(id, reference, hypothesis)``. Returns ``{"wer", "errors", "words",
    "substitutions", "deletions", "insertions", "utterances", "per_utterance": {id: {...}}}``;
    ``wer`` is None when there are no reference words."""
    per, totals = {}, {"words": 0, "errors": 0, "substitutions": 0, "deletions": 0, "insertions": 0}
    for uid, reference, hypothesis in pairs:
        counts = _counts(reference, hypothesis)
        counts["wer"] = counts["errors"] / counts["words"] if counts["words"] else None
        per[uid] = counts
        for key in totals:
            totals[key] += counts[key]
    wer = totals["errors"] / totals["words"] if totals["words"] else None
    return {"wer": wer, **totals, "utterances": len(per), "per_utterance": per}


def corpus_wer(manifest, asr=None, *, progress: bool = False, hypotheses=None) -> dict:
    """Transcribe every utterance's audio with ``asr`` (a :mod:`sparc_eval.speech.asr` backend or a
    name; default faster-whisper tiny.en) and score it against ``utt.text``. Utterances without
    a reference transcript are skipped; ones whose audio cannot be read are listed under
    ``failed``. ``hypotheses`` (id -> text) skips the ASR and scores given transcripts."""
    from ..speech.asr import make_asr
    from ..speech.audio import read_utterance

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
    result = wer_from_pairs(pairs)
    result["skipped_no_reference"] = skipped
    result["failed"] = failed
    if hypotheses is None:
        settings = getattr(asr, "settings", None)
        result["asr"] = settings() if callable(settings) else type(asr).__name__
    return result


def anonymized_corpus_wer(manifest, asr=None, *, progress: bool = False) -> dict:
    """``{"anonymized": WER of the re-transcribed audio}``, plus ``"anonymizer_asr"``: the WER
    of the anonymizer's own transcript (``extra.asr_text``, STT-TTS) where there is one."""
    result = {"anonymized": corpus_wer(manifest, asr, progress=progress)}
    own = {u.id: u.extra["asr_text"] for u in manifest if "asr_text" in u.extra}
    if own:
        result["anonymizer_asr"] = corpus_wer(
            manifest.subset(lambda u: u.id in own), hypotheses=own
        )
    return result


def summary(result: dict) -> str:
    if result.get("wer") is None:
        return "WER n/a (no reference words)"
    return (
        f"WER {100 * result['wer']:.2f}% ({result['errors']} errors / {result['words']} words, "
        f"{result['substitutions']} sub, {result['deletions']} del, {result['insertions']} ins, "
        f"{result['utterances']} utterances)"
    )
