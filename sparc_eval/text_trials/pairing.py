"""What the trial builders of every task share (the rules are in :mod:`~sparc_eval.text_trials.trials`).

:class:`TrialPairing` holds one manifest's appearances and probes at one P, the eligibility
tables (speaker, episode, series codes per appearance), the candidate pools of a probe (same
episode; other episodes after the topic filter), the overlap and name screens, the
topic-matched drawing of cross-episode pairs, and the turning of plans into a
:class:`~.trial_set.TrialSet` at each L. What a task draws from a pool is in
:mod:`.speaker_trials` and :mod:`.attribute_trials`; :class:`~.trials.TrialBuilder` puts them
together.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass
from json.encoder import encode_basestring  # a string as JSON, as json.dumps writes it
from typing import TYPE_CHECKING, Optional

import numpy as np

from ..arrays import first_sight_codes, ranges_positions, sorted_runs
from ..errors import DataError
from .materialise import HEAD, TAIL, TrialMaterialiser, enroll_id
from .probes import Probe, appearances, cut_probes
from .topic import TopicIndex, has_topic_metadata
from .trial_set import EN, HP, TYPE_CONDITIONS, TrialSet, dumps

if TYPE_CHECKING:
    from .trials import TrialConfig

WHOLE_VIEW_AFTER = 512  # candidates read, at least, before a probe's topic view covers its pool
EXACT_POOL_MAX = 1024  # candidate universes up to this size are filtered whole (draw_order)
MAX_TRIES = 4096  # candidates tried one by one before the rest is filtered at once (draw_order)
#: the size up to which a category bin of a large pool is read whole when first drawn from (one
#: vectorised read of a few hundred rows costs about what two rejection batches cost, and a
#: rare stratum, most speaker positives, takes several batches)
BIN_LIST_MAX = 512
_NAME_RE = re.compile(r"^[^\W\d_][^\W\d_ .'\-]*(?:[ .'\-]+[^\W\d_]+)*\.?$")


# ----------------------------------------------------------------------------- helpers


def norm_utt(text: str) -> str:
    """An utterance as the overlap screen compares it: lower-cased, white space collapsed."""
    return " ".join(text.lower().split())


def probe_rng(seed: int, *parts) -> np.random.Generator:
    """A generator seeded by ``seed`` and ``parts`` (task, P, probe id): a probe's own draws."""
    key = zlib.crc32("|".join(str(p) for p in parts).encode("utf-8"))
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, key])


def int_codes(values):
    """Integer codes for a list of hashables; None -> -1."""
    table, out = {}, []
    for v in values:
        if v is None:
            out.append(-1)
        else:
            out.append(table.setdefault(v, len(table)))
    return np.asarray(out, dtype=np.int64)


def group_index(codes: np.ndarray) -> dict:
    """code -> the ascending indices holding it (codes < 0 left out): one sort, not a pass per code."""
    order, starts = sorted_runs(codes)
    groups = np.split(order, starts[1:])
    return {int(codes[order[i]]): g for i, g in zip(starts, groups) if codes[order[i]] >= 0}


def draw_order(
    rng: np.random.Generator, universe: np.ndarray, accept=None, *, members=None, lazy=False
):
    """The members of ``universe`` (ascending indices) that ``accept`` (a vectorised mask) keeps,
    yielded in a uniformly random order, lazily.

    A universe of up to ``EXACT_POOL_MAX`` is filtered and shuffled whole (so every corpus that
    size or smaller keeps the trials earlier versions drew). A larger one is sampled by rejection:
    uniform positions, each tried once, in growing batches, so a probe that needs one partner
    reads a few dozen candidates, not the corpus; once ``MAX_TRIES`` candidates or a quarter of the
    universe have been tried (few members accepted), the untried rest is filtered and shuffled in
    one vectorised pass. The first tries of uniform draws are a uniform random order of the ones
    tried, and the rest shuffled after any such stopping point keeps the whole order uniform, so
    both paths draw partners uniformly without replacement.

    ``members`` (ascending positions in ``universe``) may stand for ``accept`` when the members are
    already known (a stratum listed at once): they are shuffled whole, the small universe's draw at
    any size, and an empty list draws nothing from ``rng``.

    ``lazy`` samples a universe of any size by rejection: a part of a larger universe (a category
    bin, :class:`ProbeTopicView`), whose draws are uniform, not the small corpus's.
    """
    if members is not None or (len(universe) <= EXACT_POOL_MAX and not lazy):
        candidates = universe[members] if members is not None else universe[accept(universe)]
        if len(candidates):
            yield from rng.permutation(candidates).tolist()
        return
    # the tried positions as a set, not a mask the universe's size: a probe's few tries then
    # cost the same in any corpus, where zeroing a mask per draw grew with it
    n, tried, batch = len(universe), set(), 16
    while 4 * len(tried) < n and len(tried) < MAX_TRIES:
        positions = []
        for p in rng.integers(0, n, size=batch).tolist():  # each position once, in the order drawn
            if p not in tried:
                tried.add(p)
                positions.append(p)
        candidates = universe[np.asarray(positions, dtype=np.int64)]
        yield from candidates[accept(candidates)].tolist()
        batch *= 2
    untried = np.ones(n, dtype=bool)
    untried[np.fromiter(tried, np.int64, len(tried))] = False
    rest = universe[untried]
    yield from rng.permutation(rest[accept(rest)]).tolist()


