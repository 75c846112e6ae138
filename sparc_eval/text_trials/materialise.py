"""Plans into trial sets (:meth:`~.pairing.TrialPairing.materialise`), as arrays.

A task's plans are read once into columns (probe, partner, where the enrollment lies, label,
type); at each L the sides (probes and enrollments) are numbered in order of first use through a
table indexed by their keys, each side's utterances are one or two ranges of its appearance, and
the texts of every utterance are numbered once per manifest, by their hashes (checked against
the texts; :class:`CorpusTexts`), so that a trial set costs a few passes over arrays, not a
dictionary lookup per text and a Python step per trial. A set's texts are codes into its
builder's distinct texts (:class:`~.trial_set.CodedTexts`). What comes out is what the per-trial
loop made: the same texts in the same order, the same sides, ids and columns.
"""

from __future__ import annotations

import weakref
from functools import cached_property
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from ..arrays import codes_of_positions, first_positions, first_sight_codes, ranges_positions
from .probes import clean_id
from .trial_set import TRIAL_TYPES, CodedTexts, LazyRecords, Sides, TrialSet

if TYPE_CHECKING:
    from .pairing import TrialPairing

#: Where an enrollment lies in its appearance, as a code. HEAD and TAIL are the head and tail of
#: another appearance; a code k >= 0 is the tail of the probe's own appearance without probe k.
HEAD, TAIL = -1, -2
_UNSEEN = np.iinfo(np.int32).max  # a code not yet met in a trial set (_local_texts)
_TYPES = np.array(TRIAL_TYPES, dtype=object)
_TYPE_CODE = {t: i for i, t in enumerate(TRIAL_TYPES)}


def enroll_prefix(app) -> str:
    """The start of an enrollment id: the appearance's speaker and episode."""
    return f"{clean_id(app.speaker)}/{clean_id(app.episode)}/"


def enroll_id(prefix: str, where: int, L: int) -> str:
    """An enrollment's id: speaker/episode/where-L (where: head, tail or tail-without-p<k>)."""
    name = {HEAD: "head", TAIL: "tail"}.get(where) or f"tail-without-p{where}"
    return f"{prefix}{name}-L{L}"


def text_codes(texts: list):
    """``(codes, distinct)``: one code per text, equal texts one code, numbered in order of first
    sight, and the distinct texts in that order (:func:`text_positions`)."""
    codes, first = codes_of_positions(text_positions(texts))
    return codes, [texts[i] for i in first.tolist()]


def text_positions(texts: list) -> np.ndarray:
    """Where each text is first seen in ``texts`` (equal texts share it). Texts are told apart
    by their hashes, and every text whose hash was seen earlier is compared with that earlier
    text (a collision falls back to telling the texts themselves apart)."""
    return _text_positions(texts)[0]


def _text_positions(texts: list):
    """(:func:`text_positions`, the texts' hashes)."""
    hashes = np.fromiter(map(hash, texts), dtype=np.int64, count=len(texts))
    at = first_positions(hashes)
    for i in np.flatnonzero(at != np.arange(len(texts))).tolist():
        if texts[i] != texts[at[i]]:  # two texts, one hash
            table = {}
            numbered = (table.setdefault(t, len(table)) for t in texts)
            return first_positions(np.fromiter(numbered, np.int64, len(texts))), hashes
    return at, hashes


