"""A small English grammar for the demo corpus: sentences from templates and per-topic lexicons.

Two registers, mirroring the two kinds of corpora the project evaluates:

- ``reading``: each speaker reads a "book" (like a LibriSpeech speaker reading chapters): one
  main topic, a little of a second one, a cast of named characters and invented towns. Topic
  words and names dominate, so a speaker's words are distinctive.
- ``conversation``: two speakers share an episode and its topic (like EdAcc): both draw from
  the episode's topic and from a large everyday vocabulary with fillers and reactions, so the
  words say more about the conversation than about the speaker. Speakers keep a few habits
  (preferred fillers, American or British words, people their age talks about).

Everything is drawn from a ``numpy.random.Generator``, so the same seed gives the same text.
The word lists live in :mod:`sparc_eval.demo.lexicon`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from . import lexicon as lx

TOPIC_NAMES = tuple(lx.TOPICS)


# ------------------------------------------------------------------------------------------------
# lexicon parsing and inflection


def pluralise(noun: str) -> str:
    if re.search(r"(s|x|z|ch|sh)$", noun):
        return noun + "es"
    if re.search(r"[^aeiou]y$", noun):
        return noun[:-1] + "ies"
    return noun + "s"


def past_tense(verb: str) -> str:
    if verb.endswith("e"):
        return verb + "d"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ied"
    return verb + "ed"


def ing_form(verb: str) -> str:
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")):
        return verb[:-1] + "ing"
    return verb + "ing"


def article(word: str) -> str:
    """``a`` or ``an`` before ``word``."""
    w = word.lower()
    if w.startswith(("uni", "use", "usu", "eu", "one")):
        return "a"
    if w.startswith(("hour", "honest", "heir")):
        return "an"
    return "an" if w[:1] in "aeiou" else "a"


@dataclass(frozen=True)
class VerbPhrase:
    base: str
    past: str
    ing: str

    @classmethod
    def parse(cls, spec: str) -> "VerbPhrase":
        head, _, rest = spec.strip().partition(" ")
        forms = head.split("/")
        base = forms[0]
        past = forms[1] if len(forms) > 1 else past_tense(base)
        ing = forms[2] if len(forms) > 2 else ing_form(base)
        tail = (" " + rest) if rest else ""
        return cls(base + tail, past + tail, ing + tail)


@dataclass(frozen=True)
class Lexicon:
    """One topic's words, parsed: nouns as (singular, plural) pairs, actions as verb phrases."""

    name: str
    nouns: tuple
    adjectives: tuple
    people: tuple
    places: tuple
    actions: tuple

    @classmethod
    def from_spec(cls, name: str, spec: dict) -> "Lexicon":
        nouns = []
        for word in spec["nouns"].split():
            singular, _, plural = word.partition("/")
            nouns.append(
                (singular.replace("_", " "), (plural or pluralise(singular)).replace("_", " "))
            )
        return cls(
            name=name,
            nouns=tuple(nouns),
            adjectives=tuple(spec["adjectives"].split()),
            people=tuple(p.replace("_", " ") for p in spec["people"].split()),
            places=tuple(p.strip() for p in spec["places"].split("|")),
            actions=tuple(VerbPhrase.parse(a) for a in spec["actions"].split("|")),
        )

    def subset(self, rng: np.random.Generator, share: float) -> "Lexicon":
        """A random share of each word list (at least 3 of each), in the original order."""

        def pick(items):
            k = min(len(items), max(3, int(round(share * len(items)))))
            keep = np.sort(rng.choice(len(items), size=k, replace=False))
            return tuple(items[i] for i in keep)

        return Lexicon(
            self.name,
            pick(self.nouns),
            pick(self.adjectives),
            pick(self.people),
            pick(self.places),
            pick(self.actions),
        )


LEXICONS = {name: Lexicon.from_spec(name, spec) for name, spec in lx.TOPICS.items()}
EVERYDAY_ACTIONS = tuple(VerbPhrase.parse(a) for a in lx.EVERYDAY_ACTIONS)