def _firsts(values: np.ndarray):
    """The distinct values of an array and where each is first seen, as two lists."""
    at = first_sight_codes(values)[1]
    return values[at].tolist(), at.tolist()


def name_patterns(speakers, attributes: dict, config: "TrialConfig") -> dict:
    """speaker -> compiled regex of its name tokens, for speakers with a known name.

    :param config: where a speaker's name is found (``speaker_names``, then ``name_fields``).
    :type config: ~sparc_eval.text_trials.trials.TrialConfig
    """
    out = {}
    for spk in speakers:
        name = None
        if config.speaker_names and spk in config.speaker_names:
            name = config.speaker_names[spk]
        if name is None:
            attrs = attributes.get(spk, {})
            name = next((attrs.get(f) for f in config.name_fields if attrs.get(f)), None)
        if name is None and _NAME_RE.match(str(spk).strip()):
            name = str(spk)
        if not name:
            continue
        tokens = sorted(
            {t.lower() for t in re.split(r"[\s.\-_]+", str(name)) if len(t) >= 3 and t.isalpha()}
        )
        if tokens:
            out[spk] = re.compile(
                r"\b(?:" + "|".join(re.escape(t) for t in tokens) + r")\b", re.IGNORECASE
            )
    return out


@dataclass
class Pool:
    """One probe's generator and same-episode appearances. Other episodes are never listed per
    probe (that is quadratic in the corpus): a task draws them lazily
    (:meth:`TrialPairing.cross_take`, :meth:`TrialPairing.matched`)."""

    rng: np.random.Generator
    same_ep: np.ndarray


