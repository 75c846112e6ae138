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
from .pairing import Pool, TrialPairing
from .probes import Probe
from .trial_set import EN, EP, HN, HP


class SpeakerTrials:
    """What the speaker task draws from each probe's pool."""

    task = "speaker"

    def __init__(self, builder: TrialPairing):
        self.builder = builder
        # codes of the attributes negatives must share with the probe speaker
        self.match_codes = [label_codes(builder, attr) for attr in builder.config.match_negatives]

    def probe_plans(self, probe: Probe, pool: Pool, counts: Counter) -> list:
        """EP (own later turns), HN (episode partners), HP and EN (other episodes) of one probe."""
        b, cfg, a, rng, cross = self.builder, self.builder.config, probe.app, pool.rng, pool.cross
        spk = b.app_spk[a]
        neg_ok = np.ones(len(b.apps), dtype=bool)
        for codes in self.match_codes:
            neg_ok &= (codes == codes[a]) & (codes >= 0)
        plans = []
        # easy positive: own appearance, last L non-probe utterances (at least one)
        if cfg.partners[EP] > 0 and b.app_n[a] - (probe.stop - probe.start) >= 1:
            plans += b.take(rng, probe, [a], 1, "tail", lambda c: True, counts, lambda lab: EP)
        # hard negative: other speakers of the episode
        hn = pool.same_ep[(b.app_spk[pool.same_ep] != spk) & neg_ok[pool.same_ep]]
        plans += b.take(rng, probe, hn, cfg.partners[HN], "tail", lambda c: False, counts, lambda lab: HN)
        posm = b.app_spk[cross] == spk
        negm = (b.app_spk[cross] != spk) & neg_ok[cross]
        if cfg.positives_cross_series:
            posm &= ~pool.same_series
        if cfg.negatives_cross_series:
            negm &= ~pool.same_series
        if b.topic_on:
            return plans + b.matched(rng, probe, cross[posm], cross[negm], pool.strata(b, posm),
                                     pool.strata(b, negm), cfg.partners[HP], counts, True, False)
        plans += b.take(rng, probe, cross[posm], cfg.partners[HP], "head", lambda c: True, counts, lambda lab: HP)
        return plans + b.take(rng, probe, cross[negm], cfg.partners[EN], "head", lambda c: False, counts,
                              lambda lab: EN)