def _choice(rng: np.random.Generator, items, p=None):
    return items[int(rng.choice(len(items), p=p))]


def capitalise(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:] if sentence else sentence


def tidy(sentence: str) -> str:
    sentence = re.sub(r"\s+", " ", sentence).strip()
    sentence = re.sub(r"\s+([,.?!])", r"\1", sentence)
    return capitalise(sentence)


# ------------------------------------------------------------------------------------------------
# reading: books


@dataclass
class Book:
    """What one reading-mode speaker reads about: a topic (and a little of another), a cast of
    characters and two invented towns."""

    topic: str
    main: Lexicon
    second: Optional[Lexicon]
    cast: tuple
    towns: tuple

    @classmethod
    def create(
        cls,
        topic: str,
        rng: np.random.Generator,
        *,
        second_topic: Optional[str] = None,
        lead: Optional[str] = None,
    ) -> "Book":
        main = LEXICONS[topic].subset(rng, 0.5)
        second = LEXICONS[second_topic].subset(rng, 0.3) if second_topic else None
        lead = lead or _choice(rng, lx.GIVEN_NAMES)
        surnames = rng.choice(len(lx.SURNAMES), size=2, replace=False)
        titles = rng.choice(len(lx.TITLES), size=2, replace=False)
        cast = (lead,) + tuple(f"{lx.TITLES[t]} {lx.SURNAMES[s]}" for t, s in zip(titles, surnames))
        starts = rng.choice(len(lx.TOWN_STARTS), size=2, replace=False)
        ends = rng.choice(len(lx.TOWN_ENDS), size=2, replace=False)
        towns = tuple(lx.TOWN_STARTS[a] + lx.TOWN_ENDS[b] for a, b in zip(starts, ends))
        return cls(topic, main, second, cast, towns)


class _Reading:
    """Slot fillers for one reading sentence."""

    PRONOUNS = ("she", "he", "they", "we", "I")

    def __init__(self, book: Book, lex: Lexicon, rng: np.random.Generator):
        self.book, self.lex, self.rng = book, lex, rng

    def c(self, items):
        return _choice(self.rng, items)

    def name(self):
        # the lead character comes up most often
        return self.book.cast[0] if self.rng.random() < 0.5 else self.c(self.book.cast[1:])

    def town(self):
        return self.c(self.book.towns)

    def person(self):
        return self.c(self.lex.people)

    def the_person(self):
        return "the " + self.person()

    def pron(self):
        return self.c(self.PRONOUNS)

    def subj_was(self, *, named: bool = True):
        subject = self.subj(named=named)
        return subject + (" were" if subject in ("we", "they") else " was")

    def subj(self, *, named: bool = True):
        r = self.rng.random() if named else 0.45 + 0.55 * self.rng.random()
        if r < 0.45:
            return self.name()
        if r < 0.7:
            return self.the_person()
        return self.pron()

    def adj(self):
        adjective = self.c(self.lex.adjectives)
        if adjective == getattr(self, "_last_adj", None):  # "the fallow fence was fallow enough"
            adjective = self.c(self.lex.adjectives)
        self._last_adj = adjective
        return adjective

    def noun(self):
        return self.c(self.lex.nouns)[0]

    def plural(self):
        noun = self.c(self.lex.nouns)[1]
        return f"{self.adj()} {noun}" if self.rng.random() < 0.5 else noun

    def np(self, *, named: bool = True):
        r = self.rng.random() * (1.0 if named else 0.85)
        if r < 0.45:
            return f"the {self.adj()} {self.noun()}"
        if r < 0.85:
            return f"the {self.noun()}"
        return f"{self.name()}'s {self.noun()}"

    def a_np(self):
        phrase = f"{self.adj()} {self.noun()}" if self.rng.random() < 0.6 else self.noun()
        return f"{article(phrase)} {phrase}"

    def place(self):
        if self.rng.random() < 0.78:
            return self.c(self.lex.places)
        return f"{self.c(('in', 'near', 'outside', 'on the road to'))} {self.town()}"

    def time(self):
        return self.c(lx.TIMES)

    def evaluation(self):
        return self.c(lx.EVALS)

    def vp(self, form: str):
        action = self.c(self.lex.actions)
        if action == getattr(self, "_last", None):  # "hauled the anchor, then hauled the anchor"
            action = self.c(self.lex.actions)
        self._last = action
        return getattr(action, form)

    def qty(self):
        return self.c(lx.QUANTITIES)

    def period(self):
        return self.c(lx.PERIODS)


