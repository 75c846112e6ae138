"""What the trial builders of every task share (the rules are in :mod:`~sparc_eval.jobs.text.trials`).

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
from typing import TYPE_CHECKING, Optional

import numpy as np

from ...errors import DataError
from .probes import Probe, appearances, clean_id, cut_probes
from .topic import TopicIndex, has_topic_metadata
from .trial_set import EN, HP, TYPE_CONDITIONS, LazyRecords, TrialSet

if TYPE_CHECKING:
    from .trials import TrialConfig

WHOLE_VIEW_AFTER = 512  # candidates read before a probe's topic view covers its whole pool
EXACT_POOL_MAX = 1024  # candidate universes up to this size are filtered whole (draw_order)
MAX_TRIES = 4096  # candidates tried one by one before the rest is filtered at once (draw_order)
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
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    groups = np.split(order, starts[1:])
    return {int(sorted_codes[i]): g for i, g in zip(starts, groups) if sorted_codes[i] >= 0}


def draw_order(rng: np.random.Generator, universe: np.ndarray, accept=None, *, members=None):
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
    """
    if members is not None or len(universe) <= EXACT_POOL_MAX:
        candidates = universe[members] if members is not None else universe[accept(universe)]
        if len(candidates):
            yield from rng.permutation(candidates).tolist()
        return
    n, tried, n_tried, batch = len(universe), np.zeros(len(universe), dtype=bool), 0, 16
    while 4 * n_tried < n and n_tried < MAX_TRIES:
        positions = rng.integers(0, n, size=batch)
        _, first = np.unique(positions, return_index=True)
        positions = positions[np.sort(first)]  # each position once, in the order drawn
        positions = positions[~tried[positions]]
        tried[positions] = True
        n_tried += len(positions)
        candidates = universe[positions]
        yield from candidates[accept(candidates)].tolist()
        batch *= 2
    rest = universe[~tried]
    yield from rng.permutation(rest[accept(rest)]).tolist()


