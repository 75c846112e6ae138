"""The language a corpus is spoken in, as data: an utterance's ``language`` (ISO 639-1, English
when absent), read by every language-dependent component, which refuses a language it cannot
serve before any work.

VoicePrivacy 2026's multilingual track scores English, German, French and Spanish
(:data:`SCORED`); Chinese and Japanese are anonymized there but not scored, and refused here.
"""

from __future__ import annotations

from typing import Iterable, Optional

from ..errors import DataError

ENGLISH = "en"
#: the languages VoicePrivacy 2026's multilingual track scores
SCORED = ("en", "de", "fr", "es")
NAMES = {
    "en": "English",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "zh": "Chinese",
    "ja": "Japanese",
}
_SPELLINGS = {name.lower(): code for code, name in NAMES.items()}  # "german" -> "de"


def language_code(value) -> Optional[str]:
    """``value`` as an ISO 639-1 code (``de``, ``German`` and ``DE`` alike); None stays None
    (English is then assumed); a language outside ``NAMES`` is a DataError."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    text = str(value).strip().lower().replace("_", "-").split("-")[0]  # en-US -> en
    code = _SPELLINGS.get(text, text)
    if code not in NAMES:
        raise DataError(
            f"unknown language {value!r}",
            hint=f"an ISO 639-1 code: {', '.join(NAMES)}",
        )
    return code


def language_name(code: Optional[str]) -> str:
    """How reports name a language (``German``); None is English."""
    return NAMES[code or ENGLISH]


def corpus_language(languages: Iterable[Optional[str]], where: str = "the corpus") -> str:
    """The one language of a corpus's utterances (English when none says), or a DataError when
    they are spoken in several: every component reads one language per corpus."""
    found = {code or ENGLISH for code in languages}
    if len(found) > 1:
        raise DataError(
            f"{where} mixes languages ({', '.join(sorted(found))})",
            hint="evaluate each language as its own corpus (--language narrows a preset)",
        )
    return found.pop() if found else ENGLISH


def check_served(
    component: str,
    language: Optional[str],
    served: Optional[tuple],
    hint: str = "leave it out of this corpus's run (attackers_enabled, utility_enabled)",
) -> None:
    """A DataError naming ``component`` and ``language`` when ``served`` (its languages; None:
    every scored language) does not hold it. Languages outside :data:`SCORED` are refused by every
    component (they need segmentation and character error rates)."""
    code = language or ENGLISH
    allowed = SCORED if served is None else tuple(served)
    if code not in allowed:
        raise DataError(
            f"{component} does not serve {language_name(code)} ({code}): it serves "
            + ", ".join(f"{language_name(c)} ({c})" for c in allowed),
            hint=hint,
        )


def refusal(component: str, language: Optional[str], served: Optional[tuple]) -> Optional[str]:
    """:func:`check_served`'s sentence, or None when ``component`` serves ``language``."""
    try:
        check_served(component, language, served)
    except DataError as err:
        return str(err)
    return None