READING_TEMPLATES = (
    lambda s: f"{s.subj()} {s.vp('past')} {s.place()} {s.time()}.",
    lambda s: f"{s.time()}, {s.subj()} {s.vp('past')}, and then {s.pron()} {s.vp('past')}.",
    lambda s: f"When {s.subj()} {s.vp('past')}, {s.np()} was {s.evaluation()}.",
    lambda s: f"Although {s.np()} was {s.adj()}, {s.subj()} {s.vp('past')} {s.place()}.",
    lambda s: f"{s.subj()} said that {s.np()} was {s.evaluation()}.",
    lambda s: f"Why did {s.subj()} {s.vp('base')} {s.place()}?",
    lambda s: f"Did {s.subj()} really {s.vp('base')} {s.time()}?",
    lambda s: f"There were {s.qty()} {s.plural()} {s.place()}, and each one was {s.adj()}.",
    lambda s: f"If you {s.vp('base')} {s.time()}, {s.np()} will be {s.evaluation()}.",
    lambda s: f"{s.subj()} spent the whole {s.period()} {s.vp('ing')} {s.place()}.",
    lambda s: f"Nobody in {s.town()} knew how to {s.vp('base')} quite like {s.name()}.",
    lambda s: f"{s.a_np()} had been left {s.place()}, and {s.name()} wanted to know why.",
    lambda s: f"{s.name()} asked {s.the_person()} whether {s.np()} was {s.adj()} enough.",
    lambda s: f"Where did you leave {s.np(named=False)}, {s.name()}?",
    lambda s: f"It was hard to {s.vp('base')} {s.place()}, but {s.subj()} did it anyway.",
    lambda s: f"Before {s.subj(named=False)} could {s.vp('base')}, {s.name()} {s.vp('past')}.",
    lambda s: (
        f"{s.the_person()} told {s.name()} to {s.vp('base')} before {s.np()} was {s.evaluation()}."
    ),
    lambda s: f"How long would it take to {s.vp('base')} {s.place()}?",
    lambda s: f"The {s.person()} who {s.vp('past')} {s.place()} was an old friend of {s.name()}.",
    lambda s: f"{s.name()} wondered whether anyone in {s.town()} had ever seen {s.a_np()}.",
    lambda s: f"{s.subj_was(named=False)} {s.vp('ing')} when {s.name()} came in from {s.town()}.",
)


def reading_sentence(book: Book, rng: np.random.Generator) -> str:
    lex = book.second if (book.second is not None and rng.random() < 0.2) else book.main
    template = READING_TEMPLATES[int(rng.integers(len(READING_TEMPLATES)))]
    return tidy(template(_Reading(book, lex, rng)))


def reading_utterance(book: Book, rng: np.random.Generator) -> str:
    """One read utterance: one or two sentences of the speaker's book."""
    n = 1 if rng.random() < 0.55 else 2
    return " ".join(reading_sentence(book, rng) for _ in range(n))


# ------------------------------------------------------------------------------------------------
# conversation


