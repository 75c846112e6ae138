"""An offline part-of-speech tagger for G2P homographs: pattern.en's Brill tagger.

NLTK's tagger (what g2p_en calls) needs ``averaged_perceptron_tagger`` data that no PyPI
package ships, so the G2P uses the tagger of Tom De Smedt's *pattern* library, whose English
lexicon, morphological rules, contextual (Brill) rules and named entities ship inside the
``textblob`` wheel (``textblob/en/en-*.txt``). Penn Treebank tags, which is what g2p_en's
homograph table is written against.

Note: textblob's own ``PatternTagger`` calls pattern's ``find_tags`` with the lexicon only (no
morphological or contextual rules), so it gives every word one fixed tag whatever the sentence
("they record a record": NN, NN). :class:`BrillTagger` runs the full pattern.en pipeline
(lexicon, morphology for unknown words, contextual rules, named entities), which is what lets
a homograph's pronunciation depend on its sentence ("they record a record": VBP, NN).

pattern's ``find_tags`` is re-implemented here, step for step, because textblob's version
spends about 1 ms on a 20-word sentence: the lazy lexicon is read through ``dict``'s own
methods, the morphological rules are precompiled (and remembered per word), and the contextual
rules are indexed. A contextual rule at a position only reads the *word* there and the tags of
its neighbours (already-final tags to the left, initial tags to the right), and only rules
whose from-tag equals the position's initial tag (or ``*``) are tried, so the tag that results
is the to-tag of the *last* rule that fires; indexing the rules by from-tag and by the
neighbour they test, and scanning backwards to the first that fires, gives the same tag.
``reference_tags`` keeps textblob's slow original; the tests compare the two on every twelfth
test-clean sentence and on crafted ones (named entities, unknown words), and they agreed on all
2,620 test-clean sentences when this was written. About ten times faster.
"""

from __future__ import annotations

import threading
import types
import warnings
from typing import Callable, Sequence

_PAD = "STAART"  # pattern's sentence-boundary marker, in words and in tags


def _condition(cmd: str, x: str, y: str) -> Callable | None:
    """A rule condition as f(words, tags, i) over padded lists; None for commands pattern never fires."""
    conditions = {
        "prevtag": lambda w, t, i: t[i - 1] == x,
        "nexttag": lambda w, t, i: t[i + 1] == x,
        "prev2tag": lambda w, t, i: t[i - 2] == x,
        "next2tag": lambda w, t, i: t[i + 2] == x,
        "prev1or2tag": lambda w, t, i: x == t[i - 1] or x == t[i - 2],
        "next1or2tag": lambda w, t, i: x == t[i + 1] or x == t[i + 2],
        "prev1or2or3tag": lambda w, t, i: x == t[i - 1] or x == t[i - 2] or x == t[i - 3],
        "next1or2or3tag": lambda w, t, i: x == t[i + 1] or x == t[i + 2] or x == t[i + 3],
        "surroundtag": lambda w, t, i: x == t[i - 1] and y == t[i + 1],
        "curwd": lambda w, t, i: x == w[i],
        "prevwd": lambda w, t, i: x == w[i - 1],
        "nextwd": lambda w, t, i: x == w[i + 1],
        "prev1or2wd": lambda w, t, i: x == w[i - 1] or x == w[i - 2],
        "next1or2wd": lambda w, t, i: x == w[i + 1] or x == w[i + 2],
        "prevwdtag": lambda w, t, i: x == w[i - 1] and y == t[i - 1],
        "nextwdtag": lambda w, t, i: x == w[i + 1] and y == t[i + 1],
        "wdprevtag": lambda w, t, i: x == t[i - 1] and y == w[i],
        "wdnexttag": lambda w, t, i: x == w[i] and y == t[i + 1],
        "wdand2aft": lambda w, t, i: x == w[i] and y == w[i + 2],
        "wdand2tagbfr": lambda w, t, i: x == t[i - 2] and y == w[i],
        "wdand2tagaft": lambda w, t, i: x == w[i] and y == t[i + 2],
        "lbigram": lambda w, t, i: x == w[i - 1] and y == w[i],
        "rbigram": lambda w, t, i: x == w[i] and y == w[i + 1],
        "prevbigram": lambda w, t, i: x == t[i - 2] and y == t[i - 1],
        "nextbigram": lambda w, t, i: x == t[i + 1] and y == t[i + 2],
    }
    return conditions.get(cmd)


