"""A stylometric scorer: how a speaker talks rather than what about.

Five feature blocks per side (probe or enrollment), each turned into a unit vector; the score
is the weighted mean of the per-block cosines (``weights``; a block with weight 0 is skipped):

- ``char``: character 2-4-grams within word boundaries (sublinear TF-IDF): spelling of
  contractions, morphology, favourite word endings;
- ``skeleton``: word 1-3-grams of the *masked* text, in which every word that is not a function
  word, discourse marker or filler becomes ``*`` (text distortion, Stamatatos 2017): the
  syntactic frame with the topic words removed;
- ``function``: relative frequencies of ~170 English function words;
- ``discourse``: relative frequencies of discourse markers ("you know", "i mean", "like",
  "actually", "kind of", ...);
- ``fluency``: per-word rates of filled pauses (uh, um, er, erm, hmm, ...), immediate word
  repetitions, cut-off words (``wor-``), non-speech tags (``<laugh>``), contractions, plus mean
  word length, mean utterance length, and the share of first-person singular pronouns.

The three frequency blocks are standardised before the cosine, as in Burrows' Delta: each
feature's side-level mean and standard deviation are estimated at ``fit`` from pseudo-sides,
consecutive chunks of ``chunk_words`` words of the fitted texts, so that a score never depends
on which other trials are scored. Sides are built from per-utterance counts with one sparse
product, so scoring is vectorised over trials like the TF-IDF scorer.
"""

from __future__ import annotations

import re

import numpy as np
from scipy import sparse

from .base import TextScorer, l2_normalise_rows, paired_dot, side_matrix

FUNCTION_WORDS = tuple(
    sorted(
        set(
            """
a about above after again against all am an and any are aren't as at be because been before being
below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves
out over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their
theirs them themselves then there there's these they they'd they'll they're they've this those through
to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
where where's which while who who's whom why why's with won't would wouldn't you you'd you'll you're
you've your yours yourself yourselves gonna wanna gotta ain't y'know also just really quite maybe
perhaps probably still even though although whether either neither yet since upon onto within without
""".split()
        )
    )
)

DISCOURSE_MARKERS = (
    "you know",
    "i mean",
    "like",
    "so",
    "well",
    "actually",
    "basically",
    "literally",
    "right",
    "okay",
    "ok",
    "anyway",
    "anyways",
    "kind of",
    "sort of",
    "i think",
    "i guess",
    "i suppose",
    "you see",
    "obviously",
    "honestly",
    "definitely",
    "absolutely",
    "exactly",
    "totally",
    "oh",
    "yeah",
    "yes",
    "no",
    "yep",
    "nah",
    "alright",
    "all right",
    "cool",
    "wow",
    "now",
    "then",
    "and then",
    "but yeah",
    "or something",
    "and stuff",
    "or whatever",
    "at the end of the day",
    "to be honest",
    "the thing is",
    "i feel like",
)
FILLERS = frozenset("uh um er erm ah hmm mm mhm uhm umm uh-huh hm eh".split())
FIRST_PERSON = frozenset("i me my mine myself i'm i've i'd i'll".split())
FLUENCY_FEATURES = (
    "filled_pause",
    "repetition",
    "cut_off",
    "tag",
    "contraction",
    "word_length",
    "utterance_length",
    "first_person",
)
BLOCKS = ("char", "skeleton", "function", "discourse", "fluency")
DEFAULT_WEIGHTS = {"char": 1.0, "skeleton": 1.0, "function": 1.0, "discourse": 0.5, "fluency": 0.5}

_TOKEN = re.compile(r"<[^>]*>|[a-z0-9]+(?:['\-][a-z0-9]*)*")


def tokens(text: str) -> list:
    return _TOKEN.findall(text.lower())


def _marker_pattern(markers):
    alts = sorted(markers, key=len, reverse=True)
    return re.compile(r"(?<![\w'])(?:" + "|".join(re.escape(m) for m in alts) + r")(?![\w'])")


class _CountIdf:
    """Counts per text, summed per side, then sublinear TF (1 + log) times smoothed IDF."""

    def __init__(self, vectorizer):
        self.vectorizer = vectorizer

    def fit(self, docs):
        from sklearn.feature_extraction.text import TfidfTransformer

        counts = self.vectorizer.fit_transform(docs)
        self.idf_ = TfidfTransformer(smooth_idf=True).fit(counts).idf_
        return self

    def sides(self, A, docs):
        S = (A @ self.vectorizer.transform(docs)).tocsr()
        S.data = 1.0 + np.log(S.data)
        return (S @ sparse.diags(self.idf_)).tocsr()


