"""SPARC verification trials from any manifest with speakers and episodes (paper 4.2, A.1).

Vocabulary. An *appearance* is one (speaker, episode): that speaker's non-empty utterances
of the episode, in manifest order (conversation order). A *probe* is text of the unknown
speaker; an *enrollment* is text of the claimed speaker (speaker task) or of a speaker whose
attribute label is compared (sex, age, accent and any other attribute).

Probes (GUIDE section 5). From the start of an appearance, whole utterances are accumulated
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
other probes. Trials at one P are shared by every L of a run (:func:`build_trials` with
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
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, fields
from typing import Optional

import numpy as np

from ..atomic import atomic_open
from ..attributes import accent_region, age_group
from ..errors import DataError
from .shared_text import SharedTextConfig

EP, HP, EN, HN = "easy_positive", "hard_positive", "easy_negative", "hard_negative"
TRIAL_TYPES = (EP, HP, EN, HN)
CONDITIONS = ("combined", "easy", "hard", "same_topic", "different_topic")
TYPE_CONDITIONS = {
    EP: ("combined", "easy", "same_topic"),
    HP: ("combined", "hard", "different_topic"),
    EN: ("combined", "easy", "different_topic"),
    HN: ("combined", "hard", "same_topic"),
}
BUILTIN_TASKS = ("speaker", "sex", "age", "accent")
DEFAULT_PARTNERS = {EP: 1, HP: 2, EN: 2, HN: 1}
DEFAULT_ATTRIBUTE_PARTNERS = {"same_episode": 1, "cross_episode": 4}
NAME_SCREENS = ("all", "speaker_positives", "off")
_NAME_RE = re.compile(r"^[^\W\d_][^\W\d_ .'\-]*(?:[ .'\-]+[^\W\d_]+)*\.?$")


@dataclass
class TrialConfig:
    """How trials are built. ``P`` words per probe (+- ``tolerance``), ``L`` enrollment utterances."""

    P: int = 200
    L: int = 20
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
    speaker_names: Optional[dict] = None
    topic_control: str = "auto"
    topic_max_similarity: float = 0.10
    topic_sim_edges: tuple = (0.02, 0.05)
    topic_jaccard_edges: tuple = (1e-9, 0.5, 1.0 - 1e-9)
    shared_text: SharedTextConfig = field(default_factory=lambda: SharedTextConfig(enabled="auto"))

    def __post_init__(self):
        self.partners = {**DEFAULT_PARTNERS, **dict(self.partners or {})}
        self.attribute_partners = {**DEFAULT_ATTRIBUTE_PARTNERS, **dict(self.attribute_partners or {})}
        unknown = set(self.partners) - set(TRIAL_TYPES)
        if unknown:
            raise ValueError(f"partners: unknown trial types {sorted(unknown)}; known: {', '.join(TRIAL_TYPES)}")
        unknown = set(self.attribute_partners) - set(DEFAULT_ATTRIBUTE_PARTNERS)
        if unknown:
            raise ValueError(f"attribute_partners: unknown keys {sorted(unknown)}; known: same_episode, cross_episode")
        for key, value in [*self.partners.items(), *self.attribute_partners.items()]:
            if int(value) < 0:
                raise ValueError(f"partners[{key}] must be >= 0, not {value}")
        if int(self.P) < 1 or int(self.L) < 1:
            raise ValueError(f"P and L must be >= 1 (P={self.P}, L={self.L})")
        if not 0 <= int(self.tolerance) < int(self.P):
            raise ValueError(f"tolerance must lie in [0, P), not {self.tolerance}")
        if int(self.max_probes) < 1:
            raise ValueError(f"max_probes must be >= 1, not {self.max_probes}")
        if self.topic_control not in ("auto", "on", "off", True, False):
            raise ValueError(f"topic_control is auto, on or off, not {self.topic_control!r}")
        self.name_screen = {True: "all", False: "off"}.get(self.name_screen, self.name_screen)
        if self.name_screen not in NAME_SCREENS:
            raise ValueError(f"name_screen is one of {', '.join(NAME_SCREENS)}, not {self.name_screen!r}")
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
            raise ValueError(f"unknown trial settings {sorted(unknown)}; known: {', '.join(sorted(known))}")
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


# ----------------------------------------------------------------------------- tasks


def task_labeller(task: str, attributes: dict):
    """speaker -> label for a task (None when unknown). ``speaker`` labels by identity."""
    if task == "speaker":
        return {spk: spk for spk in attributes}
    if task == "sex":
        return {spk: a.get("sex") for spk, a in attributes.items()}
    if task == "age":
        return {spk: age_group(a.get("age")) for spk, a in attributes.items()}
    if task == "accent":
        return {spk: accent_region(a.get("accent")) for spk, a in attributes.items()}
    available = sorted({k for a in attributes.values() for k, v in a.items() if v is not None} - {"speaker"})
    if not any(a.get(task) is not None for a in attributes.values()):
        raise DataError(f"task {task!r}: no speaker has a value for attribute {task!r}",
                        hint=f"tasks are speaker, sex, age, accent or an attribute among {available}")
    out = {}
    for spk, a in attributes.items():
        value = a.get(task)
        if isinstance(value, float) and math.isnan(value):
            value = None
        out[spk] = None if value is None or (isinstance(value, str) and not value.strip()) else str(value)
    return out


# ----------------------------------------------------------------------------- probes


@dataclass
class Appearance:
    index: int
    speaker: str
    episode: str
    series: Optional[str]
    ids: list
    texts: list
    words: list  # word count per utterance


@dataclass
class Probe:
    id: str
    app: int  # appearance index
    k: int  # probe number within the appearance
    start: int
    stop: int  # utterance indices [start, stop) of the appearance
    texts: tuple
    n_words: int
    cut_words: Optional[int]  # words kept of the last utterance when it was cut


def cut_probes(app: Appearance, P: int, tolerance: int = 5, strict: bool = False, max_probes: int = 10):
    """Non-overlapping probes from the start of an appearance; returns (probes, n_cut, n_skipped)."""
    lo, hi = P - tolerance, P + tolerance
    probes, n_cut, n_skipped = [], 0, 0
    i, n = 0, len(app.words)
    while i < n and len(probes) < max_probes:
        count, j, made = 0, i, None
        while j < n:
            w = app.words[j]
            if count + w < lo:
                count += w
                j += 1
                continue
            if count + w <= hi:
                made = (j + 1, list(app.texts[i:j + 1]), count + w, None)
            elif strict:
                n_skipped += 1
                made = "skip"
            else:
                keep = P - count
                texts = list(app.texts[i:j]) + [" ".join(app.texts[j].split()[:keep])]
                made = (j + 1, texts, P, keep)
                n_cut += 1
            break
        if made is None:  # ran out of text before reaching the window
            break
        if made == "skip":
            i = j + 1
            continue
        stop, texts, n_words, cut = made
        k = len(probes)
        probes.append(Probe(f"{_clean_id(app.speaker)}/{_clean_id(app.episode)}/p{k}", app.index, k, i, stop,
                            tuple(texts), n_words, cut))
        i = stop
    return probes, n_cut, n_skipped


def _clean_id(value: str) -> str:
    return re.sub(r"\s+", "_", str(value).strip())


def appearances(manifest) -> list:
    """(speaker, episode) appearances in order of first utterance; utterances keep manifest order."""
    groups = {}
    for u in manifest:
        if not u.text or not u.text.strip():
            continue
        if u.episode is None:
            raise DataError(f"utterance {u.id!r} has no episode",
                            hint="SPARC trials need an episode (conversation, chapter, podcast) for every utterance")
        key = (u.speaker, u.episode)
        app = groups.get(key)
        if app is None:
            app = groups[key] = Appearance(len(groups), u.speaker, u.episode, u.series, [], [], [])
        app.ids.append(u.id)
        app.texts.append(u.text)
        app.words.append(len(u.text.split()))
    return list(groups.values())


# ----------------------------------------------------------------------------- trial sets


class TrialSet:
    """Trials of one (task, P, L): sides as indices into unique texts, plus metadata records.

    A *side* is a tuple of text indices (a probe or an enrollment); trials reference sides by
    index so that scorers represent each unique side once. ``records[i]`` holds the ids, type,
    label and conditions of trial ``i`` (what is written to JSON lines).
    """

    def __init__(self, texts, sides, probe_side, enroll_side, labels, records, *, meta=None):
        self.texts = list(texts)
        self.sides = [np.asarray(s, dtype=np.int64) for s in sides]
        self.probe_side = np.asarray(probe_side, dtype=np.int64)
        self.enroll_side = np.asarray(enroll_side, dtype=np.int64)
        self.labels = np.asarray(labels, dtype=bool)
        self.records = list(records)
        self.meta = dict(meta or {})
        n = len(self.records)
        if not (len(self.probe_side) == len(self.enroll_side) == len(self.labels) == n):
            raise ValueError("probe_side, enroll_side, labels and records must have one entry per trial")

    def __len__(self) -> int:
        return len(self.records)

    @property
    def types(self) -> np.ndarray:
        return np.array([r["type"] for r in self.records], dtype=object)

    def side_texts(self, side: int) -> list:
        return [self.texts[i] for i in self.sides[side]]

    def probe_texts(self, i: int) -> list:
        return self.side_texts(self.probe_side[i])

    def enroll_texts(self, i: int) -> list:
        return self.side_texts(self.enroll_side[i])

    def condition_mask(self, condition: str) -> np.ndarray:
        if condition not in CONDITIONS:
            raise ValueError(f"unknown condition {condition!r}; known: {', '.join(CONDITIONS)}")
        return np.array([condition in TYPE_CONDITIONS[r["type"]] for r in self.records], dtype=bool)

    def type_counts(self) -> dict:
        counts = Counter(r["type"] for r in self.records)
        return {t: counts.get(t, 0) for t in TRIAL_TYPES}

    @classmethod
    def from_records(cls, records, *, meta=None) -> "TrialSet":
        """From dicts with ``probe_texts`` and ``enroll_texts`` (lists of str), ``label`` (bool or
        0/1) and optionally ``type`` (default: hard_positive / easy_negative by label), ``id``."""
        index, texts, side_index, sides = {}, [], {}, []
        probe_side, enroll_side, labels, out = [], [], [], []

        def side_of(utts):
            if isinstance(utts, str):
                utts = [utts]
            key = []
            for t in utts:
                t = str(t)
                if t not in index:
                    index[t] = len(texts)
                    texts.append(t)
                key.append(index[t])
            key = tuple(key)
            if key not in side_index:
                side_index[key] = len(sides)
                sides.append(key)
            return side_index[key]

        for i, r in enumerate(records):
            for need in ("probe_texts", "enroll_texts", "label"):
                if need not in r:
                    raise DataError(f"trial {i}: missing {need!r}")
            probe_side.append(side_of(r["probe_texts"]))
            enroll_side.append(side_of(r["enroll_texts"]))
            label = bool(r["label"])
            labels.append(label)
            rec = {k: v for k, v in r.items() if k not in ("probe_texts", "enroll_texts")}
            rec.setdefault("id", f"t{i:07d}")
            rec.setdefault("type", HP if label else EN)
            rec.setdefault("probe", {"id": f"{rec['id']}-probe"})
            rec.setdefault("enroll", {"id": f"{rec['id']}-enroll"})
            rec["conditions"] = list(TYPE_CONDITIONS[rec["type"]])
            out.append(rec)
        return cls(texts, sides, probe_side, enroll_side, labels, out, meta=meta)

    def subset(self, mask) -> "TrialSet":
        idx = np.flatnonzero(np.asarray(mask))
        return TrialSet(self.texts, self.sides, self.probe_side[idx], self.enroll_side[idx], self.labels[idx],
                        [self.records[i] for i in idx], meta=self.meta)

    def write_jsonl(self, path, *, with_text: bool = False) -> None:
        with atomic_open(path, "w", encoding="utf-8") as handle:
            for i, rec in enumerate(self.records):
                row = dict(rec)
                if with_text:
                    row["probe_texts"] = self.probe_texts(i)
                    row["enroll_texts"] = self.enroll_texts(i)
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_trials_jsonl(path) -> TrialSet:
    """Trials written with texts (``with_text=True``) or any JSON lines of the same shape."""
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise DataError(f"not valid JSON ({err.msg})", path=path, line=number) from None
    try:
        return TrialSet.from_records(records)
    except DataError as err:
        raise DataError(f"{err} (trials written without texts need the manifest to rebuild them)",
                        path=path) from None


# ----------------------------------------------------------------------------- helpers


def _norm_utt(text: str) -> str:
    return " ".join(text.lower().split())


def _rng(seed: int, *parts) -> np.random.Generator:
    key = zlib.crc32("|".join(str(p) for p in parts).encode("utf-8"))
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, key])


def _codes(values):
    """Integer codes for a list of hashables; None -> -1."""
    table, out = {}, []
    for v in values:
        if v is None:
            out.append(-1)
        else:
            out.append(table.setdefault(v, len(table)))
    return np.asarray(out, dtype=np.int64)


def _name_patterns(speakers, attributes: dict, config: TrialConfig) -> dict:
    """speaker -> compiled regex of its name tokens, for speakers with a known name."""
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
        tokens = sorted({t.lower() for t in re.split(r"[\s.\-_]+", str(name)) if len(t) >= 3 and t.isalpha()})
        if tokens:
            out[spk] = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in tokens) + r")\b", re.IGNORECASE)
    return out


class _TopicIndex:
    """Episode title+description TF-IDF (unigrams+bigrams) and category sets."""

    def __init__(self, manifest, episodes: list):
        meta = {}
        for u in manifest:
            if u.episode is None:
                continue
            row = meta.setdefault(u.episode, {})
            for key in ("title", "description", "category"):
                if key not in row and u.extra.get(key) not in (None, "", []):
                    row[key] = u.extra[key]
        docs = [" ".join(str(meta.get(e, {}).get(k, "")) for k in ("title", "description")).strip()
                for e in episodes]
        self.has_text = any(docs)
        if self.has_text:
            from sklearn.feature_extraction.text import TfidfVectorizer

            vec = TfidfVectorizer(ngram_range=(1, 2), norm="l2")
            self.X = vec.fit_transform(docs).tocsr()
        else:
            self.X = None
        cats = [_category_set(meta.get(e, {}).get("category")) for e in episodes]
        vocab = {c: i for i, c in enumerate(sorted(set().union(*cats)))} if cats else {}
        self.has_category = bool(vocab)
        self.C = np.zeros((len(episodes), max(len(vocab), 1)), dtype=np.float32)
        for i, cs in enumerate(cats):
            for c in cs:
                self.C[i, vocab[c]] = 1.0
        self.size = self.C.sum(axis=1)

    def similarity(self, e: int, others: np.ndarray) -> np.ndarray:
        if self.X is None:
            return np.zeros(len(others))
        return np.asarray((self.X[others] @ self.X[e].T).todense()).ravel()

    def jaccard(self, e: int, others: np.ndarray) -> np.ndarray:
        inter = self.C[others] @ self.C[e]
        union = self.size[others] + self.size[e] - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)


def _category_set(value) -> set:
    if value is None:
        return set()
    if isinstance(value, (list, tuple, set)):
        items = value
    else:
        items = re.split(r"[,;|]", str(value))
    return {str(x).strip().lower() for x in items if str(x).strip()}


def has_topic_metadata(manifest) -> bool:
    return any(any(u.extra.get(k) not in (None, "", []) for k in ("title", "description", "category"))
               for u in manifest)


# ----------------------------------------------------------------------------- building


@dataclass
class _Pool:
    """One probe's candidates: same-episode appearances, other-episode ones (after the topic
    filter) with their topic similarity and category Jaccard, and which share the probe's series."""

    rng: np.random.Generator
    same_ep: np.ndarray
    cross: np.ndarray
    sims: Optional[np.ndarray]
    jac: Optional[np.ndarray]
    same_series: np.ndarray

    def strata(self, builder, mask) -> np.ndarray:
        return builder._strata(self.sims[mask], self.jac[mask])


