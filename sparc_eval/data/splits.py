"""Enrollment / trial splits for speaker verification on a corpus.

Three sources, in the order a recipe tries them:

1. VoicePrivacy lists: an ``enrolls`` file of enrollment utterances and Kaldi ``trials`` files
   (``<enroll-speaker> <utt> target|nontarget``) that fix the trial pairs.
2. Id lists (SpAnE's ``ls-test-clean_{enrolls,trials}.txt``: the paper's 20/20 split of
   LibriSpeech test-clean): every enrollment speaker is scored against every trial utterance.
3. A seeded split (the paper's EdAcc rule, section 5): keep utterances of 2-30 s, at most 60
   per speaker, 20 for enrollment and the rest for trials; a speaker with fewer than 30 is split
   evenly (the extra one goes to the trials). Speakers with fewer than 2 usable utterances
   cannot be both enrolled and tested: they are left out and listed in ``dropped``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataError

if TYPE_CHECKING:  # annotations only
    from .manifest import Manifest


@dataclass
class Split:
    enroll: dict  # speaker -> [utterance ids]
    trial_ids: list  # trial utterance ids, in order
    pairs: list | None = None  # explicit (enroll speaker, trial id, is_target), else all pairs
    dropped: dict = field(default_factory=dict)  # speaker -> why it was left out
    source: str = ""

    def trial_pairs(self, utt2spk: dict) -> list:
        """(enroll speaker, trial id, is_target) for every scored trial."""
        if self.pairs is not None:
            return self.pairs
        speakers = sorted(self.enroll)
        return [(s, t, utt2spk[t] == s) for t in self.trial_ids for s in speakers]


def check_known(ids, known: dict, what: str, path) -> None:
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise DataError(
            f"{len(unknown)} {what} ids are not in the corpus, e.g. {unknown[:3]}",
            path=path,
            hint="the list and the corpus must come from the same data; check --data_folder",
        )


def from_vpc_lists(manifest, enrolls_file, trials_files) -> Split:
    from .corpora.kaldi import read_id_list, read_trials

    by_id = manifest.by_id()
    enroll_ids = read_id_list(enrolls_file)
    check_known(enroll_ids, by_id, "enrollment", enrolls_file)
    enroll: dict = {}
    for utt in enroll_ids:
        enroll.setdefault(by_id[utt].speaker, []).append(utt)
    pairs, trial_ids = [], []
    for trials_file in trials_files:
        for spk, utt, is_target in read_trials(
            trials_file, known_utterances=by_id, known_speakers=enroll
        ):
            pairs.append((spk, utt, is_target))
            trial_ids.append(utt)
    return Split(enroll, list(dict.fromkeys(trial_ids)), pairs, source="vpc lists")


def from_id_lists(manifest, enroll_file, trial_file) -> Split:
    from .corpora.kaldi import read_id_list

    by_id = manifest.by_id()
    enroll_ids, trial_ids = read_id_list(enroll_file), read_id_list(trial_file)
    check_known(enroll_ids, by_id, "enrollment", enroll_file)
    check_known(trial_ids, by_id, "trial", trial_file)
    overlap = set(enroll_ids) & set(trial_ids)
    if overlap:
        raise DataError(
            f"{len(overlap)} utterances are both enrollment and trial, e.g. {sorted(overlap)[:3]}",
            path=trial_file,
        )
    enroll: dict = {}
    for utt in enroll_ids:
        enroll.setdefault(by_id[utt].speaker, []).append(utt)
    return Split(enroll, trial_ids, source="id lists")


def seeded_split(
    manifest,
    *,
    n_enroll: int = 20,
    max_per_speaker: int = 60,
    min_duration: float | None = 2.0,
    max_duration: float | None = 30.0,
    seed: int = 0,
) -> Split:
    rng = np.random.default_rng(seed)
    by_speaker: dict = {}
    for utt in manifest:
        if utt.duration is not None:
            if min_duration is not None and utt.duration < min_duration:
                continue
            if max_duration is not None and utt.duration > max_duration:
                continue
        by_speaker.setdefault(utt.speaker, []).append(utt.id)
    enroll, trial_ids, dropped = {}, [], {}
    for speaker in sorted({u.speaker for u in manifest}):
        ids = by_speaker.get(speaker, [])
        if len(ids) < 2:
            dropped[speaker] = f"{len(ids)} usable utterance(s); a split needs at least 2"
            continue
        chosen = [ids[i] for i in sorted(rng.permutation(len(ids))[:max_per_speaker])]
        order = rng.permutation(len(chosen))
        k = n_enroll if len(chosen) >= 30 else len(chosen) // 2
        enroll[speaker] = [chosen[i] for i in sorted(order[:k])]
        trial_ids.extend(chosen[i] for i in sorted(order[k:]))
    if len(enroll) < 2:
        raise DataError(
            f"only {len(enroll)} speakers have enough utterances for a split",
            hint="verification needs at least two speakers with 2+ utterances each",
        )
    return Split(enroll, trial_ids, dropped=dropped, source=f"seeded split (seed {seed})")


def make_split(
    manifest,
    *,
    enrolls_dir=None,
    trials_dirs=None,
    enroll_list=None,
    trial_list=None,
    seed: int = 0,
    **seeded,
) -> Split:
    """VoicePrivacy lists if given, else id lists if given, else a seeded split."""
    if enrolls_dir is not None:
        if not trials_dirs:
            raise DataError(
                "enrolls_dir is set but trials_dirs is empty", hint="list the VPC trials dirs"
            )
        return from_vpc_lists(
            manifest, Path(enrolls_dir) / "enrolls", [Path(d) / "trials" for d in trials_dirs]
        )
    if enroll_list is not None or trial_list is not None:
        if enroll_list is None or trial_list is None:
            raise DataError("enroll_list and trial_list go together")
        return from_id_lists(manifest, enroll_list, trial_list)
    return seeded_split(manifest, seed=seed, **seeded)


def speaker_halves(manifest: Manifest, *, eval_fraction: float, seed: int) -> tuple:
    """Disjoint (training, evaluation) speaker sets of one corpus, seeded."""
    speakers = manifest.speakers()
    order = np.random.default_rng(seed).permutation(len(speakers))
    n_eval = max(2, int(round(len(speakers) * eval_fraction)))
    if len(speakers) - n_eval < 2:
        raise DataError(
            f"{manifest.name}: {len(speakers)} speakers are too few to train on some and "
            f"evaluate on others",
            hint="give a separate eval_folder",
        )
    evaluated = {speakers[i] for i in order[:n_eval]}
    return manifest.subset(lambda u: u.speaker not in evaluated), manifest.subset(
        lambda u: u.speaker in evaluated
    )


def without_utterances(split: Split, gone: set) -> Split:
    """The split without the utterances in ``gone``, each listed in ``dropped``."""
    enroll = {s: [u for u in ids if u not in gone] for s, ids in split.enroll.items()}
    empty = [s for s, ids in enroll.items() if not ids]
    if empty:
        raise DataError(
            f"enrollment speakers {empty[:3]} lost every enrollment utterance to anonymizer failures",
            hint="re-run the anonymizer on the utterances listed in its failures.jsonl",
        )
    pairs = None if split.pairs is None else [p for p in split.pairs if p[1] not in gone]
    dropped = dict(split.dropped)
    dropped.update(
        {
            f"utterance {u}": "missing from the anonymized corpus (the anonymizer failed on it)"
            for u in sorted(gone)
        }
    )
    return Split(
        enroll, [t for t in split.trial_ids if t not in gone], pairs, dropped, split.source
    )
