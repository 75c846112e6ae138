"""What the LLM judge asks and how a reply becomes a score, per scoring mode.

- ``number`` (the paper, A.2.2): "Output one number from 0 to 100"; the first number of the
  reply, clamped. Small models often answer the same number for every pair.
- ``yes_no``: "Answer with one word: yes or no"; the score is 100 * P(yes) / (P(yes) + P(no))
  from the top log-probabilities of the first reply token that is yes or no (case and
  surrounding space ignored).
- ``rating``: "Output one digit from 0 to 9"; the score is 100 / 9 times the expected digit
  under the top log-probabilities of the first token that is a digit. One digit is one token in
  every tokenizer we know (Qwen's splits 0-100 into digits, so an expected value over 0-100 is
  not one token).

A logprob mode falls back to the reply text (yes -> 100, no -> 0, the digit) when the server
returns no log-probabilities, and says so: :func:`score_reply` returns the score and its source
(``logprobs`` or ``reply_text``). Few-shot examples are earlier (prompt, answer) turns, the same
prompt form with the ideal answer of each example's label.
"""

from __future__ import annotations

import math
import re

MODES = ("number", "yes_no", "rating")
_HEADER = "You are a speaker verification judge."
_TAIL = "Do not explain your reasoning."
#: the paper's task instructions (A.2.2) by task, in its 0-100 wording; another task gets a
#: generic one of the same form.
PROMPTS = {
    "speaker": (
        "Estimate how likely it is that the probe and enrollment utterances came from the SAME SPEAKER. "
        "Focus on stylistic and linguistic cues, not topic similarity. Output one number from 0 to 100: "
        "0 = definitely different speaker 100 = definitely same speaker"
    ),
    "sex": (
        "Estimate how likely it is that the probe and enrollment utterances came from speakers of the SAME "
        "BIOLOGICAL SEX. Focus on stylistic and linguistic cues, not topic similarity. Output one number from "
        "0 to 100: 0 = definitely different sex 100 = definitely same sex"
    ),
    "age": (
        "Estimate how likely it is that the probe and enrollment utterances came from speakers in the SAME AGE "
        "GROUP (<30, 30-60, or 60+). Focus on stylistic and linguistic cues, not topic similarity. Output one "
        "number from 0 to 100: 0 = definitely different age group 100 = definitely same age group"
    ),
    "accent": (
        "Estimate how likely it is that the probe and enrollment utterances came from speakers in the SAME "
        "ACCENT GROUP (North America versus Other). Focus on vocabulary, phrasing, and linguistic markers, not "
        "topic similarity. Output one number from 0 to 100: 0 = definitely different accent group "
        "100 = definitely same accent group"
    ),
}
_GENERIC = (
    "Estimate how likely it is that the probe and enrollment utterances came from speakers with the SAME "
    "{task}. Focus on stylistic and linguistic cues, not topic similarity. Output one number from 0 to 100: "
    "0 = definitely different {task} 100 = definitely same {task}"
)
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_ANSWERS = {
    "number": ("100", "0"),
    "yes_no": ("yes", "no"),
    "rating": ("9", "0"),
}  # (same, different)


def instruction(task: str, mode: str = "number", custom=None) -> str:
    """The task instruction in a scoring mode, derived from the paper's 0-100 wording."""
    body = (custom or {}).get(task) or PROMPTS.get(task) or _GENERIC.format(task=task.upper())
    if mode == "number" or (custom or {}).get(task):
        return body
    question, _, scale = body.partition(" Output one number from 0 to 100: ")
    if mode == "yes_no":
        return (
            question.replace("Estimate how likely it is that", "Decide whether", 1)
            + " Answer with one word: yes or no."
        )
    return f"{question} Output one digit from 0 to 9: {scale.replace('100 = ', '9 = ')}"


def build_prompt(
    probe_texts, enroll_texts, task: str = "speaker", instructions=None, mode: str = "number"
) -> str:
    """The paper's A.2 prompt: header, task instruction, 'Do not explain', probe, enrollment."""
    return "\n\n".join(
        [
            _HEADER,
            instruction(task, mode, instructions),
            _TAIL,
            "Probe utterances:",
            "\n".join(probe_texts),
            "Enrollment utterances:",
            "\n".join(enroll_texts),
        ]
    )


def few_shot_messages(examples, task: str, mode: str, instructions=None) -> list:
    """Chat turns for labelled examples ``(probe_texts, enroll_texts, label)``: each the same
    prompt form, answered with the ideal answer (same: 100 / yes / 9; different: 0 / no / 0)."""
    turns = []
    for probe, enroll, label in examples:
        turns.append(
            {"role": "user", "content": build_prompt(probe, enroll, task, instructions, mode)}
        )
        turns.append({"role": "assistant", "content": _ANSWERS[mode][0 if label else 1]})
    return turns


def parse_score(reply) -> float:
    """The first number in the reply, clamped to [0, 100]; NaN when there is none."""
    if not reply:
        return math.nan
    m = _NUMBER.search(str(reply))
    if not m:
        return math.nan
    return float(min(100.0, max(0.0, float(m.group()))))


_YES_NO = re.compile(r"\b(yes|no)\b")
_DIGIT = re.compile(r"(?<![0-9])([0-9])(?![0-9])")


def _text_score(text: str, mode: str) -> float:
    """A reply's text in a mode: the first number; the first word yes or no; the first lone digit."""
    if mode == "number":
        return parse_score(text)
    found = (_YES_NO if mode == "yes_no" else _DIGIT).search((text or "").lower())
    if found is None:
        return math.nan
    if mode == "yes_no":
        return 100.0 if found.group(1) == "yes" else 0.0
    return 100.0 * int(found.group(1)) / 9.0


def _logprob_score(positions, mode: str) -> float:
    """From [[(token, logprob), ...] per reply position]: the first position holding an answer token."""
    for top in positions or []:
        mass = {}
        for token, logprob in top:
            word = re.sub(r"[^a-z0-9]", "", str(token).lower())  # " Yes", "Yes.", "YES" -> "yes"
            if logprob is None or not math.isfinite(logprob):
                continue
            if mode == "yes_no" and word in ("yes", "no"):
                mass[word] = mass.get(word, 0.0) + math.exp(logprob)
            elif mode == "rating" and len(word) == 1 and word in "0123456789":
                mass[int(word)] = mass.get(int(word), 0.0) + math.exp(logprob)
        if mass:
            total = sum(mass.values())
            if mode == "yes_no":
                return 100.0 * mass.get("yes", 0.0) / total
            return 100.0 * sum(d * p for d, p in mass.items()) / (9.0 * total)
    return math.nan


def score_reply(reply, mode: str) -> tuple:
    """(score, source) of a cached reply: a string (``number`` mode) or ``{content, top_logprobs}``."""
    if reply is None:
        return math.nan, None
    if isinstance(reply, str):
        return _text_score(reply, mode), "reply_text"
    if mode != "number" and reply.get("top_logprobs"):
        score = _logprob_score(reply["top_logprobs"], mode)
        if not math.isnan(score):
            return score, "logprobs"
    return _text_score(reply.get("content") or "", mode), "reply_text"


def reply_logprobs(message_logprobs, positions: int = 3) -> list:
    """The top log-probabilities of the first reply tokens from an OpenAI chat ``logprobs`` block."""
    content = (message_logprobs or {}).get("content") or []

    def logprob(value):
        return None if value is None else float(value)

    return [
        [(t.get("token", ""), logprob(t.get("logprob"))) for t in (c.get("top_logprobs") or [])]
        for c in content[:positions]
    ]