class ProbeTopicView:
    """A probe's topic view (:meth:`TrialPairing.topic_view`) of its negative universe, shared by
    the draws for all its positives and by the other probes of its appearance (the same episode
    and the same filter, :meth:`TrialPairing.negative_view`): batch by batch while draws read few
    candidates, then, once they have read a quarter of the universe (and ``WHOLE_VIEW_AFTER``),
    the whole universe in one product with its rows (cached per universe), looked up from then
    on: the product then costs at most four times the reads, where a fixed count made it
    quadratic in the corpus (more probes of a rare stratum reach it, and each reads a larger pool).

    A stratum that asks for shared categories is drawn among the pool's episodes whose category
    set is in its Jaccard bin only (:meth:`universe_of`; the pool is grouped by category set
    once): listed at once (:meth:`members`), in one read for all its strata, when the universe
    holds at most ``EXACT_POOL_MAX`` appearances, the bin at most ``BIN_LIST_MAX``, or its draws
    have read a quarter of the bin (a rare stratum: most speaker positives, whose title
    similarity is above 0.05 with the same categories), else drawn lazily within the bin by
    rejection, so a probe reads a few candidates of a common stratum, not a bin that grows with
    the corpus. The values are the same either way, and so are the draws from a pool of at most
    ``EXACT_POOL_MAX`` (:func:`draw_order`); from a larger one both are uniform."""

    def __init__(self, pairing: "TrialPairing", ep: int, universe: np.ndarray, accept):
        self.pairing, self.ep, self.universe, self.accept = pairing, ep, universe, accept
        self.read, self.whole, self.by_stratum = 0, None, {}
        # per Jaccard bin: its rows in the category groups, positions and whole view (each once)
        self.bin_rows, self.bins, self.bin_views, self.read_in_bin = {}, {}, {}, Counter()

    @property
    def lazy_bins(self) -> bool:
        """True where bins are drawn lazily until found rare, in a universe above
        ``EXACT_POOL_MAX`` (a smaller one lists its bins at once, the draws earlier versions
        made)."""
        return len(self.universe) > EXACT_POOL_MAX

    def __call__(self, cands: np.ndarray):
        self.read += len(cands)
        if self.whole is None and self.read < max(WHOLE_VIEW_AFTER, len(self.universe) // 4):
            return self.pairing.topic_view(self.ep, cands)
        if self.whole is None:
            self.whole = self.pairing.topic_view_whole(self.ep, self.universe)
        at = np.searchsorted(self.universe, cands)
        return self.whole[0][at], self.whole[1][at]

    def _rows(self, jaccard_bin: int):
        """The bin's rows in the pool's category groups (:meth:`TrialPairing.category_bin_rows`)."""
        if jaccard_bin not in self.bin_rows:
            self.bin_rows[jaccard_bin] = self.pairing.category_bin_rows(
                self.ep, self.universe, jaccard_bin
            )
        return self.bin_rows[jaccard_bin]

    def _bin(self, jaccard_bin: int) -> np.ndarray:
        """Ascending positions in the universe of the episodes in ``jaccard_bin`` (kept per bin)."""
        if jaccard_bin not in self.bins:
            self.bins[jaccard_bin] = self.pairing.category_bin_positions(
                self.ep, self.universe, jaccard_bin, rows=self._rows(jaccard_bin)
            )
        return self.bins[jaccard_bin]

    def _bin_view(self, jaccard_bin: int):
        """(positions, kept, stratum) of the whole bin, read once for all its strata."""
        if jaccard_bin not in self.bin_views:
            self.bin_views[jaccard_bin] = self.pairing.category_bin_view(
                self.ep, self.universe, jaccard_bin, rows=self._rows(jaccard_bin)
            )
        return self.bin_views[jaccard_bin]

    def _listed(self, stratum: int) -> bool:
        """Whether ``stratum``'s bin is listed whole: in a universe of at most ``EXACT_POOL_MAX``
        (the draws earlier versions made), a bin of at most ``BIN_LIST_MAX`` (a fixed count of
        rows per probe, read in one pass), a bin already read whole, or one whose draws have read
        a quarter of it (a rare stratum)."""
        jaccard_bin = stratum % 100
        if not self.lazy_bins or jaccard_bin in self.bin_views:
            return True
        size = len(self._rows(jaccard_bin)[0])  # the bin's rows, one per appearance
        return size <= BIN_LIST_MAX or 4 * self.read_in_bin[stratum] >= size

    def universe_of(self, stratum: int) -> np.ndarray:
        """Where a lazy draw for ``stratum`` looks: its Jaccard bin's appearances when it asks for
        shared categories (and no whole view exists), else the whole universe."""
        if self.whole is None and int(stratum) % 100 > 0:
            return self.universe[self._bin(int(stratum) % 100)]
        return self.universe

    def in_stratum(self, cands: np.ndarray, stratum: int) -> np.ndarray:
        """Which candidates lie in ``stratum`` (kept by the topic filter); reads within a bin
        count toward listing it, reads of the whole universe toward the whole view."""
        stratum = int(stratum)
        if self.whole is None and stratum % 100 > 0:
            self.read_in_bin[stratum] += len(cands)
            kept, strata = self.pairing.topic_view(self.ep, cands)
        else:
            kept, strata = self(cands)
        return kept & (strata == stratum)

    def members(self, stratum: int, used: list):
        """Ascending positions in the universe of the negatives of ``stratum`` not in ``used``
        (kept by the topic filter and the probe's ``accept``); None where they are drawn lazily
        (:meth:`universe_of`): no shared category asked and no whole view yet, or, in a universe
        larger than ``EXACT_POOL_MAX``, a bin not yet found rare (less than a quarter of it read)."""
        stratum = int(stratum)
        if stratum not in self.by_stratum:
            if self.whole is not None:
                at = np.arange(len(self.universe))
                kept, strata = self.whole
            elif stratum % 100 > 0:
                if not self._listed(stratum):
                    return None
                at, kept, strata = self._bin_view(stratum % 100)
            else:
                return None
            ok = kept & (strata == stratum)
            self.by_stratum[stratum] = at[ok][self.accept(self.universe[at[ok]])]
        found = self.by_stratum[stratum]
        return found[~np.isin(self.universe[found], used)] if used else found


@dataclass(slots=True)
class Plan:
    probe: Probe
    partner: int  # appearance index
    position: str  # "tail" (same episode) or "head" (other episode)
    type: str
    label: bool


# ----------------------------------------------------------------------------- pairing


class TrialPairing:
    """Probes, eligibility tables, pools and screens for one manifest at one P (all tasks, all L).

    :param config: the trial settings.
    :type config: ~sparc_eval.text_trials.trials.TrialConfig
    """

    def __init__(self, manifest, config: "TrialConfig", *, L_max: Optional[int] = None):
        self.config = config
        self.manifest = manifest
        self.L_max = int(L_max or config.L)
        self.apps = appearances(manifest)
        if not self.apps:
            raise DataError(
                f"{getattr(manifest, 'name', 'manifest')}: no utterance with text",
                hint="SPARC trials need transcripts",
            )
        self.attributes = manifest.speaker_attributes()
        ep_names = self._index_appearances()
        self._cut_probes()
        self.short_for_L = int((self.app_n < self.L_max).sum())
        # topic control
        mode = config.topic_control
        if mode == "auto":
            mode = "on" if has_topic_metadata(manifest) else "off"
        self.topic_on = mode in ("on", True)
        self.topic = TopicIndex(manifest, ep_names) if self.topic_on else None
        if self.topic_on:  # per episode, once: what the filter removes from a probe's pool
            self.topic_excluded, self.topic_sample = self.topic.excluded_appearances(
                self.app_ep, config.topic_max_similarity, config.seed
            )
        self.names = (
            name_patterns(sorted({a.speaker for a in self.apps}), self.attributes, config)
            if config.name_screen != "off"
            else {}
        )
        self._task = None
        self._norm_cache = {}  # appearance -> its normalised utterances (screen)
        self._probe_norms = (None, set())  # the last probe screened and its normalised utterances
        self._stats = {}
        self._materialiser = TrialMaterialiser(self)  # text codes shared by its trial sets
        # trial lines' parts as JSON: probe -> its part, L -> enrollment code -> its part
        self._parts = ({}, {})
        self._of_universe = {}  # (id(universe), what) -> (universe, what was made of it)
        self._view = (None, None)  # the last appearance's negative view (negative_view)

    def _index_appearances(self) -> list:
        """Speaker, episode and series codes and utterance counts per appearance, appearances
        per episode; returns the episode names (sorted; the episode codes index them)."""
        ep_names = sorted({a.episode for a in self.apps})
        ep_index = {e: i for i, e in enumerate(ep_names)}
        self.app_spk = int_codes([a.speaker for a in self.apps])
        self.app_ep = np.asarray([ep_index[a.episode] for a in self.apps], dtype=np.int64)
        self.app_series = int_codes([a.series for a in self.apps])
        self.app_n = np.asarray([len(a.ids) for a in self.apps], dtype=np.int64)
        self.all_apps = np.arange(len(self.apps), dtype=np.int64)
        self.speaker_apps = group_index(self.app_spk)
        self.by_episode = defaultdict(list)
        for a in self.apps:
            self.by_episode[self.app_ep[a.index]].append(a.index)
        return ep_names

    def _cut_probes(self) -> None:
        config = self.config
        self.probes, self.n_cut, self.n_skipped, self.short_for_P = [], 0, 0, 0
        self.n_capped = 0
        for a in self.apps:
            ps, c, s = cut_probes(
                a, int(config.P), int(config.tolerance), bool(config.strict), int(config.max_probes)
            )
            self.probes.extend(ps)
            self.n_cut += c
            self.n_skipped += s
            if not ps:
                self.short_for_P += 1
            elif len(ps) == config.max_probes:
                more, _, _ = cut_probes(
                    a, int(config.P), int(config.tolerance), bool(config.strict), 10**9
                )
                self.n_capped += len(more) - len(ps)
        # a probe's index among the probes: its appearance's first probe's + its number (probes
        # are cut appearance after appearance, numbered from 0 in each)
        probe_apps = np.fromiter((p.app for p in self.probes), np.int64, len(self.probes))
        self.probe_start = np.searchsorted(probe_apps, np.arange(len(self.apps)))

    # -- enrollment utterance indices of an appearance for a plan
    def enroll_indices(self, plan: Plan, L: int) -> list:
        app = self.apps[plan.partner]
        if plan.position == "head":
            return list(range(min(L, len(app.ids))))
        if plan.partner == plan.probe.app:
            rest = [i for i in range(len(app.ids)) if not plan.probe.start <= i < plan.probe.stop]
        else:
            rest = list(range(len(app.ids)))
        return rest[-L:]

    # -- screens
    def _norm_set(self, app: int, idx) -> set:
        """The normalised utterances ``idx`` of an appearance long enough for the overlap screen,
        each normalised once (kept in a list per appearance)."""
        a = self.apps[app]
        norms = self._norm_cache.get(app)
        if norms is None:
            norms = self._norm_cache[app] = [None] * len(a.texts)
        out = set()
        for i in idx:
            if a.words[i] >= self.config.overlap_min_words:
                if norms[i] is None:
                    norms[i] = norm_utt(a.texts[i])
                out.add(norms[i])
        return out

    def _probe_norm(self, probe: Probe) -> set:
        """A probe's normalised utterances for the overlap screen (made once for its plans, which
        come one after another)."""
        if self._probe_norms[0] is not probe:
            least = self.config.overlap_min_words
            norms = {norm_utt(t) for t in probe.texts if len(t.split()) >= least}
            self._probe_norms = (probe, norms)
        return self._probe_norms[1]

    def screen(self, plan: Plan, counts: Counter) -> bool:
        """True when the trial passes the overlap and name screens (checked with L_max)."""
        if not self.config.overlap_screen and not self.names:
            return True  # both screens off: nothing to read
        probe = plan.probe
        idx = self.enroll_indices(plan, self.L_max)
        enroll_app = self.apps[plan.partner]
        if self.config.overlap_screen:
            if self._probe_norm(probe) & self._norm_set(plan.partner, idx):
                counts["excluded_overlap"] += 1
                return False
        if self.names and (
            self.config.name_screen == "all" or (self._task == "speaker" and plan.label)
        ):
            probe_spk = self.apps[probe.app].speaker
            pat = self.names.get(probe_spk)
            if pat is not None and any(pat.search(enroll_app.texts[i]) for i in idx):
                counts["excluded_name"] += 1
                return False
            pat = self.names.get(enroll_app.speaker)
            if pat is not None and any(pat.search(t) for t in probe.texts):
                counts["excluded_name"] += 1
                return False
        return True

    # -- pools and draws
    def pool(self, probe: Probe, task: str, counts: Counter) -> Pool:
        """The probe's candidates, with its own generator (seeded by seed, task, P, probe id)."""
        a = probe.app
        same_ep = np.asarray([b for b in self.by_episode[self.app_ep[a]] if b != a], dtype=np.int64)
        rng = probe_rng(self.config.seed, task, self.config.P, probe.id)
        if self.topic_on:
            counts["excluded_topic_similarity"] += self.topic_excluded[self.app_ep[a]]
        return Pool(rng, same_ep)

    def topic_view(self, ep: int, cands: np.ndarray):
        """(kept, stratum) of candidate appearances for a probe of episode ``ep``: kept when in
        another episode and within ``topic_max_similarity`` (the topic control only)."""
        others = self.app_ep[cands]
        sims = self.topic.similarity(ep, others)
        kept = (others != ep) & (sims <= self.config.topic_max_similarity)
        return kept, self.strata(sims, self.topic.jaccard(ep, others))

    def per_universe(self, universe: np.ndarray, what: str, make):
        """``make(universe)``, made once per candidate universe and kept (with the universe, so
        that its id is not reused)."""
        key = (id(universe), what)
        if key not in self._of_universe:
            self._of_universe[key] = (universe, make(universe))
        return self._of_universe[key][1]

    def topic_view_whole(self, ep: int, universe: np.ndarray):
        """:meth:`topic_view` of a whole universe, from its rows' TF-IDF block (kept per universe)."""
        rows = self.per_universe(universe, "rows", lambda u: self.topic.rows(self.app_ep[u]))
        others = self.app_ep[universe]
        sims = self.topic.similarity_to_rows(ep, rows, len(others))
        kept = (others != ep) & (sims <= self.config.topic_max_similarity)
        return kept, self.strata(sims, self.topic.jaccard(ep, others))

    def negative_view(self, app: int, universe: np.ndarray, accept) -> ProbeTopicView:
        """The topic view of appearance ``app``'s negatives (``universe`` filtered by ``accept``):
        made once for the probes of an appearance in a task (they come one after another), since
        what it holds depends only on the episode, the universe and the filter."""
        key = (self._task, app, id(universe))
        if self._view[0] != key:
            self._view = (key, ProbeTopicView(self, self.app_ep[app], universe, accept))
        return self._view[1]

    def category_groups(self, universe: np.ndarray):
        """The universe grouped by its episodes' category sets (kept per universe): (positions in
        group order, group starts and ends, each group's set code, the TF-IDF rows in that order)."""

        def make(u):
            codes = self.topic.category_code[self.app_ep[u]]
            order, starts = sorted_runs(codes)
            ends = np.r_[starts[1:], len(order)]
            return order, starts, ends, codes[order[starts]], self.topic.rows(self.app_ep[u[order]])

        return self.per_universe(universe, "category groups", make)

    def _bin_groups(self, ep: int, universe: np.ndarray, jaccard_bin: int):
        """The category groups of ``universe`` whose set's Jaccard with episode ``ep``'s is in
        ``jaccard_bin``: (group indices, their Jaccard values)."""
        _, _, _, codes, _ = self.category_groups(universe)
        jac = self.topic.set_jaccard(ep, codes)
        picked = np.flatnonzero(np.digitize(jac, self.config.topic_jaccard_edges) == jaccard_bin)
        return picked, jac[picked]

    def category_bin_positions(self, ep: int, universe: np.ndarray, jaccard_bin: int, rows):
        """Ascending positions in ``universe`` of the appearances whose episode's category set has
        its Jaccard similarity with episode ``ep``'s in ``jaccard_bin`` (``rows``: the bin's
        :meth:`category_bin_rows`)."""
        return np.sort(self.category_groups(universe)[0][rows[0]])

    def category_bin_rows(self, ep: int, universe: np.ndarray, jaccard_bin: int):
        """The groups of ``_bin_groups`` as rows of :meth:`category_groups`' order: (their
        positions there, group after group, each group's size, each group's Jaccard value)."""
        _, starts, ends, _, _ = self.category_groups(universe)
        picked, jac = self._bin_groups(ep, universe, jaccard_bin)
        lengths = ends[picked] - starts[picked]
        return ranges_positions(starts[picked], lengths), lengths, jac

    def category_bin_view(self, ep: int, universe: np.ndarray, jaccard_bin: int, rows):
        """(positions, kept, stratum) of :meth:`category_bin_positions`, as :meth:`topic_view`
        gives them, from the groups' rows (``rows``: the bin's :meth:`category_bin_rows`; kept
        per universe, one range per group, read in one pass) and each group's one Jaccard value,
        not a Jaccard per candidate."""
        order, _, _, _, block = self.category_groups(universe)
        in_rows, lengths, jac = rows
        if not len(lengths):
            return universe[:0], np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
        at = order[in_rows]
        if len(lengths) == 1:  # one category group (the same set): consecutive rows
            sims = self.topic.similarity_of_range(ep, block, in_rows[0], in_rows[0] + lengths[0])
        else:
            sims = self.topic.similarity_of_rows(ep, block, in_rows)
        jaccard = np.repeat(jac, lengths)
        kept = (self.app_ep[universe[at]] != ep) & (sims <= self.config.topic_max_similarity)
        ascending = np.argsort(at, kind="stable")
        return at[ascending], kept[ascending], self.strata(sims, jaccard)[ascending]

    def same_series(self, a: int, cands: np.ndarray) -> np.ndarray:
        """Which candidates share the probe's series (both known and equal)."""
        return (self.app_series[cands] == self.app_series[a]) & (self.app_series[cands] >= 0)

    def strata(self, sims, jac):
        s = np.digitize(sims, self.config.topic_sim_edges)
        j = np.digitize(jac, self.config.topic_jaccard_edges)
        return s * 100 + j

    def take(self, rng, probe, candidates, k, position, label_of, counts, type_of):
        """Up to k screened partners from candidates (random order)."""
        if k <= 0 or len(candidates) == 0:
            return []
        return self._screened(
            rng.permutation(np.asarray(candidates)).tolist(),
            probe,
            k,
            position,
            label_of,
            counts,
            type_of,
        )

    def cross_take(self, rng, probe, universe, accept, k, label_of, counts, type_of):
        """Up to k screened head partners from other episodes: the members of ``universe`` (ascending
        appearance indices) that ``accept`` keeps and that lie outside the probe's episode, drawn
        lazily (:func:`draw_order`)."""
        if k <= 0:
            return []
        ep = self.app_ep[probe.app]
        order = draw_order(rng, universe, lambda c: (self.app_ep[c] != ep) & accept(c))
        return self._screened(order, probe, k, "head", label_of, counts, type_of)

    def _screened(self, order, probe, k, position, label_of, counts, type_of) -> list:
        out = []
        for c in order:
            label = label_of(int(c))
            plan = Plan(probe, int(c), position, type_of(label), label)
            if self.screen(plan, counts):
                out.append(plan)
                if len(out) >= k:
                    break
        return out

    def matched(self, rng, probe, positives, negatives, k, counts, labels=(True, False)):
        """Topic-controlled cross-episode pairs: up to k positives, each with a same-stratum negative.

        ``positives`` and ``negatives`` are (universe, accept): ascending appearance indices and a
        vectorised filter, as :func:`draw_order` takes them; the topic filter (other episode,
        similarity within the limit) is applied here, to the candidates drawn. Positives come in a
        uniformly random order, and each screened one gets a uniformly drawn, screened, unused
        negative of its stratum (or counts as unmatched). A universe up to ``EXACT_POOL_MAX`` is
        filtered whole, which draws exactly what listing every other episode did.
        """
        ep, used = self.app_ep[probe.app], []
        pos_universe, pos_accept = positives
        neg_universe, neg_accept = negatives
        neg_view = self.negative_view(probe.app, neg_universe, neg_accept)
        lazy = neg_view.lazy_bins  # a bin of a large universe: rejection at any size
        plans, pos_strata = [], {}  # a drawn positive's stratum, kept from its topic view

        def positive(c):
            kept, strata = self.topic_view(ep, c)
            ok = kept & pos_accept(c)
            pos_strata.update(zip(c[ok].tolist(), strata[ok].tolist()))
            return ok

        for p in draw_order(rng, pos_universe, positive):
            if len(plans) >= 2 * k:
                break
            pos = Plan(probe, int(p), "head", HP, labels[0])
            if not self.screen(pos, counts):
                continue
            stratum = pos_strata[p]

            def negative(c, stratum=stratum):
                return neg_view.in_stratum(c, stratum) & neg_accept(c) & ~np.isin(c, used)

            members = neg_view.members(stratum, used)
            universe = neg_universe if members is not None else neg_view.universe_of(stratum)
            neg = None
            for j in draw_order(rng, universe, negative, members=members, lazy=lazy):
                plan = Plan(probe, int(j), "head", EN, labels[1])
                if self.screen(plan, counts):
                    neg = plan
                    used.append(int(j))
                    break
            if neg is None:
                counts["unmatched_positives"] += 1
                continue
            plans.extend([pos, neg])
        return plans

    # -- trial sets
    def materialise(self, task: str, plans: list, L: int) -> TrialSet:
        """The TrialSet of plans at L: each unique text and side (probe or enrollment) once, the
        fields the metrics read as columns, and records built when read
        (:class:`~sparc_eval.text_trials.trial_set.LazyRecords`); made from arrays
        (:class:`~.materialise.TrialMaterialiser`)."""
        return self._materialiser.trial_set(task, plans, L)

    @staticmethod
    def _where_code(plan: Plan) -> int:
        """Which part of the partner's appearance enrolls: ``HEAD``, ``TAIL`` (of another
        appearance, :mod:`~.materialise`) or k (the tail without probe k)."""
        if plan.position == "head":
            return HEAD
        return plan.probe.k if plan.partner == plan.probe.app else TAIL

    def _enroll_id(self, plan: Plan, L: int) -> str:
        prefix = self._materialiser.id_prefix[plan.partner]
        return enroll_id(prefix, self._where_code(plan), L)

    def record(self, task: str, n: int, plan: Plan, L: int, idx: list) -> dict:
        """Trial ``n``'s JSON record: ids, type, label, conditions, probe and enrollment."""
        return {
            **self._record_head(task, n, plan, L),
            "probe": self._probe_part(plan),
            "enroll": self._enroll_part(plan, L, idx),
        }

    def json_lines(self, task: str, L: int, plans: list, columns, chunk) -> str:
        """:meth:`record` of the plans ``chunk[0]`` (``columns``: the plans' PlanColumns) as
        ``json.dumps`` writes them, a line each. Each part is dumped once and shared: the
        fields after the id per kind (type, label and position) through ``chunk[1]``, a dict the
        set's lines share; a probe's part, and an enrollment's at one L, through the builder's
        ``_parts``, as every task's sets show the same (made from the first plan in the chunk
        that has it). A line then joins parts read by code, with no plan read."""
        index, parts = chunk
        heads, (probes, enrolls) = parts.setdefault("head", {}), self._parts
        enrolls = enrolls.setdefault(L, {})
        kind, probe, enroll = columns.kinds[index], columns.probe[index], columns.enroll[index]
        for code, at in zip(*_firsts(kind)):
            if code not in heads:
                fields = self._record_head(task, 0, plans[int(index[at])], L)
                del fields["id"]
                heads[code] = dumps(fields)[1:-1]
        for code, at in zip(*_firsts(probe)):
            if code not in probes:
                probes[code] = dumps(self._probe_part(plans[int(index[at])]))
        for code, at in zip(*_firsts(enroll)):
            if code not in enrolls:
                plan = plans[int(index[at])]
                enrolls[code] = dumps(self._enroll_part(plan, L, self.enroll_indices(plan, L)))
        prefix = encode_basestring(self._trial_id(task, 0, L))[:-7]  # the id less n and quote
        rows = zip(index.tolist(), kind.tolist(), probe.tolist(), enroll.tolist())
        return "".join(
            [
                f'{{"id": {prefix}{n:06d}", {heads[k]}, "probe": {probes[p]}, '
                f'"enroll": {enrolls[e]}}}\n'
                for n, k, p, e in rows
            ]
        )

    def _trial_id(self, task: str, n: int, L: int) -> str:
        return f"{task}/P{int(self.config.P)}_L{L}/{n:06d}"

    def _record_head(self, task: str, n: int, plan: Plan, L: int) -> dict:
        return {
            "id": self._trial_id(task, n, L),
            "task": task,
            "P": int(self.config.P),
            "L": L,
            "type": plan.type,
            "label": int(plan.label),
            "conditions": list(TYPE_CONDITIONS[plan.type]),
            "same_episode": plan.position == "tail",
        }

    def _probe_part(self, plan: Plan) -> dict:
        probe = plan.probe
        papp = self.apps[probe.app]
        return {
            "id": probe.id,
            "speaker": papp.speaker,
            "episode": papp.episode,
            "utt_ids": papp.ids[probe.start : probe.stop],
            "n_words": probe.n_words,
            "cut_words": probe.cut_words,
        }

    def _enroll_part(self, plan: Plan, L: int, idx: list) -> dict:
        partner = self.apps[plan.partner]
        return {
            "id": self._enroll_id(plan, L),
            "speaker": partner.speaker,
            "episode": partner.episode,
            "utt_ids": [partner.ids[i] for i in idx],
            "position": plan.position,
        }

    def stats(self, task: str) -> dict:
        """Counts for the report: appearances skipped, probes cut/skipped, trials excluded.
        ``appearances_too_short_for_L``: appearances with fewer utterances than the largest L
        (they enroll with what they have)."""
        c = self._stats.get(task, Counter())
        return {
            "appearances": len(self.apps),
            "appearances_too_short_for_P": self.short_for_P,
            "appearances_too_short_for_L": self.short_for_L,
            "probes": len(self.probes),
            "probes_cut": self.n_cut,
            "probes_skipped_strict": self.n_skipped,
            "probes_beyond_cap": self.n_capped,
            "probes_unknown_label": c.get("probes_unknown_label", 0),
            "probes_without_trials": c.get("probes_without_trials", 0),
            "excluded_overlap": c.get("excluded_overlap", 0),
            "excluded_name": c.get("excluded_name", 0),
            "excluded_topic_similarity": int(round(c.get("excluded_topic_similarity", 0))),
            "excluded_topic_similarity_sample": self.topic_sample if self.topic_on else None,
            "unmatched_positives": c.get("unmatched_positives", 0),
            "topic_control": self.topic_on,
            "speakers_with_names": len(self.names),
            "L_screened": self.L_max,
        }
