"""SPARC verification trials from any manifest with speakers and episodes (paper 4.2, A.1).

Vocabulary. An *appearance* is one (speaker, episode): that speaker's non-empty utterances
of the episode, in manifest order (conversation order). A *probe* is text of the unknown
speaker; an *enrollment* is text of the claimed speaker (speaker task) or of a speaker whose
attribute label is compared (sex, age, accent and any other attribute).

Probes (:doc:`/definitions`). From the start of an appearance, whole utterances are accumulated
until the word count (white-space words) lies within ``P +- tolerance``. When the next
utterance would jump over the window, it is cut at a word boundary so the probe has exactly
``P`` words (the rest of that utterance is discarded and used by no probe), or, with
``strict``, the attempt is skipped and the next attempt starts after that utterance. Further
probes follow on from where the previous one stopped (non-overlapping), up to ``max_probes``
per appearance. Text that ends before reaching ``P - tolerance`` words gives no probe.

Enrollments. *Same-episode*: the last ``L`` utterances of the partner's appearance in the
probe's episode that are not part of the probe. *Different-episode*: the first ``L``
utterances of the partner's appearance in another episode. ``L`` is the maximum number of
enrollment utterances (paper Tables 5-6): an appearance with fewer enrolls with what it has, at
least one utterance (how many trials enroll with fewer than ``L`` is counted in the stats).

Trial types (speaker task): easy positive (same speaker, same episode), hard positive (same
speaker, other episode), easy negative (other speaker, other episode), hard negative (other
speaker, same episode). Attribute tasks pair the probe speaker with *other* speakers only and
label a trial positive when both have the same (known) label; same-episode pairs are easy
positives or hard negatives, cross-episode pairs hard positives or easy negatives, and the
classes are not balanced (paper A.1.1). Conditions: ``easy`` = EP+EN, ``hard`` = HP+HN,
``same_topic`` = EP+HN, ``different_topic`` = HP+EN, ``combined`` = all.

Sampling. For each probe and trial type, up to ``partners[type]`` partners are drawn without
replacement from the eligible pool (attribute tasks: ``attribute_partners``), with a random
generator seeded by ``(seed, task, P, probe id)``, so a probe's trials do not depend on the
other probes. Other-episode partners come from a candidate set (every appearance, the
speaker's, the match group's or the labelled ones) that is filtered and shuffled whole when it
holds at most ``pairing.EXACT_POOL_MAX`` (1,024) appearances; a larger one (a SPARC-sized corpus)
is sampled lazily by rejection (:func:`.pairing.draw_order`): the same uniform draw without
replacement, so building trials grows linearly with the corpus, not with its square. Trials at
one P are shared by every L of a run (:func:`build_trials` with
several ``Ls``): eligibility does not depend on L, the exclusion screens read the largest L's
enrollment (which holds every smaller one), and only the enrollment length changes (paper
A.1.1: "trials are fixed when varying L at a fixed P").

Controls.

- ``match_negatives`` (speaker task): negative partners must share these attributes (``sex``,
  ``age`` group, ``accent`` region, or any attribute) with the probe speaker.
- Metadata topic control (SPoRC protocol, A.1.2), on when episodes carry ``title``,
  ``description`` or ``category`` in ``extra`` (``topic_control: auto``): cross-episode
  pairs whose title+description TF-IDF cosine (unigrams+bigrams, L2-normalised) exceeds
  ``topic_max_similarity`` (0.10) are excluded; then each cross-episode positive is matched
  with one cross-episode negative of the same probe from the same stratum of (cosine bin,
  category-Jaccard bin); positives without a match are dropped and counted.
- ``negatives_cross_series``: cross-episode negatives must come from another series (SPoRC,
  A.1.2); ``positives_cross_series``: so must cross-episode positives (the cross-series control
  of appendix A.4). A pair is in one series only when both series are known and equal.
- Exact-utterance overlap (``overlap_screen``): a trial is dropped when the probe and the
  enrollment share an identical utterance (lower-cased, white space collapsed) of at least
  ``overlap_min_words`` words (the paper's SPoRC screen: 1, any length; the generic default 5,
  since short back-channels such as "yeah" are no evidence of duplication).
- Name screen (``name_screen``: ``all``/True, ``speaker_positives`` as in SPoRC, ``off``/False):
  a trial is dropped when the probe speaker's name occurs (whole word, any
  case) in the enrollment text or the enrollment speaker's name in the probe text. Names come
  from ``speaker_names``, else an ``extra`` field in ``name_fields``, else the speaker id when
  it looks like a name (letters, spaces, dots, apostrophes, hyphens; no digits). Each name
  token of 3+ letters counts.

Modules. :mod:`.probes` (appearances, probes), :mod:`.trial_set` (trial types, conditions,
:class:`TrialSet`, trial files), :mod:`.topic` (episode metadata for the topic control),
:mod:`.pairing` (pools, screens, topic matching, trial sets at each L: what every task
shares), :mod:`.speaker_trials` and :mod:`.attribute_trials` (what each task draws); this
module holds :class:`TrialConfig`, :class:`TrialBuilder` and :func:`build_trials`, and
re-exports the names of the others.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from typing import Optional

import numpy as np

from ..hparams import bounded, library_only
from .attribute_trials import AttributeTrials, task_labeller
from .pairing import TrialPairing
from .probes import Appearance, Probe, appearances, cut_probes
from .shared_text import SharedTextConfig
from .speaker_trials import SpeakerTrials
from .topic import has_topic_metadata
from .trial_set import (
    EN,
    EP,
    HN,
    HP,
    TRIAL_CONDITIONS,
    TRIAL_TYPES,
    TYPE_CONDITIONS,
    TrialSet,
    read_trials_jsonl,
)

__all__ = [
    "sample_by_probe",
    "EP",
    "HP",
    "EN",
    "HN",
    "TRIAL_TYPES",
    "TRIAL_CONDITIONS",
    "CONDITIONS",
    "TYPE_CONDITIONS",
    "BUILTIN_TASKS",
    "DEFAULT_PARTNERS",
    "DEFAULT_ATTRIBUTE_PARTNERS",
    "NAME_SCREENS",
    "TrialConfig",
    "task_labeller",
    "Appearance",
    "Probe",
    "cut_probes",
    "appearances",
    "TrialSet",
    "read_trials_jsonl",
    "has_topic_metadata",
    "SharedTextConfig",
    "SpeakerTrials",
    "AttributeTrials",
    "TrialBuilder",
    "build_trials",
]

CONDITIONS = TRIAL_CONDITIONS  # the old name, kept for users who import it
BUILTIN_TASKS = ("speaker", "sex", "age", "accent")
DEFAULT_PARTNERS = {EP: 1, HP: 2, EN: 2, HN: 1}
DEFAULT_ATTRIBUTE_PARTNERS = {"same_episode": 1, "cross_episode": 4}
NAME_SCREENS = ("all", "speaker_positives", "off")
SETTING = "setting"  # the group of the (P, L) fields: set per setting, not by a key of their own


@dataclass
class TrialConfig:
    """How trials are built. ``P`` words per probe (+- ``tolerance``), ``L`` enrollment utterances."""

    # P and L come from the hparams' P, L or settings keys (several settings per run)
    P: int = bounded(200, group=SETTING)
    L: int = bounded(20, group=SETTING)
    tolerance: int = 5
    strict: bool = False
    max_probes: int = 10
    partners: dict = field(default_factory=lambda: dict(DEFAULT_PARTNERS))
    attribute_partners: dict = field(default_factory=lambda: dict(DEFAULT_ATTRIBUTE_PARTNERS))
    seed: int = 0
    match_negatives: tuple = ()
    negatives_cross_series: bool = False
    positives_cross_series: bool = False
    overlap_screen: bool = True
    overlap_min_words: int = 5
    name_screen: object = "all"  # all (True), speaker_positives, off (False)
    name_fields: tuple = ("speaker_name", "name")
    speaker_names: Optional[dict] = library_only(None)
    topic_control: str = "auto"
    topic_max_similarity: float = 0.10
    topic_sim_edges: tuple = (0.02, 0.05)
    topic_jaccard_edges: tuple = (1e-9, 0.5, 1.0 - 1e-9)
    shared_text: SharedTextConfig = field(default_factory=lambda: SharedTextConfig(enabled="auto"))
    trial_sample: Optional[int] = (
        None  # score only the trials of a seeded sample of probes (costly scorers)
    )

    def __post_init__(self):
        self.partners = {**DEFAULT_PARTNERS, **dict(self.partners or {})}
        self.attribute_partners = {
            **DEFAULT_ATTRIBUTE_PARTNERS,
            **dict(self.attribute_partners or {}),
        }
        unknown = set(self.partners) - set(TRIAL_TYPES)
        if unknown:
            raise ValueError(
                f"partners: unknown trial types {sorted(unknown)}; known: {', '.join(TRIAL_TYPES)}"
            )
        unknown = set(self.attribute_partners) - set(DEFAULT_ATTRIBUTE_PARTNERS)
        if unknown:
            raise ValueError(
                f"attribute_partners: unknown keys {sorted(unknown)}; known: same_episode, cross_episode"
            )
        for key, value in [*self.partners.items(), *self.attribute_partners.items()]:
            if int(value) < 0:
                raise ValueError(f"partners[{key}] must be >= 0, not {value}")
        if int(self.P) < 1 or int(self.L) < 1:
            raise ValueError(f"P and L must be >= 1 (P={self.P}, L={self.L})")
        if not 0 <= int(self.tolerance) < int(self.P):
            raise ValueError(f"tolerance must lie in [0, P), not {self.tolerance}")
        if self.trial_sample is not None and int(self.trial_sample) < 1:
            raise ValueError(
                f"trial_sample must be >= 1 trials (or null: all), not {self.trial_sample}"
            )
        if int(self.max_probes) < 1:
            raise ValueError(f"max_probes must be >= 1, not {self.max_probes}")
        if self.topic_control not in ("auto", "on", "off", True, False):
            raise ValueError(f"topic_control is auto, on or off, not {self.topic_control!r}")
        self.name_screen = {True: "all", False: "off"}.get(self.name_screen, self.name_screen)
        if self.name_screen not in NAME_SCREENS:
            raise ValueError(
                f"name_screen is one of {', '.join(NAME_SCREENS)}, not {self.name_screen!r}"
            )
        if int(self.overlap_min_words) < 1:
            raise ValueError(f"overlap_min_words must be >= 1, not {self.overlap_min_words}")
        self.match_negatives = tuple(self.match_negatives or ())
        self.name_fields = tuple(self.name_fields or ())
        self.shared_text = SharedTextConfig.from_value(self.shared_text)

    @classmethod
    def from_dict(cls, values: dict) -> "TrialConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(
                f"unknown trial settings {sorted(unknown)}; known: {', '.join(sorted(known))}"
            )
        return cls(**values)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["match_negatives"] = list(self.match_negatives)
        out["name_fields"] = list(self.name_fields)
        out["topic_sim_edges"] = list(self.topic_sim_edges)
        out["topic_jaccard_edges"] = list(self.topic_jaccard_edges)
        if self.speaker_names is not None:
            out["speaker_names"] = f"{len(self.speaker_names)} names"
        return out


# ----------------------------------------------------------------------------- building


class TrialBuilder(TrialPairing):
    """Probes, eligibility tables and screens for one manifest at one P (all tasks, all L).

    ``build(task, Ls)`` -> {L: TrialSet}; ``stats(task)`` -> counts for the report.
    """

    def task_trials(self, task: str):
        """What a task draws from each probe's pool: a
        :class:`~sparc_eval.text_trials.speaker_trials.SpeakerTrials` or an
        :class:`~sparc_eval.text_trials.attribute_trials.AttributeTrials`."""
        return SpeakerTrials(self) if task == "speaker" else AttributeTrials(self, task)

    def plans(self, task: str) -> list:
        self._task = task
        trials = self.task_trials(task)
        counts = Counter()
        plans = []
        for probe in self.probes:
            pool = self.pool(probe, task, counts)
            made = trials.probe_plans(probe, pool, counts)
            if made is None:  # the probe speaker's label is unknown
                continue
            counts["probes_without_trials"] += not made
            plans += made
        self._stats[task] = counts
        self._view = (None, None)  # its filter refers to this builder: no cycle left behind
        return plans

    def build(self, task: str, Ls=None) -> dict:
        """{L: TrialSet} for a task; the same probes and partners for every L."""
        Ls = [int(x) for x in (Ls or [self.config.L])]
        if max(Ls) > self.L_max:
            raise ValueError(
                f"L={max(Ls)} exceeds the L_max={self.L_max} this builder screened with"
            )
        plans = self.plans(task)
        sets = {L: self.materialise(task, plans, L) for L in Ls}
        if self.config.trial_sample is None:
            return sets
        return {
            L: sample_by_probe(ts, int(self.config.trial_sample), self.config.seed)
            for L, ts in sets.items()
        }


def sample_by_probe(ts, n_trials: int, seed: int):
    """The trials of whole probes, drawn in a seeded order until at least ``n_trials`` are kept
    (all of them when there are fewer): a probe's trials stay together, so the speaker bootstrap
    still resamples whole probes' speakers, and every L at one P keeps the same probes."""
    if len(ts) <= n_trials:
        return ts
    probe_ids = ts.column("probe_id").tolist()
    probes = sorted(set(probe_ids))
    order = np.random.default_rng([int(seed), 7919]).permutation(len(probes))
    counts = Counter(probe_ids)
    kept, total = set(), 0
    for i in order:
        if total >= n_trials:
            break
        kept.add(probes[i])
        total += counts[probes[i]]
    subset = ts.subset([p in kept for p in probe_ids])
    subset.meta = {**ts.meta, "sampled_from": len(ts)}
    return subset


def build_trials(manifest, config: TrialConfig, task: str = "speaker", Ls=None):
    """Convenience: ({L: TrialSet}, stats) for one task at ``config.P``."""
    Ls = list(Ls or [config.L])
    builder = TrialBuilder(manifest, config, L_max=max(Ls))
    sets = builder.build(task, Ls)
    return sets, builder.stats(task)