# Which neighbouring words and tags each contextual rule reads: (kind, offset, value) triples, at
# least one of which must hold for the rule to fire. They index the rules, so a position only
# tries the few rules its neighbourhood can satisfy.
def _keys(cmd: str, x: str, y: str) -> tuple:
    t, w = "t", "w"
    return {
        "prevtag": ((t, -1, x),),
        "nexttag": ((t, 1, x),),
        "prev2tag": ((t, -2, x),),
        "next2tag": ((t, 2, x),),
        "prev1or2tag": ((t, -1, x), (t, -2, x)),
        "next1or2tag": ((t, 1, x), (t, 2, x)),
        "prev1or2or3tag": ((t, -1, x), (t, -2, x), (t, -3, x)),
        "next1or2or3tag": ((t, 1, x), (t, 2, x), (t, 3, x)),
        "surroundtag": ((t, -1, x),),
        "curwd": ((w, 0, x),),
        "prevwd": ((w, -1, x),),
        "nextwd": ((w, 1, x),),
        "prev1or2wd": ((w, -1, x), (w, -2, x)),
        "next1or2wd": ((w, 1, x), (w, 2, x)),
        "prevwdtag": ((w, -1, x),),
        "nextwdtag": ((w, 1, x),),
        "wdprevtag": ((w, 0, y),),
        "wdnexttag": ((w, 0, x),),
        "wdand2aft": ((w, 0, x),),
        "wdand2tagbfr": ((w, 0, y),),
        "wdand2tagaft": ((w, 0, x),),
        "lbigram": ((w, 0, y),),
        "rbigram": ((w, 0, x),),
        "prevbigram": ((t, -2, x),),
        "nextbigram": ((t, 1, x),),
    }[cmd]


class _FastContext:
    """pattern's ``Context.apply`` (Brill contextual rules), rules indexed by from-tag and neighbourhood."""

    def __init__(self, rules: Sequence[Sequence[str]]):
        self._rules = []  # (from-tag, to-tag, condition, keys), in file order
        for rule in rules:
            cmd, x, y = rule[2].lower(), rule[3], rule[4] if len(rule) > 4 else ""
            cond = _condition(cmd, x, y)
            if cond is not None:  # commands pattern lists but never tests can never fire
                self._rules.append((rule[0], rule[1], cond, _keys(cmd, x, y)))
        self._by_tag: dict = {}

    def _index(self, tag: str) -> tuple:
        """For an initial tag: ((reads tags?, offset, {value: rule ids, last first}), ...)."""
        found = self._by_tag.get(tag)
        if found is None:
            index: dict = {}
            for n, (frm, _, _, keys) in enumerate(self._rules):
                if frm == tag or frm == "*":
                    for kind, offset, value in keys:
                        index.setdefault((kind, offset), {}).setdefault(value, []).append(n)
            found = tuple(
                (
                    kind == "t",
                    offset,
                    {value: tuple(sorted(ids, reverse=True)) for value, ids in table.items()},
                )
                for (kind, offset), table in sorted(index.items())
            )
            self._by_tag[tag] = found
        return found

    def apply_padded(self, words: list, tags: list) -> None:
        """Apply the rules to ``tags`` in place; both lists carry three pads at each end."""
        rules = self._rules
        by_tag = self._by_tag
        for i in range(3, len(tags) - 3):
            # Every rule that fires sets the tag, so the last one in file order wins: find the
            # highest-numbered rule that fires among those the neighbourhood can satisfy.
            index = by_tag.get(tags[i])
            if index is None:
                index = self._index(tags[i])
            best = -1
            for reads_tags, offset, table in index:
                ids = table.get(tags[i + offset] if reads_tags else words[i + offset])
                if ids:
                    for n in ids:
                        if n <= best:
                            break
                        if rules[n][2](words, tags, i):
                            best = n
                            break
            if best >= 0:
                tags[i] = rules[best][1]

    def apply(self, tokens: list) -> list:
        """``Context.apply``'s interface: [[word, tag], ...] -> [[word, tag], ...]."""
        words = [_PAD] * 3 + [token[0] for token in tokens] + [_PAD] * 3
        tags = [_PAD] * 3 + [token[1] for token in tokens] + [_PAD] * 3
        self.apply_padded(words, tags)
        return [[w, t] for w, t in zip(words[3:-3], tags[3:-3])]


