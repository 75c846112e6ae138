"""What each corpus is evaluated on, made the same way for every attacker.

A corpus's evaluation set is its evaluation speakers (the whole corpus when the attackers train
elsewhere, else the speakers the ECAPA recipe holds out), optionally cut to the same number of
speakers as the other corpora (``balance_speakers``), with the utterances that many speakers
read from a script marked (``shared_ids``) so that every attacker can be scored with and without
them. ECAPA splits are thinned to the same speakers and utterances by :func:`restrict_split`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..data.manifest import Manifest
from ..data.splits import Split
from ..errors import DataError

SHARED_TEXT_CONDITIONS = ("all", "no_shared")  # every text, and shared (scripted) text removed
CONDITION_TITLES = {"all": "all text", "no_shared": "shared (scripted) text removed"}


@dataclass
class EvaluationSet:
    name: str
    manifest: Manifest  # evaluation speakers, after balancing
    shared_ids: frozenset = frozenset()  # utterances detected as shared text
    shared_stats: dict = field(default_factory=dict)
    n_speakers_before_balance: int = 0
    left_out_ids: frozenset = (
        frozenset()
    )  # left out of every attacker alike (an anonymizer failed on them)

    @property
    def speakers(self) -> set:
        return set(self.manifest.speakers())

    def view(self, condition: str) -> Manifest:
        """The evaluation manifest under a condition (``no_shared``: shared text left out)."""
        if condition == "no_shared" and self.shared_ids:
            return self.manifest.subset(lambda u: u.id not in self.shared_ids)
        return self.manifest


def choose_speakers(speakers, n: int | None, seed: int) -> list:
    """``n`` of ``speakers`` drawn with ``seed`` (all of them, sorted, when n is None or too big)."""
    speakers = sorted(speakers)
    if n is None or n >= len(speakers):
        return speakers
    order = np.random.default_rng(seed).permutation(len(speakers))
    return sorted(speakers[i] for i in order[:n])


def balanced_count(value, sizes: dict, what: str) -> int | None:
    """``balance_*`` setting -> a count: None (no balancing), ``auto`` (the smallest corpus's
    size) or a positive integer."""
    if value in (None, "null", "none", False):
        return None
    if value == "auto":
        return min(sizes.values()) if sizes else None
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise DataError(f"{what} must be null, auto or a positive integer, not {value!r}") from None
    if n < 2:
        raise DataError(f"{what} must be at least 2, not {n}")
    return n


def restrict_split(
    split: Split,
    utt2spk: dict,
    *,
    speakers: set,
    drop_ids=frozenset(),
    trials_per_speaker: int | None = None,
    seed: int = 0,
) -> Split:
    """The split limited to ``speakers``, without ``drop_ids``, and with at most
    ``trials_per_speaker`` trial utterances per speaker (drawn with ``seed``).

    Enrollment speakers left without enrollment utterances are listed in ``dropped``.
    """
    drop_ids = set(drop_ids)
    dropped = {
        s: why for s, why in split.dropped.items() if s in speakers or s.startswith("utterance ")
    }
    enroll = {}
    for spk, ids in split.enroll.items():
        if spk not in speakers:
            continue
        kept = [u for u in ids if u not in drop_ids]
        if kept:
            enroll[spk] = kept
        else:
            dropped[spk] = "every enrollment utterance is shared text"
    by_speaker: dict = {}
    for utt in split.trial_ids:
        spk = utt2spk[utt]
        if spk in speakers and utt not in drop_ids:
            by_speaker.setdefault(spk, []).append(utt)
    if trials_per_speaker is not None:
        rng = np.random.default_rng(seed)
        for spk in sorted(by_speaker):
            ids = by_speaker[spk]
            if len(ids) > trials_per_speaker:
                pick = set(rng.choice(len(ids), size=trials_per_speaker, replace=False).tolist())
                by_speaker[spk] = [u for i, u in enumerate(ids) if i in pick]
    keep = {u for ids in by_speaker.values() for u in ids}
    trial_ids = [u for u in split.trial_ids if u in keep]
    if not enroll or not trial_ids:
        raise DataError(
            f"no {'enrollment' if not enroll else 'trial'} utterances are left after restricting "
            f"the split to {len(speakers)} speakers",
            hint="check balance_speakers and the shared-text settings",
        )
    pairs = None
    if split.pairs is not None:
        pairs = [p for p in split.pairs if p[0] in enroll and p[1] in keep]
    return Split(enroll, trial_ids, pairs, dropped, split.source)