class CorpusTexts:
    """The utterance texts of a manifest's appearances (appearance after appearance, ``space``),
    each coded once by the position of its first sight there (:func:`text_positions`), and
    shared by the trial builders of every P on that manifest (:func:`corpus_texts`): each
    builder then codes only its cut probes' last utterances (:meth:`with_more`), not the whole
    corpus again. Codes are positions, not ranks, so that no list of the distinct texts is made:
    at 10^6 texts each string read (a reference taken) misses the caches."""

    def __init__(self, texts: list):
        self.space = texts  # builders append the cut texts the corpus lacks (with_more)
        self.n = len(texts)
        self.codes, self._hashes = _text_positions(texts)
        self._lookup = None  # (first sights by hash, their sorted hashes, unique?), when needed

    def with_more(self, more: list) -> np.ndarray:
        """The codes of ``more``: an equal text's code in the corpus, found by its hash (checked
        against the text), or else the position in ``space`` where it is appended (equal texts
        appended once)."""
        codes = self._find(more)
        missing = np.flatnonzero(codes < 0)
        if len(missing):
            texts = [more[i] for i in missing.tolist()]
            codes[missing] = len(self.space) + text_positions(texts)
            self.space.extend(texts)
        return codes

    def _find(self, more: list) -> np.ndarray:
        """Each text's code in the corpus, or -1."""
        if not len(more) or not self.n:
            return np.full(len(more), -1, dtype=np.int64)
        if self._lookup is None:
            firsts = np.flatnonzero(self.codes == np.arange(self.n))
            hashes = self._hashes[firsts]
            order = np.argsort(hashes)
            ordered = hashes[order]
            self._lookup = (firsts[order], ordered, bool((ordered[1:] != ordered[:-1]).all()))
            self._hashes = None
        by_hash, sorted_hashes, unique = self._lookup
        hashes = np.fromiter(map(hash, more), dtype=np.int64, count=len(more))
        at = np.minimum(np.searchsorted(sorted_hashes, hashes), len(by_hash) - 1)
        codes = np.where(sorted_hashes[at] == hashes, by_hash[at], -1)
        if unique and all(more[i] == self.space[codes[i]] for i in np.flatnonzero(codes >= 0)):
            return codes
        by_text = {}  # two texts, one hash: found by the texts themselves
        for i in np.flatnonzero(self.codes == np.arange(self.n)).tolist():
            by_text[self.space[i]] = i
        return np.fromiter((by_text.get(t, -1) for t in more), np.int64, len(more))


_CORPUS_TEXTS = weakref.WeakKeyDictionary()  # manifest -> its CorpusTexts


def corpus_texts(pairing: "TrialPairing") -> CorpusTexts:
    """The :class:`CorpusTexts` of the pairing's manifest (the builders of every P share its
    appearances), made by the first builder that asks."""
    try:
        shared = _CORPUS_TEXTS.get(pairing.manifest)
    except TypeError:  # a manifest that cannot be weakly referenced: not shared
        shared = None
    if shared is None or shared.n != int(pairing.app_n.sum()):
        shared = CorpusTexts(list(chain.from_iterable(a.texts for a in pairing.apps)))
        try:
            _CORPUS_TEXTS[pairing.manifest] = shared
        except TypeError:
            pass
    return shared


class PlanColumns:
    """One task's plans as arrays: probe (its index among the builder's probes), probe
    appearance, partner appearance, where the enrollment lies, label and type."""

    def __init__(self, pairing: "TrialPairing", plans: list):
        n = len(plans)

        def column(field: str, dtype, convert=None):  # map: no Python frame per plan
            values = map(attrgetter(field), plans)
            return np.fromiter(values if convert is None else map(convert, values), dtype, n)

        self.probe_app = column("probe.app", np.int64)
        probe_k = column("probe.k", np.int64)
        self.probe = pairing.probe_start[self.probe_app] + probe_k
        self.partner = column("partner", np.int64)
        head = column("position", bool, "head".__eq__)
        own = self.partner == self.probe_app
        self.where = np.where(head, HEAD, np.where(own, probe_k, TAIL))
        self.labels = column("label", bool)
        type_code = column("type", np.int64, _TYPE_CODE.__getitem__)
        self.types = _TYPES[type_code]
        # type, label and position in one code: a trial line's fields after its id
        self.kinds = 4 * type_code + 2 * self.labels + head
        # the enrollment in one code: the head or tail of an appearance, or a probe's own tail
        # without it (its side's key)
        tail = 2 * self.partner + (self.where == TAIL)
        self.enroll = np.where(self.where < 0, tail, 2 * len(pairing.app_n) + self.probe)