def _morphology_condition(cmd: str, x: str, known: Callable) -> Callable:
    """A morphological rule's test as f(word, previous word, next word), as Morphology.apply has it
    (``known(word)``: whether the lexicon has the word)."""
    n = len(x)
    return {
        "char": lambda w, p, q: x in w,
        "haspref": lambda w, p, q: w.startswith(x),
        "hassuf": lambda w, p, q: w.endswith(x),
        "addpref": lambda w, p, q: known(x + w),
        "addsuf": lambda w, p, q: known(w + x),
        "deletepref": lambda w, p, q: w.startswith(x) and known(w[n:]),
        "deletesuf": lambda w, p, q: w.endswith(x) and known(w[:-n]),
        "goodleft": lambda w, p, q: x == q,
        "goodright": lambda w, p, q: x == p,
    }.get(cmd, lambda w, p, q: False)


class _FastMorphology:
    """pattern's ``Morphology.apply`` (rules for words the lexicon lacks), precompiled and memoised.

    The rules run in file order, each one that fires replacing the tag (``f`` rules only fire
    on a given current tag). A rule reads the word, the current tag, the lexicon, and the
    neighbouring words only through equality with its ``goodleft``/``goodright`` word, so the
    memo key keeps a neighbour only when it is one of those words.
    """

    def __init__(self, morphology, known: Callable):
        cmds = morphology.cmd
        self._rules = []
        left, right = set(), set()
        f = x = pos = cmd = None
        for (
            r
        ) in morphology:  # parsed exactly as Morphology.apply parses them (stale values included)
            if r[1] in cmds:
                f, x, pos, cmd = False, r[0], r[-2], r[1].lower()
            if r[2] in cmds:
                f, x, pos, cmd = True, r[1], r[-2], r[2].lower().lstrip("f")
            if cmd is None:
                continue
            self._rules.append((f, r[0], _morphology_condition(cmd, x, known), pos))
            if cmd == "goodleft":
                left.add(x)
            elif cmd == "goodright":
                right.add(x)
        self._left, self._right = frozenset(left), frozenset(right)
        self._memo: dict = {}

    def apply(self, token, previous=(None, None), next=(None, None)):
        """``Morphology.apply``'s interface."""
        return [token[0], self.tag(token[0], token[1], previous[0], next[0])]

    def tag(self, word: str, tag: str, prev_word, next_word) -> str:
        prev_word = prev_word if prev_word in self._right else None
        next_word = next_word if next_word in self._left else None
        key = (word, tag, prev_word, next_word)
        found = self._memo.get(key)
        if found is None:
            found = tag
            for f, from_tag, cond, pos in self._rules:
                if f and found != from_tag:
                    continue
                if cond(word, prev_word, next_word):
                    found = pos
            if len(self._memo) < 500_000:
                self._memo[key] = found
        return found


class _FastEntities:
    """pattern's ``Entities.apply`` (multi-word named entities) over precomputed plain tuples."""

    def __init__(self, entities):
        from textblob._text import RE_ENTITY1, RE_ENTITY2, RE_ENTITY3

        self._tag = entities.tag
        self._res = (RE_ENTITY1, RE_ENTITY2, RE_ENTITY3)
        self._table = {}
        for first, found in entities.items():
            parsed = []
            for e in found:  # ["new", "york", "loc"] -> (("new", "york"), "-LOC")
                e, suffix = (e[:-1], "-" + e[-1].upper()) if e[-1] in entities.cmd else (e, "")
                if e:  # pattern would fail on an entry with no words; the shipped data has none
                    parsed.append((tuple(e), suffix))
            self._table[first] = tuple(parsed)

    def apply_lists(self, words: list, tags: list) -> None:
        """Tag named entities in ``tags`` in place (lists without pads)."""
        re1, re2, re3 = self._res
        table, ne_tag = self._table, self._tag
        lowered = [w.lower() for w in words]
        n = len(words)
        i = 0
        while i < n:
            w = lowered[i]
            if ("@" in w or w.startswith(("http://", "www."))) and (
                re1.match(w) or re2.match(w) or re3.match(w)
            ):
                tags[i] = ne_tag
            found = table.get(w)
            if found:
                for entity, suffix in found:
                    k = len(entity)
                    if k == 1 or (
                        i + k <= n
                        and lowered[i + 1] == entity[1]
                        and tuple(lowered[i : i + k]) == entity
                    ):
                        for j in range(i, i + k):
                            tags[j] = (tags[j] == "NNPS" and tags[j] or ne_tag) + suffix
                        i += k - 1
                        break
            i += 1

    def apply(self, tokens):
        """``Entities.apply``'s interface: updates [[word, tag], ...] in place."""
        words = [token[0] for token in tokens]
        tags = [token[1] for token in tokens]
        self.apply_lists(words, tags)
        for token, tag in zip(tokens, tags):
            token[1] = tag
        return tokens