def name_patterns(speakers, attributes: dict, config: "TrialConfig") -> dict:
    """speaker -> compiled regex of its name tokens, for speakers with a known name.

    :param config: where a speaker's name is found (``speaker_names``, then ``name_fields``).
    :type config: ~sparc_eval.jobs.text.trials.TrialConfig
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
    the draws for all its positives: batch by batch while draws read few candidates, then, once
    they have read ``WHOLE_VIEW_AFTER``, the whole universe in one product with its rows (cached
    per universe), looked up from then on.

    The negatives of a stratum are listed at once (:meth:`members`) where that is cheap: when the
    stratum asks for shared categories, only the pool's episodes whose category set is in its
    Jaccard bin can belong (the pool is grouped by category set once), and once the whole view
    exists, a lookup. A rare or empty stratum (a positive's title similarity above 0.05, the same
    categories: most speaker positives) then costs a pass over those few candidates, not rejection
    rounds and a pass over the pool. The values are the same either way, and so are the draws from
    a pool of at most ``EXACT_POOL_MAX`` (:func:`draw_order`); from a larger one both are uniform."""

    def __init__(self, pairing: "TrialPairing", ep: int, universe: np.ndarray, accept):
        self.pairing, self.ep, self.universe, self.accept = pairing, ep, universe, accept
        self.read, self.whole, self.by_stratum = 0, None, {}

    def __call__(self, cands: np.ndarray):
        self.read += len(cands)
        if self.whole is None and self.read < WHOLE_VIEW_AFTER:
            return self.pairing.topic_view(self.ep, cands)
        if self.whole is None:
            self.whole = self.pairing.topic_view_whole(self.ep, self.universe)
        at = np.searchsorted(self.universe, cands)
        return self.whole[0][at], self.whole[1][at]

    def members(self, stratum: int, used: list):
        """Ascending positions in the universe of the negatives of ``stratum`` not yet ``used``
        (kept by the topic filter and the probe's ``accept``); None where listing them would
        read the whole pool (no shared category asked, no whole view yet): drawn by rejection."""
        stratum = int(stratum)
        if stratum not in self.by_stratum:
            if self.whole is not None:
                at = np.arange(len(self.universe))
                kept, strata = self.whole
            elif stratum % 100 > 0:  # the stratum's Jaccard bin: some category shared
                at = self.pairing.category_bin_positions(self.ep, self.universe, stratum % 100)
                kept, strata = self.pairing.topic_view(self.ep, self.universe[at])
            else:
                return None
            ok = kept & (strata == stratum)
            found = at[ok][self.accept(self.universe[at[ok]])]
            self.by_stratum[stratum] = found[~np.isin(self.universe[found], used)]
        return self.by_stratum[stratum]

    def use(self, candidate: int, stratum: int) -> None:
        """A negative was taken: it leaves its stratum's members."""
        members = self.by_stratum.get(int(stratum))
        if members is not None:
            at = np.searchsorted(self.universe, candidate)
            self.by_stratum[int(stratum)] = members[members != at]


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
    :type config: ~sparc_eval.jobs.text.trials.TrialConfig
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
        self._norm_cache = {}
        self._stats = {}
        # text codes shared by every trial set this builder makes (materialise)
        self._codes, self._code_texts, self._app_codes, self._probe_code_cache = {}, [], {}, {}
        self._of_universe = {}  # (id(universe), what) -> (universe, what was made of it)

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
        out = set()
        a = self.apps[app]
        for i in idx:
            if a.words[i] >= self.config.overlap_min_words:
                key = (app, i)
                if key not in self._norm_cache:
                    self._norm_cache[key] = norm_utt(a.texts[i])
                out.add(self._norm_cache[key])
        return out

    def screen(self, plan: Plan, counts: Counter) -> bool:
        """True when the trial passes the overlap and name screens (checked with L_max)."""
        if not self.config.overlap_screen and not self.names:
            return True  # both screens off: nothing to read
        probe = plan.probe
        idx = self.enroll_indices(plan, self.L_max)
        enroll_app = self.apps[plan.partner]
        if self.config.overlap_screen:
            probe_norm = {
                norm_utt(t) for t in probe.texts if len(t.split()) >= self.config.overlap_min_words
            }
            if probe_norm & self._norm_set(plan.partner, idx):
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

    def category_bin_positions(self, ep: int, universe: np.ndarray, jaccard_bin: int):
        """Ascending positions in ``universe`` of the appearances whose episode's category set has
        its Jaccard similarity with episode ``ep``'s in ``jaccard_bin`` (the universe grouped by
        category set once, kept per universe)."""
        groups = self.per_universe(
            universe,
            "category sets",
            lambda u: group_index(self.topic.category_code[self.app_ep[u]]),
        )
        codes = np.fromiter(groups, dtype=np.int64, count=len(groups))
        bins = np.digitize(self.topic.set_jaccard(ep, codes), self.config.topic_jaccard_edges)
        picked = [groups[c] for c in codes[bins == jaccard_bin].tolist()]
        return np.sort(np.concatenate(picked)) if picked else universe[:0]

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
        neg_view = ProbeTopicView(self, ep, neg_universe, neg_accept)
        plans = []
        for p in draw_order(rng, pos_universe, lambda c: self.topic_view(ep, c)[0] & pos_accept(c)):
            if len(plans) >= 2 * k:
                break
            pos = Plan(probe, int(p), "head", HP, labels[0])
            if not self.screen(pos, counts):
                continue
            stratum = self.topic_view(ep, np.asarray([p]))[1][0]

            def negative(c, stratum=stratum):
                kept, strata = neg_view(c)
                return kept & (strata == stratum) & neg_accept(c) & ~np.isin(c, used)

            members = neg_view.members(stratum, used)
            neg = None
            for j in draw_order(rng, neg_universe, negative, members=members):
                plan = Plan(probe, int(j), "head", EN, labels[1])
                if self.screen(plan, counts):
                    neg = plan
                    used.append(int(j))
                    neg_view.use(int(j), stratum)
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
        (:class:`~sparc_eval.jobs.text.trial_set.LazyRecords`)."""
        side_index, side_codes, side_ids = {}, [], []
        probe_side = np.empty(len(plans), dtype=np.int64)
        enroll_side = np.empty(len(plans), dtype=np.int64)
        n_short = 0
        for n, plan in enumerate(plans):
            probe = plan.probe
            key = (probe.app, probe.k, -1)  # integer keys: cheap to hash
            if key not in side_index:
                side_index[key] = len(side_codes)
                side_codes.append(self._probe_codes(probe))
                side_ids.append(probe.id)
            probe_side[n] = side_index[key]
            idx = self.enroll_indices(plan, L)
            n_short += len(idx) < L
            key = (plan.partner, self._where_code(plan), L)
            if key not in side_index:
                side_index[key] = len(side_codes)
                side_codes.append(self._utterance_codes(plan.partner)[idx])
                side_ids.append(self._enroll_id(plan, L))
            enroll_side[n] = side_index[key]
        texts, sides = self._local_texts(side_codes)
        side_ids = np.asarray(side_ids, dtype=object)
        meta = {"task": task, "P": int(self.config.P), "L": L, "enrollments_short_of_L": n_short}
        columns = {
            "type": [p.type for p in plans],
            "probe_id": side_ids[probe_side] if len(plans) else [],
            "probe_speaker": [self.apps[p.probe.app].speaker for p in plans],
            "enroll_id": side_ids[enroll_side] if len(plans) else [],
            "enroll_speaker": [self.apps[p.partner].speaker for p in plans],
        }
        records = LazyRecords(
            lambda n: self._record(task, n, plans[n], L, self.enroll_indices(plans[n], L)),
            np.arange(len(plans)),
        )
        labels = [p.label for p in plans]
        return TrialSet(
            texts, sides, probe_side, enroll_side, labels, records, meta=meta, columns=columns
        )

    def _text_code(self, text: str) -> int:
        """The builder-wide code of a text (equal texts, one code), shared by every trial set."""
        code = self._codes.get(text)
        if code is None:
            code = self._codes[text] = len(self._code_texts)
            self._code_texts.append(text)
        return code

    def _utterance_codes(self, app: int) -> np.ndarray:
        """Text codes of an appearance's utterances (computed once per appearance)."""
        codes = self._app_codes.get(app)
        if codes is None:
            codes = self._app_codes[app] = np.asarray(
                [self._text_code(t) for t in self.apps[app].texts], dtype=np.int64
            )
        return codes

    def _probe_codes(self, probe: Probe) -> np.ndarray:
        """Text codes of a probe's utterances (its last one may be cut: its own text)."""
        codes = self._probe_code_cache.get(probe.id)
        if codes is None:
            codes = self._probe_code_cache[probe.id] = np.asarray(
                [self._text_code(t) for t in probe.texts], dtype=np.int64
            )
        return codes

    def _local_texts(self, side_codes: list):
        """(texts, sides) of one trial set: its texts in order of first use (as sides were
        made, probe before enrollment), sides as indices into them."""
        if not side_codes:
            return [], []
        flat = np.concatenate(side_codes)
        at = np.arange(len(flat))
        first = np.full(len(self._code_texts), len(flat), dtype=np.int64)
        np.minimum.at(first, flat, at)  # each code's first position: linear, where a sort is not
        used = flat[first[flat] == at]
        local = np.full(len(self._code_texts), -1, dtype=np.int64)
        local[used] = np.arange(len(used))
        bounds = np.cumsum([len(c) for c in side_codes])[:-1]
        return [self._code_texts[c] for c in used.tolist()], np.split(local[flat], bounds)

    @staticmethod
    def _where_code(plan: Plan) -> int:
        """:meth:`_where` as an integer: -1 head, -2 tail, k tail without probe k."""
        if plan.position == "head":
            return -1
        return plan.probe.k if plan.partner == plan.probe.app else -2

    @classmethod
    def _where(cls, plan: Plan) -> str:
        """Which part of the partner's appearance enrolls: head, tail, or tail without the probe."""
        code = cls._where_code(plan)
        return {-1: "head", -2: "tail"}.get(code, f"tail-without-p{code}")

    def _enroll_id(self, plan: Plan, L: int) -> str:
        partner = self.apps[plan.partner]
        return f"{clean_id(partner.speaker)}/{clean_id(partner.episode)}/{self._where(plan)}-L{L}"

    def _record(self, task: str, n: int, plan: Plan, L: int, idx: list) -> dict:
        """Trial ``n``'s JSON record: ids, type, label, conditions, probe and enrollment."""
        probe, partner = plan.probe, self.apps[plan.partner]
        papp = self.apps[probe.app]
        P = int(self.config.P)
        return {
            "id": f"{task}/P{P}_L{L}/{n:06d}",
            "task": task,
            "P": P,
            "L": L,
            "type": plan.type,
            "label": int(plan.label),
            "conditions": list(TYPE_CONDITIONS[plan.type]),
            "same_episode": plan.position == "tail",
            "probe": {
                "id": probe.id,
                "speaker": papp.speaker,
                "episode": papp.episode,
                "utt_ids": papp.ids[probe.start : probe.stop],
                "n_words": probe.n_words,
                "cut_words": probe.cut_words,
            },
            "enroll": {
                "id": self._enroll_id(plan, L),
                "speaker": partner.speaker,
                "episode": partner.episode,
                "utt_ids": [partner.ids[i] for i in idx],
                "position": plan.position,
            },
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
