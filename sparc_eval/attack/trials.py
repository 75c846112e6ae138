"""Scored trials: what every attacker returns and every metric, report and comparison takes.

A :class:`Trials` holds, per trial, the enrollment model id, the test (utterance or probe) id,
the test speaker, the score and the label, plus the enrollment speaker when the enrollment id
is not a speaker id (text probes enrol on utterance sets) and optional per-trial tags (trial
type, condition). It is immutable: selections return new objects over read-only arrays.

The score file (:doc:`/contracts`) is written by :meth:`Trials.write` and read by
:meth:`Trials.read`, at full precision (the shortest text that reads back as the same float).
One rule for non-finite scores everywhere: a trial without a finite score is *unscored*; it is
kept in memory (score NaN) and counted, but never written to a score file nor evaluated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional

import numpy as np

from ..errors import DataError


def _frozen(values, dtype=None) -> np.ndarray:
    arr = np.array(values, dtype=dtype)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class Trials:
    enroll: np.ndarray  # enrollment model ids (speaker ids for speaker-level enrollment)
    test: np.ndarray  # test utterance or probe ids
    score: np.ndarray  # float64; NaN: unscored
    label: np.ndarray  # bool: True for target trials
    test_speaker: Optional[np.ndarray] = None
    enroll_speaker: Optional[np.ndarray] = None  # None: the enrollment id is the speaker
    tags: Mapping = field(default_factory=dict)  # name -> array, one value per trial

    def __post_init__(self):
        n = len(self.score)
        put = object.__setattr__
        put(self, "enroll", _frozen(self.enroll, object))
        put(self, "test", _frozen(self.test, object))
        put(self, "score", _frozen(self.score, np.float64))
        put(self, "label", _frozen(self.label, bool))
        for name in ("test_speaker", "enroll_speaker"):
            if getattr(self, name) is not None:
                put(self, name, _frozen(getattr(self, name), object))
        put(self, "tags", MappingProxyType({k: _frozen(v) for k, v in dict(self.tags).items()}))
        columns = {
            "enroll": self.enroll,
            "test": self.test,
            "label": self.label,
            **self.tags,
            **{
                k: v
                for k in ("test_speaker", "enroll_speaker")
                if (v := getattr(self, k)) is not None
            },
        }
        wrong = {k: len(v) for k, v in columns.items() if len(v) != n}
        if wrong:
            raise DataError(
                f"{n} scores but {wrong} values per trial",
                hint="every column needs one value per trial",
            )

    def __len__(self) -> int:
        return int(self.score.size)

    # --- building ----------------------------------------------------------------------------------

    @classmethod
    def from_pairs(cls, pairs, scores, utt2spk: dict, **tags) -> "Trials":
        """From ``(enroll speaker, test id, is_target)`` pairs, speaker-level enrollment."""
        pairs = list(pairs)
        return cls(
            [p[0] for p in pairs],
            [p[1] for p in pairs],
            scores,
            [bool(p[2]) for p in pairs],
            test_speaker=[utt2spk[p[1]] for p in pairs],
            tags=tags,
        )

    def select(self, mask) -> "Trials":
        """The trials where ``mask`` is True (or at the given indices)."""
        idx = np.asarray(mask)

        def pick(a):
            return None if a is None else a[idx]

        return Trials(
            self.enroll[idx],
            self.test[idx],
            self.score[idx],
            self.label[idx],
            test_speaker=pick(self.test_speaker),
            enroll_speaker=pick(self.enroll_speaker),
            tags={k: v[idx] for k, v in self.tags.items()},
        )

    def scored(self) -> "Trials":
        """The trials with a finite score (the unscored ones are left out)."""
        finite = np.isfinite(self.score)
        return self if finite.all() else self.select(finite)

    # --- views -------------------------------------------------------------------------------------

    @property
    def n_unscored(self) -> int:
        return int((~np.isfinite(self.score)).sum())

    @property
    def enroll_speakers(self) -> np.ndarray:
        return self.enroll if self.enroll_speaker is None else self.enroll_speaker

    def n_test_speakers(self) -> Optional[int]:
        """How many test speakers the trials have (None without speakers)."""
        return None if self.test_speaker is None else len(set(self.test_speaker.tolist()))

    def utt2spk(self) -> Optional[dict]:
        """Test id -> speaker, or None when the test speakers are unknown."""
        if self.test_speaker is None:
            return None
        return dict(zip(self.test.tolist(), self.test_speaker.tolist()))

    def enroll2spk(self) -> Optional[dict]:
        """Enrolled speaker -> itself: the enrollment side of :attr:`enroll_speakers`, which are
        speaker ids, for a two-way bootstrap (:func:`sparc_eval.metrics.evaluate_trials`); None
        when they are not known to be speakers (:meth:`enrolled_known`), so that the bootstrap
        holds the enrolled side fixed and says so."""
        if not self.enrolled_known():
            return None
        return {s: s for s in set(self.enroll_speakers.tolist())}

    def enroll_map(self) -> dict:
        """Enrollment id -> enrolled speaker (the ``enroll2spk`` file a cell writes beside its
        scores)."""
        return dict(zip(self.enroll.tolist(), self.enroll_speakers.tolist()))

    def enrolled_known(self) -> bool:
        """Whether :attr:`enroll_speakers` are speakers: given, or enrollment ids that name the
        test speaker of every target trial (speaker-level enrollment)."""
        if self.enroll_speaker is not None:  # every trial's, or none: a gap is no speaker
            return not any(s is None or s == "" for s in self.enroll_speaker.tolist())
        if self.test_speaker is None:
            return False
        target = self.label.astype(bool)
        return bool(
            np.array_equal(self.enroll[target].astype(str), self.test_speaker[target].astype(str))
        )

    def keys(self) -> np.ndarray:
        """``enroll<TAB>test`` per trial: what pairs two attackers' trials."""
        return np.char.add(np.char.add(self.enroll.astype(str), "\t"), self.test.astype(str))

    # --- the score file ----------------------------------------------------------------------------

    def write(self, path) -> int:
        """Write the scored trials as a score file (atomically); returns how many were left out
        unscored."""
        from ..metrics.scores import write_scores

        scored = self.scored()
        write_scores(path, scored.enroll, scored.test, scored.score, scored.label)
        return len(self) - len(scored)

    @classmethod
    def read(
        cls, path, utt2spk: Optional[dict] = None, enroll2spk: Optional[dict] = None
    ) -> "Trials":
        """A score file (every rule of :mod:`sparc_eval.metrics.scores` checked); ``utt2spk``
        gives the test speakers (a test id missing from it is an error naming it), ``enroll2spk``
        the enrolled speakers (an enrollment id missing from it keeps its id)."""
        from ..metrics.scores import read_scores

        found = read_scores(path)
        speakers = None
        if utt2spk is not None:
            missing = [t for t in dict.fromkeys(found.test.tolist()) if t not in utt2spk]
            if missing:
                raise DataError(
                    f"{len(missing)} test ids have no speaker in utt2spk, e.g. {missing[:3]}",
                    path=path,
                )
            speakers = [utt2spk[t] for t in found.test.tolist()]
        enrolled = None
        if enroll2spk is not None:
            enrolled = [enroll2spk.get(e, e) for e in found.enroll.tolist()]
        return cls(
            found.enroll,
            found.test,
            found.scores,
            found.labels,
            test_speaker=speakers,
            enroll_speaker=enrolled,
        )
