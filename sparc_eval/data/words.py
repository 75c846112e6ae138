"""The words an utterance says: what phone and text attackers read (content-leakage rule).

An attacker that reads words (the phone-only attacker with a perfect phone recognizer, forced
alignment, transcript scorers) must read the words the *anonymized* speech says, or it scores the
original content and calls it the anonymizer's:

- an original utterance (no ``extra.anonymizer``) says its reference ``text``;
- an anonymized one says the anonymizer's own transcript when it wrote one (``extra.asr_text``,
  STT-TTS), else its reference text when the anonymizer declares that it keeps the words
  (``extra.keeps_words``, from the anonymizer class's ``keeps_words``: McAdams, voice
  conversion);
- an anonymizer that wrote no transcript and declared nothing is never assumed to keep them: that
  is an error saying what to set (a corpus anonymized by another tool declares it when loaded,
  :func:`mark_anonymized`).

``text_choice`` names the rule: ``spoken`` (the default, above), ``reference`` (the reference text
even for a transcribing anonymizer: asked for by name, and a deviation that results record) or
``asr`` (the anonymizer's transcript, required on every anonymized utterance).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import DataError

TEXT_CHOICES = ("spoken", "reference", "asr")


def is_anonymized(utt) -> bool:
    """Anonymized by a runner of this project (``extra.anonymizer``), by another tool and marked
    so when its corpus was loaded as anonymized (:func:`mark_anonymized`), or transcribed."""
    return bool(utt.extra.get("anonymizer")) or utt.extra.get("asr_text") is not None


def mark_anonymized(manifest, *, name=None, keeps_words=None):
    """A corpus loaded as anonymized speech (the attacker recipe's ``anon_*`` folders): utterances
    that do not say which anonymizer made them get ``extra.anonymizer`` (``name`` or
    ``"unknown"``); ``keeps_words`` (True / False) declares for a corpus made by another tool what
    its anonymizer would declare (None: read each utterance's own ``extra.keeps_words``)."""
    out = []
    for u in manifest:
        extra = dict(u.extra)
        extra.setdefault("anonymizer", name or "unknown")
        if keeps_words is not None:
            extra["keeps_words"] = bool(keeps_words)
        out.append(replace(u, extra=extra))
    return _like(manifest, out)


def spoken_text(utt, text_choice: str = "spoken") -> str:
    """The words ``utt`` says under ``text_choice`` (see the module doc)."""
    if text_choice not in TEXT_CHOICES:
        raise DataError(f"text choice {text_choice!r} is not one of {', '.join(TEXT_CHOICES)}")
    if text_choice == "reference" or not is_anonymized(utt):
        return utt.text
    own = utt.extra.get("asr_text")
    if own is not None:
        return own
    if text_choice == "asr":
        raise DataError(
            f"utterance {utt.id!r} has no extra.asr_text",
            hint="phone_text: asr needs a corpus anonymized by a transcribing anonymizer",
        )
    if utt.extra.get("keeps_words") is True:
        return utt.text
    name = utt.extra.get("anonymizer")
    raise DataError(
        f"utterance {utt.id!r}: anonymizer {name!r} wrote no transcript (extra.asr_text) and does "
        f"not declare that it keeps the input's words (extra.keeps_words)",
        hint="set keeps_words = True on the anonymizer class if its output says the input's words "
        "(voice conversion), or write its transcript to utterance.extra['asr_text'], and "
        "anonymize again; for a corpus anonymized by another tool set anon_keeps_words: True "
        "(or False with asr_text); phone_text: reference forces the reference text and is "
        "recorded as a deviation",
    )


def spoken_manifest(manifest, text_choice: str = "spoken"):
    """``manifest`` with each utterance's ``text`` replaced by the words it says."""
    out = [
        u if (t := spoken_text(u, text_choice)) == u.text else replace(u, text=t) for u in manifest
    ]
    return _like(manifest, out)


def _like(manifest, utterances):
    """A manifest of ``utterances`` with ``manifest``'s name and loader marks."""
    return type(manifest)(
        utterances, name=manifest.name, read_passages=getattr(manifest, "read_passages", False)
    )


def reference_text_deviation(utterances, text_choice: str) -> dict:
    """The named deviation when ``text_choice`` gives some anonymized utterance words other than
    the ones it says (``reference`` on a transcribing anonymizer's output), else ``{}``."""
    if text_choice != "reference":
        return {}
    anonymized = [u for u in utterances if is_anonymized(u)]
    transcribed = sum(1 for u in anonymized if u.extra.get("asr_text") not in (None, u.text))
    undeclared = sum(
        1
        for u in anonymized
        if u.extra.get("asr_text") is None and u.extra.get("keeps_words") is not True
    )
    if not transcribed + undeclared:
        return {}
    return {
        "reference_text_of_anonymized_speech": f"{transcribed + undeclared} anonymized utterances are read as their reference transcripts, not as the "
        f"words the anonymized speech says ({transcribed} have the anonymizer's own transcript, {undeclared} an "
        f"anonymizer that does not declare keeping the words): asked for by name (reference), so the attack "
        f"may score the original content"
    }