class TrialMaterialiser:
    """Trial sets of one builder's plans: the builder-wide text numbering (made at the first
    trial set) and each task's plan columns (kept for its next L)."""

    def __init__(self, pairing: "TrialPairing"):
        # a weak reference: the builder holds its materialiser, and a cycle would keep a finished
        # builder alive while the collector is paused (heap_frozen) until every P is done
        self._pairing = weakref.ref(pairing)
        self._plans = (None, None)  # the last plans list and its columns
        self.utt_code = None  # text code of every utterance, appearance after appearance

    @property
    def pairing(self) -> "TrialPairing":
        return self._pairing()

    def _number_texts(self) -> None:
        p = self.pairing
        shared = corpus_texts(p)
        cut = [i for i, probe in enumerate(p.probes) if probe.cut_words is not None]
        self.cut_code = np.full(len(p.probes), -1, dtype=np.int64)  # a cut last utterance's code
        self.cut_code[cut] = shared.with_more([p.probes[i].texts[-1] for i in cut])
        self.utt_code, self.code_texts = shared.codes, shared.space
        # _local_texts' table, an entry per code this builder uses (int32, half the cache: a
        # set's utterances number far below 2^31)
        self._code_table = np.full(len(shared.space), _UNSEEN, dtype=np.int32)
        self.app_offset = np.r_[0, np.cumsum(p.app_n)]
        self.probe_range = np.array(
            [(probe.start, probe.stop) for probe in p.probes], dtype=np.int64
        ).reshape(-1, 2)
        self.probe_ids = np.array([probe.id for probe in p.probes], dtype=object)
        self.speakers = np.array([a.speaker for a in p.apps], dtype=object)

    @cached_property
    def id_prefix(self) -> np.ndarray:
        """Each appearance's :func:`enroll_prefix`, an object array (made once: trial files and
        records read it)."""
        return np.array([enroll_prefix(a) for a in self.pairing.apps], dtype=object)

    def columns(self, plans: list) -> PlanColumns:
        if self._plans[0] is not plans:
            self._plans = (plans, PlanColumns(self.pairing, plans))
        return self._plans[1]

    def trial_set(self, task: str, plans: list, L: int) -> TrialSet:
        """The TrialSet of ``plans`` at ``L`` (see the module docstring)."""
        if L < 1:
            raise ValueError(f"L={L}: an enrollment holds at least one utterance")
        if self.utt_code is None:
            self._number_texts()
        c = self.columns(plans)
        n = len(plans)
        side_of, first = first_sight_codes(*self._side_keys(c))
        plan_of, is_enroll = first // 2, (first % 2).astype(bool)
        starts, lengths = self._side_ranges(c, plan_of, is_enroll, L)
        flat = self.utt_code[ranges_positions(starts.ravel(), lengths.ravel())]
        side_len = lengths.sum(axis=1)
        ends = np.cumsum(side_len)
        probe_sides = np.flatnonzero(~is_enroll)
        cut = self.cut_code[c.probe[plan_of[probe_sides]]]
        flat[ends[probe_sides[cut >= 0]] - 1] = cut[cut >= 0]
        texts, local = self._local_texts(flat)
        side_ids = self._side_ids(c, plan_of, is_enroll, L)
        probe_side, enroll_side = side_of[0::2], side_of[1::2]
        meta = {
            "task": task,
            "P": int(self.pairing.config.P),
            "L": L,
            "enrollments_short_of_L": int((side_len[enroll_side] < L).sum()),
        }
        columns = {
            "type": c.types,
            "probe_id": side_ids[probe_side],
            "probe_speaker": self.speakers[c.probe_app],
            "enroll_id": side_ids[enroll_side],
            "enroll_speaker": self.speakers[c.partner],
        }
        pairing = self.pairing
        records = LazyRecords(
            lambda i: pairing.record(task, i, plans[i], L, pairing.enroll_indices(plans[i], L)),
            np.arange(n),
            lines=lambda *chunk: pairing.json_lines(task, L, plans, c, chunk),
        )
        sides = Sides(local, ends)  # the sides' texts, one flat array: no array per side
        return TrialSet(
            texts, sides, probe_side, enroll_side, c.labels, records, meta=meta, columns=columns
        )

    def _side_keys(self, c: PlanColumns):
        """(keys, size): each plan's probe side, then its enrollment side, as one integer below
        ``size`` (the sides in order of first use are their first-sight codes): a probe, then
        the head or tail of an appearance, then the probe's own tail without it."""
        n_probes, n_apps = len(self.probe_range), len(self.app_offset) - 1
        keys = np.empty(2 * len(c.probe), dtype=np.int64)
        keys[0::2] = c.probe
        keys[1::2] = n_probes + c.enroll
        return keys, 2 * n_probes + 2 * n_apps

    def _side_ranges(self, c: PlanColumns, plan_of, is_enroll, L: int):
        """(starts, lengths), each sides x 2: a side's utterances as up to two ranges of flat
        utterance positions (a probe: its run; an enrollment: ``enroll_indices``' rule)."""
        probe = c.probe[plan_of]
        app = np.where(is_enroll, c.partner[plan_of], c.probe_app[plan_of])
        where = np.where(is_enroll, c.where[plan_of], HEAD)  # a probe side: one range, set below
        n_utts = self.pairing.app_n[app]
        lo, hi = self.probe_range[probe, 0], self.probe_range[probe, 1]
        # the last L of the appearance, or of what is left without the probe (two ranges)
        after = n_utts - hi
        first_lo = np.where(where == HEAD, 0, np.maximum(0, n_utts - L))
        first_hi = np.where(where == HEAD, np.minimum(L, n_utts), n_utts)
        split = (where >= 0) & (after < L)
        first_lo = np.where(split, np.maximum(0, lo - (L - after)), first_lo)
        first_hi = np.where(split, lo, first_hi)
        second_lo = np.where(split, hi, 0)
        second_hi = np.where(split, n_utts, 0)
        first_lo = np.where(is_enroll, first_lo, lo)
        first_hi = np.where(is_enroll, first_hi, hi)
        base = self.app_offset[app]
        starts = np.stack([base + first_lo, base + second_lo], axis=1)
        lengths = np.stack([first_hi - first_lo, second_hi - second_lo], axis=1)
        return starts, lengths

    def _side_ids(self, c: PlanColumns, plan_of, is_enroll, L: int) -> np.ndarray:
        """Each side's id: the probe's, or speaker/episode/where-L of the enrollment."""
        ids = self.probe_ids[c.probe[plan_of]]
        at = np.flatnonzero(is_enroll)
        where = c.where[plan_of[at]]
        # the part after the prefix, one string per ``where`` value (HEAD and TAIL are -1 and
        # -2), joined to the prefixes by numpy's object addition: no Python call per side
        low = min(TAIL, HEAD)
        ends = [enroll_id("", w, L) for w in range(low, int(where.max(initial=low)) + 1)]
        ids[at] = self.id_prefix[c.partner[plan_of[at]]] + np.array(ends, dtype=object)[where - low]
        return ids

    def _local_texts(self, flat: np.ndarray):
        """(texts, local): the trial set's texts in order of first use (codes into the builder's
        distinct texts) and ``flat`` as indices into them, in one linear pass through a table
        indexed by code (each code's first position by ``np.minimum.at``, then its index), kept
        for the builder's sets and reset where this set wrote: a set costs its own size, not the
        corpus's."""
        table = self._code_table
        at = np.arange(len(flat), dtype=table.dtype)
        np.minimum.at(table, flat, at)
        used = flat[table[flat] == at]
        table[used] = np.arange(len(used))
        local = table[flat]
        table[used] = _UNSEEN
        return CodedTexts(self.code_texts, used), local
