"""What a docs page may not hold, checked by the docs build (a warning, so ``make docs`` fails)
and by tests/test_docs.py: an issue number outside the changelog (history lives there), and in
the job and plug-in pages a paragraph or list item over eight lines."""

from __future__ import annotations

import re

ISSUE = re.compile(r"\b[Ii]ssues?\s+#?\d+")
MAX_PARAGRAPH_LINES = 8
SHORT_PARAGRAPH_FOLDERS = ("jobs/", "plugins/")
_LIST_ITEM = re.compile(r"([-*+]|\d+\.)\s")


def issue_mentions(text: str) -> list:
    """(line, mention) of every issue number in ``text``."""
    return [(text[: m.start()].count("\n") + 1, m.group(0)) for m in ISSUE.finditer(text)]


def paragraphs(text: str) -> list:
    """(first line, number of lines) of each prose paragraph or list item of a Markdown page;
    code fences, tables, headings and directive fences are not prose."""
    found, count, start, fence = [], 0, 0, False
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fence = not fence
        prose = not fence and stripped and not stripped.startswith(("```", "~~~", "|", "#", ":::"))
        if count and (not prose or _LIST_ITEM.match(stripped) or stripped.startswith(": ")):
            found.append((start, count))
            count = 0
        if prose:
            start, count = (number, 1) if count == 0 else (start, count + 1)
    if count:
        found.append((start, count))
    return found


def long_paragraphs(text: str) -> list:
    """(first line, lines) of the paragraphs over :data:`MAX_PARAGRAPH_LINES`."""
    return [(line, n) for line, n in paragraphs(text) if n > MAX_PARAGRAPH_LINES]


def page_problems(docname: str, text: str) -> list:
    """What page ``docname`` (``jobs/anonymizer_card``) breaks, one sentence each."""
    problems = []
    if docname != "changelog":
        problems += [
            f"line {line}: '{said}': issue numbers belong in the changelog"
            for line, said in issue_mentions(text)
        ]
    if docname.startswith(SHORT_PARAGRAPH_FOLDERS):
        problems += [
            f"line {line}: a paragraph of {n} lines (at most {MAX_PARAGRAPH_LINES})"
            for line, n in long_paragraphs(text)
        ]
    return problems