@dataclass
class Style:
    """A speaker's conversational habits: preferred fillers, the people they mention, and
    American or British everyday words."""

    start_fillers: np.ndarray
    hedges: np.ndarray
    parentheticals: np.ndarray
    people: tuple
    people_p: np.ndarray
    american: bool
    filler_rate: float

    @classmethod
    def create(
        cls, rng: np.random.Generator, *, american: bool, age_group: Optional[str]
    ) -> "Style":
        people = lx.EVERYDAY_PEOPLE + lx.AGE_PEOPLE.get(age_group, ())
        weights = np.array(
            [1.0] * len(lx.EVERYDAY_PEOPLE) + [2.0] * (len(people) - len(lx.EVERYDAY_PEOPLE))
        )
        return cls(
            start_fillers=rng.dirichlet(np.full(len(lx.FILLERS_START), 0.6)),
            hedges=rng.dirichlet(np.full(len(lx.HEDGES), 0.6)),
            parentheticals=rng.dirichlet(np.full(len(lx.PARENTHETICALS), 0.6)),
            people=people,
            people_p=weights / weights.sum(),
            american=american,
            filler_rate=float(rng.uniform(0.35, 0.8)),
        )


_AMERICAN = sorted(lx.AMERICAN_WORDS.items(), key=lambda kv: -len(kv[0]))
_AMERICAN_RE = re.compile(r"\b(" + "|".join(re.escape(k) for k, _ in _AMERICAN) + r")\b")


def americanise(text: str) -> str:
    return _AMERICAN_RE.sub(lambda m: lx.AMERICAN_WORDS[m.group(1)], text)


class _Talk:
    """Slot fillers for one conversational sentence."""

    def __init__(self, lex: Lexicon, style: Style, rng: np.random.Generator, mentioned: list):
        self.lex, self.style, self.rng, self.mentioned = lex, style, rng, mentioned

    def c(self, items):
        return _choice(self.rng, items)

    def f(self):
        """An optional sentence-initial filler with its comma."""
        if self.rng.random() >= self.style.filler_rate:
            return ""
        return _choice(self.rng, lx.FILLERS_START, self.style.start_fillers) + ", "

    def h(self):
        """An optional hedge before an adjective (``kind of``)."""
        if self.rng.random() >= self.style.filler_rate:
            return ""
        return _choice(self.rng, lx.HEDGES, self.style.hedges) + " "

    def p(self):
        """An optional parenthetical filler between commas (``, you know,``)."""
        if self.rng.random() >= 0.5 * self.style.filler_rate:
            return ""
        return ", " + _choice(self.rng, lx.PARENTHETICALS, self.style.parentheticals) + ","

    def tag(self):
        """An optional sentence-final tag (``, you know``)."""
        if self.rng.random() >= 0.5 * self.style.filler_rate:
            return ""
        return ", " + _choice(self.rng, lx.PARENTHETICALS, self.style.parentheticals)

    def who(self):
        return _choice(self.rng, self.style.people, self.style.people_p)

    def noun(self):
        singular, plural = self.c(self.lex.nouns)
        self.mentioned.append(singular)
        return singular

    def plural(self):
        singular, plural = self.c(self.lex.nouns)
        self.mentioned.append(singular)
        return plural

    def adj(self):
        return self.c(self.lex.adjectives)

    def a_adj_noun(self):
        phrase = f"{self.adj()} {self.noun()}"
        return f"{article(phrase)} {phrase}"

    def person(self):
        return self.c(self.lex.people)

    def place(self):
        return self.c(self.lex.places)

    def vp(self, form: str):
        return getattr(self.c(self.lex.actions), form)

    def evp(self, form: str):
        return getattr(self.c(EVERYDAY_ACTIONS), form)

    def when(self):
        return self.c(lx.EVERYDAY_TIMES)

    def habit(self):
        return self.c(lx.HABIT_TIMES)

    def opinion(self):
        return self.c(lx.OPINIONS)

    def feeling(self):
        return self.c(lx.FEELINGS)

    def thing(self):
        return self.c(lx.EVERYDAY_THINGS)


ECHOES = (
    "The {}? Yeah, I remember that.",
    "Oh, the {}! I'd forgotten about that.",
    "Wait, which {}?",
    "Right, the {}, of course.",
)

