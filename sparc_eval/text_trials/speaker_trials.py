"""Speaker-task trials (paper 4.2): for each probe, easy positives from the speaker's own
later turns, hard negatives from the other speakers of the episode, hard positives and easy
negatives from other episodes (topic-matched pairs under the topic control). Negatives can be
required to share attributes with the probe speaker (``match_negatives``) and cross-episode
pairs to come from other series (``negatives_cross_series``, ``positives_cross_series``).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .attribute_trials import label_codes
from .pairing import Pool, TrialPairing, group_index, int_codes
from .probes import Probe
from .trial_set import EN, EP, HN, HP


class SpeakerTrials:
    """What the speaker task draws from each probe's pool."""

    task = "speaker"

    def __init__(self, builder: TrialPairing):
        self.builder = builder
        # codes of the attributes negatives must share with the probe speaker
        self.match_codes = [label_codes(builder, attr) for attr in builder.config.match_negatives]
        # the appearances of each combination of those codes: where a probe's negatives lie
        self.match_keys = self._match_key() if self.match_codes else None
        self.match_groups = group_index(self.match_keys) if self.match_codes else None

    def _match_key(self) -> np.ndarray:
        """One code per appearance for its combination of match codes (-1: one is unknown)."""
        known = np.logical_and.reduce([codes >= 0 for codes in self.match_codes])
        key = int_codes([tuple(row) for row in np.stack(self.match_codes, axis=1).tolist()])
        return np.where(known, key, -1)

    def _negatives_ok(self, a: int, cands: np.ndarray) -> np.ndarray:
        """Which candidates share every ``match_negatives`` attribute with appearance ``a``."""
        ok = np.ones(len(cands), dtype=bool)
        for codes in self.match_codes:
            ok &= (codes[cands] == codes[a]) & (codes[cands] >= 0)
        return ok

    def _negative_pool(self, a: int) -> np.ndarray:
        """The appearances a negative of appearance ``a`` can come from (all, or its match group)."""
        if self.match_groups is None:
            return self.builder.all_apps
        return self.match_groups.get(int(self.match_keys[a]), self.builder.all_apps[:0])

    def probe_plans(self, probe: Probe, pool: Pool, counts: Counter) -> list:
        """EP (own later turns), HN (episode partners), HP and EN (other episodes) of one probe."""
        b, cfg, a, rng = self.builder, self.builder.config, probe.app, pool.rng
        spk = b.app_spk[a]
        plans = []
        # easy positive: own appearance, last L non-probe utterances (at least one)
        if cfg.partners[EP] > 0 and b.app_n[a] - (probe.stop - probe.start) >= 1:
            plans += b.take(rng, probe, [a], 1, "tail", lambda c: True, counts, lambda lab: EP)
        # hard negative: other speakers of the episode
        hn = pool.same_ep[(b.app_spk[pool.same_ep] != spk) & self._negatives_ok(a, pool.same_ep)]
        plans += b.take(
            rng, probe, hn, cfg.partners[HN], "tail", lambda c: False, counts, lambda lab: HN
        )
        if b.topic_on:
            return plans + self._matched_cross(probe, pool, counts)
        positive, negative = self._cross_rules(a)
        plans += b.cross_take(
            rng,
            probe,
            b.speaker_apps[int(spk)],
            positive,
            cfg.partners[HP],
            lambda c: True,
            counts,
            lambda lab: HP,
        )
        return plans + b.cross_take(
            rng,
            probe,
            self._negative_pool(a),
            negative,
            cfg.partners[EN],
            lambda c: False,
            counts,
            lambda lab: EN,
        )

    def _cross_rules(self, a: int):
        """(positive, negative) filters of other-episode candidates of appearance ``a``: the
        cross-series controls (a series is one when both are known and equal) and, for negatives,
        another speaker sharing the ``match_negatives`` attributes."""
        b, cfg, spk = self.builder, self.builder.config, self.builder.app_spk[a]

        def other_series(c, required: bool):
            return ~b.same_series(a, c) if required else np.ones(len(c), dtype=bool)

        def positive(c):
            return other_series(c, cfg.positives_cross_series)

        def negative(c):
            return (
                (b.app_spk[c] != spk)
                & self._negatives_ok(a, c)
                & other_series(c, cfg.negatives_cross_series)
            )

        return positive, negative

    def _matched_cross(self, probe: Probe, pool: Pool, counts: Counter) -> list:
        """Topic-matched HP/EN pairs, drawn lazily from the speaker's and the negative pool."""
        b, a = self.builder, probe.app
        positive, negative = self._cross_rules(a)
        return b.matched(
            pool.rng,
            probe,
            (b.speaker_apps[int(b.app_spk[a])], positive),
            (self._negative_pool(a), negative),
            b.config.partners[HP],
            counts,
        )
