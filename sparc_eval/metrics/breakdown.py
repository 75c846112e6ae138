"""EER broken down by speaker and by population segment, reusing the one global sort.

Definitions (:doc:`/definitions`; content-leakage paper, sections 4 and 5.1):

- Per-speaker EER: the EER over the trials whose TEST utterance belongs to that speaker
  (every enrollment model it was compared with). ``None`` when the speaker has no target or
  no non-target trials (why goes into ``not_applicable``).
- Population segment = (attribute, value), e.g. ("accent_group", "Irish"). Its speakers are
  the TEST speakers of the trials whose attribute has that value; ``n_speakers`` counts them.
  A segment is reported only with at least ``min_speakers`` (3) such speakers; smaller ones
  are listed as skipped.
- Intra-segment EER: only trials whose test speaker AND enrollment speaker are in the segment
  ("how well are the segment's speakers told apart from each other?").
- Inter-segment EER: trials whose test speaker is in the segment, against every enrollment
  speaker ("how exposed are the segment's speakers among everybody?").

A speaker with no value for an attribute belongs to no segment of that attribute (segment_table
gives none for a missing accent or one that says nothing about the accent, e.g. "Fluent"). Subsets
are taken from the globally sorted trials, so no subset is sorted again.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .core import Counts, Rates, SortedTrials, eer_at_rates, rocch_eer_at_rates, threshold_at

MIN_SEGMENT_SPEAKERS = 3


def subset_counts(st: SortedTrials, positions: np.ndarray, weights_sorted=None) -> Counts:
    """Count table of the trials at ``positions`` (ascending positions in sorted order)."""
    positions = np.asarray(positions)
    if positions.size == 0:
        return Counts(np.empty(0), np.empty(0), np.empty(0))
    g = st.group[positions]
    new = np.empty(g.size, dtype=bool)
    new[0] = True
    np.not_equal(g[1:], g[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    is_t = st.is_target[positions]
    w = np.ones(positions.size) if weights_sorted is None else weights_sorted[positions]
    t = np.add.reduceat(np.where(is_t, w, 0.0), starts)
    n = np.add.reduceat(np.where(is_t, 0.0, w), starts)
    keep = (t + n) > 0
    return Counts(st.unique[g[starts]][keep], t[keep], n[keep])


def subset_eer(c: Counts, method: str = "speechbrain"):
    """``(eer, why)``: the EER of a count table, or ``(None, reason)`` with one class."""
    n_t, n_n = c.t.sum(), c.n.sum()
    if n_t <= 0 and n_n <= 0:
        return None, "no trials"
    if n_t <= 0:
        return None, "no target trials"
    if n_n <= 0:
        return None, "no non-target trials"
    r = Rates(c.t, c.n)
    value = rocch_eer_at_rates(r) if method == "rocch" else eer_at_rates(r)[0]
    return float(value), None


def subset_eer_threshold(c: Counts) -> Optional[float]:
    """SpeechBrain EER threshold of a count table with both classes."""
    _, k, at_mid = eer_at_rates(Rates(c.t, c.n))
    return float(threshold_at(c.unique, k, at_mid))


def _count(x) -> int | float:
    x = float(x)
    return int(round(x)) if abs(x - round(x)) < 1e-9 else x


def per_speaker_eer(st: SortedTrials, test_speakers, *, weights=None, method: str = "speechbrain"):
    """Per-speaker EER over each test speaker's trials.

    ``test_speakers``: the test speaker of each trial (original order); ``weights`` optional,
    original order. Returns ``(per_speaker, reasons)``: ``{spk: {"eer", "n_target",
    "n_nontarget"}}`` sorted by speaker id, and ``{spk: why}`` for speakers whose EER is None.
    One stable sort by speaker of the already score-sorted trials; a loop over speakers only.
    """
    spk = np.asarray(test_speakers)
    names, idx = np.unique(spk, return_inverse=True)
    idx_sorted = idx[st.order]
    by_spk = np.argsort(idx_sorted, kind="stable")  # positions grouped by speaker, score order kept
    bounds = np.searchsorted(idx_sorted[by_spk], np.arange(names.size + 1))
    w_sorted = None if weights is None else np.asarray(weights, dtype=np.float64)[st.order]
    out, reasons = {}, {}
    for i, name in enumerate(names):  # over speakers, not trials
        c = subset_counts(st, by_spk[bounds[i] : bounds[i + 1]], w_sorted)
        value, why = subset_eer(c, method)
        out[str(name)] = {
            "eer": value,
            "n_target": _count(c.t.sum()),
            "n_nontarget": _count(c.n.sum()),
        }
        if why:
            reasons[str(name)] = why
    return out, reasons


def segment_eers(
    st: SortedTrials,
    enroll_speakers,
    test_speakers,
    table: dict,
    *,
    weights=None,
    method: str = "speechbrain",
    min_speakers: int = MIN_SEGMENT_SPEAKERS,
):
    """Intra- and inter-segment EERs for every (attribute, value) with enough test speakers.

    ``table``: speaker -> {attribute: segment value} (``sparc_eval.data.attributes.segment_table``);
    ``enroll_speakers`` / ``test_speakers``: the speaker of each trial's enrollment and test
    side (original order). Returns ``(segments, skipped, reasons)``: ``{attr: {value:
    {"intra_eer", "inter_eer", "n_speakers"}}}``, ``{(attr, value): n_speakers}`` for segments
    below ``min_speakers``, and ``{(attr, value, "intra_eer"|"inter_eer"): why}`` for None EERs.
    """
    enroll = np.asarray(enroll_speakers).astype(str)
    test = np.asarray(test_speakers).astype(str)
    test_names = np.unique(test)
    w_sorted = None if weights is None else np.asarray(weights, dtype=np.float64)[st.order]
    attributes = sorted({a for spk in test_names for a in table.get(str(spk), {})})
    segments, skipped, reasons = {}, {}, {}
    for attr in attributes:  # over attributes and values, not trials
        values = {}
        for spk in test_names:
            v = table.get(str(spk), {}).get(attr)
            if v is not None:
                values.setdefault(str(v), []).append(str(spk))
        for value in sorted(values):
            members = values[value]
            if len(members) < min_speakers:
                skipped[(attr, value)] = len(members)
                continue
            in_seg = {
                s
                for s, row in table.items()
                if row.get(attr) is not None and str(row[attr]) == value
            }
            seg = np.array(sorted(in_seg), dtype=str)
            test_in = np.isin(test, seg)[st.order]
            enroll_in = np.isin(enroll, seg)[st.order]
            row = {"intra_eer": None, "inter_eer": None, "n_speakers": len(members)}
            for key, mask in (("intra_eer", test_in & enroll_in), ("inter_eer", test_in)):
                c = subset_counts(st, np.flatnonzero(mask), w_sorted)
                row[key], why = subset_eer(c, method)
                if why:
                    reasons[(attr, value, key)] = why
            segments.setdefault(attr, {})[value] = row
    return segments, skipped, reasons