class StylometricScorer(TextScorer):
    name = "stylometric"
    languages = ("en",)  # English function words and discourse markers

    def __init__(
        self,
        weights=None,
        char_ngrams=(2, 4),
        skeleton_ngrams=(1, 3),
        chunk_words: int = 150,
        min_df: int = 2,
    ):
        self.weights = {**DEFAULT_WEIGHTS, **dict(weights or {})}
        unknown = set(self.weights) - set(BLOCKS)
        if unknown:
            raise ValueError(
                f"unknown stylometric blocks {sorted(unknown)}; known: {', '.join(BLOCKS)}"
            )
        if sum(max(0.0, float(w)) for w in self.weights.values()) <= 0:
            raise ValueError("at least one stylometric block needs a positive weight")
        self.char_ngrams = tuple(char_ngrams)
        self.skeleton_ngrams = tuple(skeleton_ngrams)
        self.chunk_words = int(chunk_words)
        self.min_df = int(min_df)
        self._fw_index = {w: i for i, w in enumerate(FUNCTION_WORDS)}
        self._dm_index = {m: i for i, m in enumerate(DISCOURSE_MARKERS)}
        self._dm_re = _marker_pattern(DISCOURSE_MARKERS)
        self._keep = (
            frozenset(FUNCTION_WORDS) | FILLERS | {w for m in DISCOURSE_MARKERS for w in m.split()}
        )
        self.fitted_ = False

    def deviations(self) -> dict:
        return {"scorer": "stylometric: not one of the paper's scorers (A.2); this project's own"}

    def settings(self) -> dict:
        return {
            "weights": dict(self.weights),
            "char_ngrams": list(self.char_ngrams),
            "skeleton_ngrams": list(self.skeleton_ngrams),
            "chunk_words": self.chunk_words,
            "min_df": self.min_df,
        }

    # -- per-utterance counts ----------------------------------------------------------------
    def _skeleton(self, toks) -> str:
        return " ".join(
            t if (t in self._keep) else ("<tag>" if t.startswith("<") else "*") for t in toks
        )

    def _counts(self, texts):
        """Dense per-text counts: function words, discourse markers, fluency numerators; words."""
        n = len(texts)
        fw = np.zeros((n, len(FUNCTION_WORDS)))
        dm = np.zeros((n, len(DISCOURSE_MARKERS)))
        fl = np.zeros((n, len(FLUENCY_FEATURES)))
        words = np.zeros(n)
        for i, text in enumerate(texts):
            toks = tokens(text)
            spoken = [t for t in toks if not t.startswith("<")]
            words[i] = len(spoken)
            for t in spoken:
                j = self._fw_index.get(t)
                if j is not None:
                    fw[i, j] += 1
            low = " ".join(spoken)
            for m in self._dm_re.findall(low):
                dm[i, self._dm_index[m]] += 1
            fl[i, 0] = sum(t in FILLERS for t in spoken)
            fl[i, 1] = sum(a == b for a, b in zip(spoken, spoken[1:]))
            fl[i, 2] = sum(t.endswith("-") for t in spoken)
            fl[i, 3] = len(toks) - len(spoken)
            fl[i, 4] = sum("'" in t for t in spoken)
            fl[i, 5] = sum(len(t) for t in spoken)
            fl[i, 6] = 1.0  # one utterance: utterance_length = words / utterances
            fl[i, 7] = sum(t in FIRST_PERSON for t in spoken)
        return fw, dm, fl, words

    @staticmethod
    def _rates(fw, dm, fl, words):
        w = np.maximum(words, 1.0)[:, None]
        fluency = fl / w
        fluency[:, 6] = words / np.maximum(fl[:, 6], 1.0)  # words per utterance
        return fw / w, dm / w, fluency

    # -- fit -----------------------------------------------------------------------------------
    def fit(self, texts):
        from sklearn.feature_extraction.text import CountVectorizer

        texts = list(dict.fromkeys(texts))  # unique, order kept
        if not texts:
            raise ValueError("stylometric scorer: no texts to fit on")
        min_df = min(self.min_df, len(texts))
        self.char_ = _CountIdf(
            CountVectorizer(
                analyzer="char_wb", ngram_range=self.char_ngrams, min_df=min_df, lowercase=True
            )
        ).fit(texts)
        self.skel_ = _CountIdf(
            CountVectorizer(
                analyzer="word",
                ngram_range=self.skeleton_ngrams,
                min_df=min_df,
                token_pattern=r"\S+",
                lowercase=False,
            )
        )
        self.skel_.fit([self._skeleton(tokens(t)) for t in texts])
        # side-level statistics from pseudo-sides of ~chunk_words words
        fw, dm, fl, words = self._counts(texts)
        chunk_of = np.floor(np.cumsum(words) / max(self.chunk_words, 1)).astype(int)
        _, chunk_of = np.unique(chunk_of, return_inverse=True)
        G = sparse.csr_matrix((np.ones(len(texts)), (chunk_of, np.arange(len(texts)))))
        rates = self._rates(G @ fw, G @ dm, G @ fl, G @ words)
        self.mean_ = [r.mean(axis=0) for r in rates]
        self.std_ = [np.where(r.std(axis=0) > 1e-9, r.std(axis=0), 1.0) for r in rates]
        self.fitted_ = True
        return self

    # -- score ---------------------------------------------------------------------------------
    def block_vectors(self, trials) -> dict:
        """block -> (sides x features) unit-norm rows."""
        if not self.fitted_:
            self.fit(trials.texts)
        A = side_matrix(trials)
        out = {}
        if self.weights.get("char", 0) > 0:
            out["char"] = l2_normalise_rows(self.char_.sides(A, trials.texts))
        if self.weights.get("skeleton", 0) > 0:
            skeletons = [self._skeleton(tokens(t)) for t in trials.texts]
            out["skeleton"] = l2_normalise_rows(self.skel_.sides(A, skeletons))
        if any(self.weights.get(b, 0) > 0 for b in ("function", "discourse", "fluency")):
            fw, dm, fl, words = self._counts(trials.texts)
            rates = self._rates(A @ fw, A @ dm, A @ fl, A @ words)
            for b, r, mu, sd in zip(
                ("function", "discourse", "fluency"), rates, self.mean_, self.std_
            ):
                if self.weights.get(b, 0) > 0:
                    out[b] = l2_normalise_rows((r - mu) / sd)
        return out

    def score(self, trials) -> np.ndarray:
        from .base import as_trialset

        trials = as_trialset(trials)
        if len(trials) == 0:
            return np.zeros(0)
        blocks = self.block_vectors(trials)
        total = sum(self.weights[b] for b in blocks)
        scores = np.zeros(len(trials))
        for b, V in blocks.items():
            scores += self.weights[b] * paired_dot(V, V, trials.probe_side, trials.enroll_side)
        return scores / total