class BrillTagger:
    """``tagger(words) -> [(word, tag), ...]``: pattern.en's tagger on a pre-tokenised sentence.

    One tag per input word, in order (tokens are never split or merged); deterministic; offline.
    """

    name = "pattern-brill"

    def __init__(self):
        from textblob._text import CD  # textblob ships pattern.en's tagger and its data
        from textblob.en import lexicon

        with warnings.catch_warnings():  # textblob's loader leaves its data files to the GC
            warnings.simplefilter("ignore", ResourceWarning)
            for part in (lexicon, lexicon.morphology, lexicon.context, lexicon.entities):
                len(part)  # load now, not inside the first sentence
        self._cd = CD
        # The lexicon is a lazy dict whose every lookup goes through Python; once it is loaded,
        # dict's own methods bound to it look up at C speed (and copy nothing).
        self._lexicon_get = types.MethodType(dict.get, lexicon)
        self._morphology = _FastMorphology(
            lexicon.morphology, types.MethodType(dict.__contains__, lexicon)
        )
        self._context = _FastContext(list(lexicon.context))
        self._entities = _FastEntities(lexicon.entities)
        self._lock = threading.Lock()

    def __call__(self, words: Sequence[str]) -> list:
        """pattern's ``find_tags``: lexicon, then rules for unknown words, context rules, entities."""
        words = [str(w) for w in words]
        n = len(words)
        if n == 0:
            return []
        get = self._lexicon_get
        tags = [get(w) for w in words]
        if tags[0] is None:  # only the first word is also looked up lower-cased
            tags[0] = get(words[0].lower()) or None
        with self._lock:  # the morphology memo is shared
            for i in range(n):
                if tags[i] is None:
                    w = words[i]
                    if w.istitle():
                        tags[i] = "NNP"
                    elif self._cd.match(w) is not None:
                        tags[i] = "CD"
                    else:
                        tags[i] = self._morphology.tag(
                            w,
                            "NN",
                            words[i - 1] if i > 0 else None,
                            words[i + 1] if i < n - 1 else None,
                        )
        padded_words = [_PAD] * 3 + words + [_PAD] * 3
        padded_tags = [_PAD] * 3 + tags + [_PAD] * 3
        self._context.apply_padded(padded_words, padded_tags)
        tags = padded_tags[3:-3]
        self._entities.apply_lists(words, tags)
        return list(zip(words, tags))


def reference_tags(words: Sequence[str]) -> list:
    """textblob's own (slow) pattern pipeline with all rules: what :class:`BrillTagger` must equal."""
    from textblob._text import find_tags
    from textblob.en import lexicon

    default_tagger()  # loads the data quietly
    tagged = find_tags(
        [str(w) for w in words],
        lexicon=lexicon,
        morphology=lexicon.morphology,
        context=lexicon.context,
        entities=lexicon.entities,
        default=("NN", "NNP", "CD"),
        language="en",
    )
    return [(word, tag) for word, tag in tagged]


_DEFAULT: BrillTagger | None = None
_DEFAULT_LOCK = threading.Lock()


def default_tagger() -> BrillTagger:
    """The process-wide :class:`BrillTagger` (its data loads once)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = BrillTagger()
        return _DEFAULT