TOPIC_TALK = (
    lambda t: f"{t.f()}have you ever tried {t.vp('ing')}?",
    lambda t: f"{t.f()}I've always wanted to learn more about {t.plural()}.",
    lambda t: f"So what do you think about the {t.noun()}?",
    lambda t: f"{t.who()} used to {t.vp('base')} {t.place()}.",
    lambda t: f"The thing about {t.plural()} is that they're {t.h()}{t.adj()}{t.tag()}.",
    lambda t: f"{t.f()}we were talking about the {t.noun()} {t.when()}.",
    lambda t: f"I remember when {t.who()} {t.vp('past')} {t.place()}, it was {t.opinion()}.",
    lambda t: f"{t.f()}I think the {t.person()} should {t.vp('base')} first.",
    lambda t: f"Do you {t.vp('base')} {t.habit()}, or is that just me?",
    lambda t: f"{t.f()}I saw {t.a_adj_noun()} {t.when()}, and it was {t.opinion()}.",
    lambda t: f"{t.f()}it's {t.opinion()} to {t.vp('base')}, honestly.",
    lambda t: f"My favourite part is when the {t.person()} has to {t.vp('base')}.",
)

EVERYDAY_TALK = (
    lambda t: f"{t.f()}I {t.evp('past')} {t.when()}, and it was {t.opinion()}.",
    lambda t: f"{t.who()} always says that {t.thing()} is {t.opinion()}.",
    lambda t: f"I don't know, I think it depends on {t.thing()}{t.tag()}.",
    lambda t: f"Do you ever {t.evp('base')} {t.habit()}?",
    lambda t: (
        f"That's {t.opinion()}, because I {t.evp('past')} {t.when()} and I was so {t.feeling()}."
    ),
    lambda t: f"{t.f()}I would rather {t.evp('base')} than {t.evp('base')}.",
    lambda t: (
        f"{t.f()}I was{t.p()} {t.h()}{t.feeling()} {t.when()}, so I just wanted to {t.evp('base')}."
    ),
    lambda t: f"{t.who()} and I {t.evp('past')} {t.when()}.",
    lambda t: f"{t.f()}I usually {t.evp('base')} {t.habit()}.",
    lambda t: f"{t.f()}{t.thing()} has been {t.opinion()} lately{t.tag()}.",
    lambda t: f"What about you, do you {t.evp('base')} {t.habit()}?",
)


@dataclass
class Conversation:
    """One episode: a topic and the words mentioned so far (partners echo each other)."""

    topic: str
    lex: Lexicon = field(init=False)
    mentioned: list = field(default_factory=list)

    def __post_init__(self):
        self.lex = LEXICONS[self.topic]

    def turn(self, style: Style, rng: np.random.Generator, *, first: bool = False) -> str:
        """One conversational turn: a reaction, or one to three sentences, topic or everyday."""
        sentences = []
        if not first and rng.random() < 0.12:
            sentences.append(_choice(rng, lx.REACTIONS))
        else:
            if not first and self.mentioned and rng.random() < 0.12:
                echo = self.mentioned[-1 - int(rng.integers(min(3, len(self.mentioned))))]
                sentences.append(_choice(rng, ECHOES).format(echo))
            elif not first and rng.random() < 0.2:
                sentences.append(_choice(rng, lx.REACTIONS))
            n = int(rng.choice([1, 2, 3], p=[0.35, 0.45, 0.2]))
            talk = _Talk(self.lex, style, rng, self.mentioned)
            for _ in range(n):
                pool = TOPIC_TALK if rng.random() < 0.45 else EVERYDAY_TALK
                sentences.append(pool[int(rng.integers(len(pool)))](talk))
        text = " ".join(tidy(s) for s in sentences)
        return americanise(text) if style.american else text


SCRIPTED_PASSAGE = lx.SCRIPTED_PASSAGE