@dataclass
class _Plan:
    probe: Probe
    partner: int  # appearance index
    position: str  # "tail" (same episode) or "head" (other episode)
    type: str
    label: bool


class TrialBuilder:
    """Probes, eligibility tables and screens for one manifest at one P (all tasks, all L).

    ``build(task, Ls)`` -> {L: TrialSet}; ``stats(task)`` -> counts for the report.
    """

    def __init__(self, manifest, config: TrialConfig, *, L_max: Optional[int] = None):
        self.config = config
        self.manifest = manifest
        self.L_max = int(L_max or config.L)
        self.apps = appearances(manifest)
        if not self.apps:
            raise DataError(f"{getattr(manifest, 'name', 'manifest')}: no utterance with text",
                            hint="SPARC trials need transcripts")
        self.attributes = manifest.speaker_attributes()
        spk_codes = _codes([a.speaker for a in self.apps])
        ep_names = sorted({a.episode for a in self.apps})
        ep_index = {e: i for i, e in enumerate(ep_names)}
        self.app_spk = spk_codes
        self.app_ep = np.asarray([ep_index[a.episode] for a in self.apps], dtype=np.int64)
        self.app_series = _codes([a.series for a in self.apps])
        self.app_n = np.asarray([len(a.ids) for a in self.apps], dtype=np.int64)
        self.by_episode = defaultdict(list)
        for a in self.apps:
            self.by_episode[self.app_ep[a.index]].append(a.index)
        # probes
        self.probes, self.n_cut, self.n_skipped, self.short_for_P = [], 0, 0, 0
        self.n_capped = 0
        for a in self.apps:
            ps, c, s = cut_probes(a, int(config.P), int(config.tolerance), bool(config.strict), int(config.max_probes))
            self.probes.extend(ps)
            self.n_cut += c
            self.n_skipped += s
            if not ps:
                self.short_for_P += 1
            elif len(ps) == config.max_probes:
                more, _, _ = cut_probes(a, int(config.P), int(config.tolerance), bool(config.strict), 10 ** 9)
                self.n_capped += len(more) - len(ps)
        self.short_for_L = int((self.app_n < self.L_max).sum())
        # topic control
        mode = config.topic_control
        if mode == "auto":
            mode = "on" if has_topic_metadata(manifest) else "off"
        self.topic_on = mode in ("on", True)
        self.topic = _TopicIndex(manifest, ep_names) if self.topic_on else None
        self.names = _name_patterns(sorted({a.speaker for a in self.apps}), self.attributes, config) \
            if config.name_screen != "off" else {}
        self._task = None
        self._norm_cache = {}
        self._stats = {}

    # -- enrollment utterance indices of an appearance for a plan
    def enroll_indices(self, plan: _Plan, L: int) -> list:
        app = self.apps[plan.partner]
        if plan.position == "head":
            return list(range(min(L, len(app.ids))))
        if plan.partner == plan.probe.app:
            rest = [i for i in range(len(app.ids)) if not plan.probe.start <= i < plan.probe.stop]
        else:
            rest = list(range(len(app.ids)))
        return rest[-L:]

    def _norm_set(self, app: int, idx) -> set:
        out = set()
        a = self.apps[app]
        for i in idx:
            if a.words[i] >= self.config.overlap_min_words:
                key = (app, i)
                if key not in self._norm_cache:
                    self._norm_cache[key] = _norm_utt(a.texts[i])
                out.add(self._norm_cache[key])
        return out

    def _screen(self, plan: _Plan, counts: Counter) -> bool:
        """True when the trial passes the overlap and name screens (checked with L_max)."""
        probe = plan.probe
        idx = self.enroll_indices(plan, self.L_max)
        enroll_app = self.apps[plan.partner]
        if self.config.overlap_screen:
            probe_norm = {_norm_utt(t) for t in probe.texts if len(t.split()) >= self.config.overlap_min_words}
            if probe_norm & self._norm_set(plan.partner, idx):
                counts["excluded_overlap"] += 1
                return False
        if self.names and (self.config.name_screen == "all" or (self._task == "speaker" and plan.label)):
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

    def _take(self, rng, probe, candidates, k, position, label_of, counts, type_of):
        """Up to k screened partners from candidates (random order)."""
        out = []
        if k <= 0 or len(candidates) == 0:
            return out
        for c in rng.permutation(np.asarray(candidates)):
            label = label_of(int(c))
            plan = _Plan(probe, int(c), position, type_of(label), label)
            if self._screen(plan, counts):
                out.append(plan)
                if len(out) >= k:
                    break
        return out

    def _cross_candidates(self, probe: Probe, counts: Counter):
        """Appearances in other episodes that can give a head enrollment, after the topic filter."""
        a = probe.app
        cands = np.flatnonzero(self.app_ep != self.app_ep[a])
        sims = jac = None
        if self.topic_on and len(cands):
            sims = self.topic.similarity(self.app_ep[a], self.app_ep[cands])
            keep = sims <= self.config.topic_max_similarity
            counts["excluded_topic_similarity"] += int((~keep).sum())
            cands, sims = cands[keep], sims[keep]
            jac = self.topic.jaccard(self.app_ep[a], self.app_ep[cands])
        return cands, sims, jac

    def _strata(self, sims, jac):
        s = np.digitize(sims, self.config.topic_sim_edges)
        j = np.digitize(jac, self.config.topic_jaccard_edges)
        return s * 100 + j

    def _matched(self, rng, probe, pos_cands, neg_cands, strata_pos, strata_neg, k, counts, label_pos, label_neg):
        """Topic-controlled cross-episode pairs: up to k positives, each with a same-stratum negative."""
        plans, used = [], np.zeros(len(neg_cands), dtype=bool)
        for i in rng.permutation(len(pos_cands)):
            if len(plans) >= 2 * k:
                break
            pos = _Plan(probe, int(pos_cands[i]), "head", HP, label_pos)
            if not self._screen(pos, counts):
                continue
            pool = np.flatnonzero((strata_neg == strata_pos[i]) & ~used)
            neg = None
            for j in rng.permutation(pool):
                plan = _Plan(probe, int(neg_cands[j]), "head", EN, label_neg)
                if self._screen(plan, counts):
                    neg, used[j] = plan, True
                    break
            if neg is None:
                counts["unmatched_positives"] += 1
                continue
            plans.extend([pos, neg])
        return plans

    def _same_series(self, a: int, cands: np.ndarray) -> np.ndarray:
        """Which candidates share the probe's series (both known and equal)."""
        return (self.app_series[cands] == self.app_series[a]) & (self.app_series[cands] >= 0)

    def plans(self, task: str) -> list:
        cfg = self.config
        self._task = task
        labels = task_labeller(task, self.attributes)
        counts = Counter()
        match_codes = [_codes([task_labeller(attr, self.attributes).get(a.speaker) for a in self.apps])
                       for attr in (cfg.match_negatives if task == "speaker" else ())]
        label_codes = _codes([labels.get(a.speaker) for a in self.apps])
        plans = []
        for probe in self.probes:
            a = probe.app
            same_ep = np.asarray([b for b in self.by_episode[self.app_ep[a]] if b != a], dtype=np.int64)
            cross, sims, jac = self._cross_candidates(probe, counts)
            pool = _Pool(_rng(cfg.seed, task, cfg.P, probe.id), same_ep, cross, sims, jac,
                         self._same_series(a, cross))
            if task == "speaker":
                made = self._speaker_plans(probe, pool, match_codes, counts)
            elif label_codes[a] < 0:
                counts["probes_unknown_label"] += 1
                continue
            else:
                made = self._attribute_plans(probe, pool, label_codes, counts)
            counts["probes_without_trials"] += not made
            plans += made
        self._stats[task] = counts
        return plans

    def _speaker_plans(self, probe: Probe, pool: "_Pool", match_codes: list, counts: Counter) -> list:
        """EP (own later turns), HN (episode partners), HP and EN (other episodes) of one probe."""
        cfg, a, rng, cross = self.config, probe.app, pool.rng, pool.cross
        spk = self.app_spk[a]
        neg_ok = np.ones(len(self.apps), dtype=bool)
        for codes in match_codes:
            neg_ok &= (codes == codes[a]) & (codes >= 0)
        plans = []
        # easy positive: own appearance, last L non-probe utterances (at least one)
        if cfg.partners[EP] > 0 and self.app_n[a] - (probe.stop - probe.start) >= 1:
            plans += self._take(rng, probe, [a], 1, "tail", lambda c: True, counts, lambda lab: EP)
        # hard negative: other speakers of the episode
        hn = pool.same_ep[(self.app_spk[pool.same_ep] != spk) & neg_ok[pool.same_ep]]
        plans += self._take(rng, probe, hn, cfg.partners[HN], "tail", lambda c: False, counts, lambda lab: HN)
        posm = self.app_spk[cross] == spk
        negm = (self.app_spk[cross] != spk) & neg_ok[cross]
        if cfg.positives_cross_series:
            posm &= ~pool.same_series
        if cfg.negatives_cross_series:
            negm &= ~pool.same_series
        if self.topic_on:
            return plans + self._matched(rng, probe, cross[posm], cross[negm], pool.strata(self, posm),
                                         pool.strata(self, negm), cfg.partners[HP], counts, True, False)
        plans += self._take(rng, probe, cross[posm], cfg.partners[HP], "head", lambda c: True, counts, lambda lab: HP)
        return plans + self._take(rng, probe, cross[negm], cfg.partners[EN], "head", lambda c: False, counts,
                                  lambda lab: EN)

    def _attribute_plans(self, probe: Probe, pool: "_Pool", label_codes: np.ndarray, counts: Counter) -> list:
        """Other speakers of the episode and of other episodes, labelled by attribute agreement."""
        cfg, a, rng, cross = self.config, probe.app, pool.rng, pool.cross
        mine = label_codes[a]
        known_other = (label_codes >= 0) & (self.app_spk != self.app_spk[a])
        same_label = lambda c: bool(label_codes[c] == mine)  # noqa: E731
        plans = self._take(rng, probe, pool.same_ep[known_other[pool.same_ep]], cfg.attribute_partners["same_episode"],
                           "tail", same_label, counts, lambda lab: EP if lab else HN)
        cm = known_other[cross]
        if cfg.negatives_cross_series:
            cm &= ~((label_codes[cross] != mine) & pool.same_series)
        # positives_cross_series is appendix A.4's speaker-task control: attribute tasks keep their positives
        k = cfg.attribute_partners["cross_episode"]
        if self.topic_on:
            posm, negm = cm & (label_codes[cross] == mine), cm & (label_codes[cross] != mine)
            return plans + self._matched(rng, probe, cross[posm], cross[negm], pool.strata(self, posm),
                                         pool.strata(self, negm), max(1, k // 2), counts, True, False)
        return plans + self._take(rng, probe, cross[cm], k, "head", same_label, counts, lambda lab: HP if lab else EN)

    def build(self, task: str, Ls=None) -> dict:
        """{L: TrialSet} for a task; the same probes and partners for every L."""
        Ls = [int(x) for x in (Ls or [self.config.L])]
        if max(Ls) > self.L_max:
            raise ValueError(f"L={max(Ls)} exceeds the L_max={self.L_max} this builder screened with")
        plans = self.plans(task)
        return {L: self._materialise(task, plans, L) for L in Ls}

    def _materialise(self, task: str, plans: list, L: int) -> TrialSet:
        texts, index, sides, side_index = [], {}, [], {}
        probe_side, enroll_side, labels, records = [], [], [], []

        def text_id(t):
            if t not in index:
                index[t] = len(texts)
                texts.append(t)
            return index[t]

        def side(key, utts):
            if key not in side_index:
                side_index[key] = len(sides)
                sides.append(tuple(text_id(t) for t in utts))
            return side_index[key]

        P = int(self.config.P)
        n_short = 0
        for n, plan in enumerate(plans):
            probe, partner = plan.probe, self.apps[plan.partner]
            papp = self.apps[probe.app]
            idx = self.enroll_indices(plan, L)
            n_short += len(idx) < L
            where = "head" if plan.position == "head" else (
                f"tail-without-p{probe.k}" if plan.partner == probe.app else "tail")
            enroll_id = f"{_clean_id(partner.speaker)}/{_clean_id(partner.episode)}/{where}-L{L}"
            probe_side.append(side(("p", probe.id), probe.texts))
            enroll_side.append(side(("e", enroll_id), [partner.texts[i] for i in idx]))
            labels.append(plan.label)
            records.append({
                "id": f"{task}/P{P}_L{L}/{n:06d}", "task": task, "P": P, "L": L, "type": plan.type,
                "label": int(plan.label), "conditions": list(TYPE_CONDITIONS[plan.type]),
                "same_episode": plan.position == "tail",
                "probe": {"id": probe.id, "speaker": papp.speaker, "episode": papp.episode,
                          "utt_ids": papp.ids[probe.start:probe.stop], "n_words": probe.n_words,
                          "cut_words": probe.cut_words},
                "enroll": {"id": enroll_id, "speaker": partner.speaker, "episode": partner.episode,
                           "utt_ids": [partner.ids[i] for i in idx], "position": plan.position},
            })
        meta = {"task": task, "P": P, "L": L, "enrollments_short_of_L": n_short}
        return TrialSet(texts, sides, probe_side, enroll_side, labels, records, meta=meta)

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
            "excluded_topic_similarity": c.get("excluded_topic_similarity", 0),
            "unmatched_positives": c.get("unmatched_positives", 0),
            "topic_control": self.topic_on,
            "speakers_with_names": len(self.names),
            "L_screened": self.L_max,
        }


def build_trials(manifest, config: TrialConfig, task: str = "speaker", Ls=None):
    """Convenience: ({L: TrialSet}, stats) for one task at ``config.P``."""
    Ls = list(Ls or [config.L])
    builder = TrialBuilder(manifest, config, L_max=max(Ls))
    sets = builder.build(task, Ls)
    return sets, builder.stats(task)
