"""VoicePrivacy data folders as they are: the challenge's layout under one root, found, paired with
their anonymized copies by suffix, checked, and planned per trial list.

The challenge keeps Kaldi data dirs side by side (``data/`` in its repositories)::

    ROOT/libri_dev_enrolls          ROOT/libri_dev_enrolls_mcadams        enrollment (``enrolls`` file)
    ROOT/libri_dev_trials_f         ROOT/libri_dev_trials_f_mcadams       a trial list (``trials`` file)
    ROOT/libri_dev_trials_m  ...    ROOT/libri_test_*  (the same twins)
    ROOT/libri_dev_trials_mixed     (2026: female, male and cross-sex trials in one list)
    ROOT/train-clean-360            ROOT/train-clean-360_mcadams          the attacker's training data

VoicePrivacy 2026's multilingual track (``vpc2026_track2``) keeps the same shape per language:
``{en,de,es,fr}_{dev,test}_enrolls``, ``..._trials_mixed`` and ``train_{english,german,spanish,french}``;
its ``wav.scp`` paths are relative to the challenge root (``corpora/de/dev/audio/...``: the data
folder's parent unless ``wav_root`` says), and its Multilingual LibriSpeech ids
(``<speaker>_<book>_<index>``) give each utterance its book as the episode. One run evaluates one
language (``--language``; a root holding one language's lists needs none).

An anonymized copy is the original's name plus the run's suffix (``anon_data_suffix``, ``_mcadams``),
as the challenge's ``eval_pre.yaml`` names them. Each list is scored as the challenge does: its
``trials`` pairs, speaker-level models from the dataset's ``enrolls`` utterances. Nothing is
re-anonymized: the copies are read as they are.
"""

from __future__ import annotations

import random
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

import numpy as np

from ..errors import DataError
from .languages import check_served, language_name
from .manifest import Manifest
from .splits import Split


@dataclass(frozen=True)
class VpcPreset:
    name: str
    title: str  # how tables name the layout
    datasets: tuple
    lists: tuple  # trial lists per dataset, the suffixes after "<dataset>_"
    train: str = "train-clean-360"
    languages: tuple = ()  # a multilingual preset: one language's datasets per run
    language: Optional[str] = None  # the language a multilingual preset was narrowed to
    relative_to_root: bool = False  # wav.scp paths relative to the challenge root

    def for_language(self, code: str) -> "VpcPreset":
        """The preset narrowed to one of its languages: ``de_dev``, ``de_test``, ``train_german``."""
        return replace(
            self,
            datasets=(f"{code}_dev", f"{code}_test"),
            train=TRACK2_TRAIN[code],
            language=code,
            title=f"{self.title} ({language_name(code)})",
        )


PRESETS = {
    # VoicePrivacy 2024: configs/eval_pre.yaml scores libri_{dev,test}_trials_{f,m}
    "vpc2024": VpcPreset(
        "vpc2024", "VoicePrivacy 2024", ("libri_dev", "libri_test"), ("trials_f", "trials_m")
    ),
    # VoicePrivacy 2026: configs/track1/eval_pre.yaml scores libri_{dev,test}_trials_mixed
    "vpc2026": VpcPreset(
        "vpc2026", "VoicePrivacy 2026", ("libri_dev", "libri_test"), ("trials_mixed",)
    ),
    # VoicePrivacy 2026 track 2: configs/track2/eval_post_{en,de,es,fr}.yaml score
    # {lang}_{dev,test}_trials_mixed (zh and ja are anonymized there but not scored)
    "vpc2026_track2": VpcPreset(
        "vpc2026_track2",
        "VoicePrivacy 2026 track 2",
        (),
        ("trials_mixed",),
        languages=("en", "de", "es", "fr"),
        relative_to_root=True,
    ),
}
TRACK2_TRAIN = {
    "en": "train_english",
    "de": "train_german",
    "es": "train_spanish",
    "fr": "train_french",
}
SEX_OF_LIST = {"trials_f": "f", "trials_m": "m", "trials_mixed": "mixed"}


@dataclass(frozen=True)
class TrialList:
    """One trial list of the layout: what a row of the challenge's table is."""

    name: str  # libri_test_trials_f
    dataset: str  # libri_test
    enrollment: str  # libri_test_enrolls
    sex: str  # f | m | mixed
    folders: tuple  # original Kaldi dirs holding its utterances (two for a regenerated mixed list)
    anon_folders: tuple = ()  # their anonymized copies (empty: original speech only)
    regenerated: bool = False  # a mixed list built here (vpc_regenerate_mixed), not read


@dataclass(frozen=True)
class VpcLayout:
    preset: VpcPreset
    root: Path
    suffix: Optional[str]
    enrolls: dict  # dataset -> (original folder, anonymized folder or None)
    lists: tuple  # TrialList
    train: Optional[Path]  # None: absent under the root
    anon_train: Optional[Path]
    wav_root: Optional[Path] = None  # relative wav.scp paths resolve here (None: each folder)

    def label(self, attacker: str) -> str:
        return f"{self.preset.title} layout, attacker: {attacker}"


def preset_of(name) -> VpcPreset:
    if name not in PRESETS:
        raise DataError(
            f"vpc_preset {name!r} is not one of {sorted(PRESETS)}",
            hint="hparams/vpc2024.yaml, vpc2026.yaml and vpc2026_track2.yaml set it",
        )
    return PRESETS[name]


def languages_under(root, preset: VpcPreset) -> list:
    """The languages of a multilingual preset whose enrollment lists are under ``root``."""
    return [c for c in preset.languages if (Path(root) / f"{c}_dev_enrolls").is_dir()]


def _narrowed(root: Path, preset: VpcPreset, language: Optional[str]) -> VpcPreset:
    """A multilingual preset narrowed to ``language``, or to the one language under the root."""
    if not preset.languages:
        return preset
    found = languages_under(root, preset)
    code = language or (found[0] if len(found) == 1 else None)
    if code is None:
        raise DataError(
            f"the {preset.name} preset evaluates one language per run; "
            + (
                f"{root} holds {', '.join(found)}"
                if found
                else f"no {{lang}}_dev_enrolls under {root}"
            ),
            path=root,
            hint="choose one with --language=" + (found[0] if found else "de"),
        )
    check_served(
        f"the {preset.name} preset",
        code,
        preset.languages,
        hint="choose one with --language=" + (found[0] if found else preset.languages[0]),
    )
    return preset.for_language(code)


# --- finding the folders -------------------------------------------------------------------------


def _required(folder: Path, needs: str, preset: VpcPreset) -> Path:
    if not (folder / needs).is_file():
        raise DataError(
            f"{folder.name} (with its {needs} file) is missing: the {preset.name} preset reads it",
            path=folder,
            hint=f"point --data_folder at the challenge's data folder (it holds {folder.name}/)",
        )
    return folder


def suffixes_of(root: Path, name: str) -> list:
    """The suffixes of the folders named ``<name>_<something>`` under ``root``."""
    return sorted(
        p.name[len(name) :] for p in root.iterdir() if p.is_dir() and p.name.startswith(name + "_")
    )


def _choose_suffix(root: Path, preset: VpcPreset, suffix: Optional[str]) -> Optional[str]:
    """The given suffix, else the one suffix the copies of the first list share (none: original
    speech only); two suffixes for one list are ambiguous."""
    if suffix is not None:
        return suffix if suffix.startswith("_") else f"_{suffix}"
    first = f"{preset.datasets[0]}_{preset.lists[0]}"
    found = suffixes_of(root, first)
    if len(found) > 1:
        raise DataError(
            f"{len(found)} suffixes match {first}: {', '.join(found)}",
            path=root,
            hint=f"choose one with --anon_data_suffix (e.g. --anon_data_suffix={found[0]})",
        )
    return found[0] if found else None


def _copy(root: Path, name: str, suffix: Optional[str], needs: str, preset: VpcPreset):
    if suffix is None:
        return None
    return _required(root / f"{name}{suffix}", needs, preset)


def _trial_list(root, preset, dataset, which, suffix, regenerate_mixed) -> TrialList:
    name = f"{dataset}_{which}"
    common = dict(
        name=name, dataset=dataset, enrollment=f"{dataset}_enrolls", sex=SEX_OF_LIST[which]
    )
    if which == "trials_mixed" and regenerate_mixed:
        parts = [f"{dataset}_trials_f", f"{dataset}_trials_m"]
        folders = tuple(_required(root / p, "trials", preset) for p in parts)
        anon = tuple(_copy(root, p, suffix, "utt2spk", preset) for p in parts) if suffix else ()
        return TrialList(**common, folders=folders, anon_folders=anon, regenerated=True)
    folder = _required(root / name, "trials", preset)
    anon = (_copy(root, name, suffix, "utt2spk", preset),) if suffix else ()
    return TrialList(**common, folders=(folder,), anon_folders=anon)


def layout_of(data) -> VpcLayout:
    """The layout :class:`~sparc_eval.data.plan.DataSettings` name (``vpc_preset`` set)."""
    return find_layout(
        data.data_folder,
        data.vpc_preset,
        data.anon_data_suffix,
        regenerate_mixed=data.vpc_regenerate_mixed,
        language=data.language,
        wav_root=data.wav_root,
    )


def find_layout(
    root,
    preset_name: str,
    suffix: Optional[str] = None,
    *,
    regenerate_mixed: bool = False,
    language: Optional[str] = None,
    wav_root=None,
) -> VpcLayout:
    """The preset's folders under ``root`` with their anonymized copies (DataError naming the
    first missing list and the preset); a multilingual preset's folders of ``language``."""
    preset, root = preset_of(preset_name), Path(root)
    if not root.is_dir():
        raise DataError(f"{root} is not a folder", hint="--data_folder=the challenge's data folder")
    preset = _narrowed(root, preset, language)
    if preset.languages and regenerate_mixed:
        raise DataError(
            f"vpc_regenerate_mixed rebuilds track 1's LibriSpeech lists; the {preset.name} preset "
            "reads its mixed lists as they are",
            hint="leave vpc_regenerate_mixed at False",
        )
    if wav_root is None and preset.relative_to_root:
        wav_root = root.resolve().parent
    suffix = _choose_suffix(root, preset, suffix)
    enrolls = {
        d: (
            _required(root / f"{d}_enrolls", "enrolls", preset),
            _copy(root, f"{d}_enrolls", suffix, "utt2spk", preset),
        )
        for d in preset.datasets
    }
    lists = tuple(
        _trial_list(root, preset, d, which, suffix, regenerate_mixed)
        for d in preset.datasets
        for which in preset.lists
    )
    train = root / preset.train
    anon_train = root / f"{preset.train}{suffix}" if suffix else None
    return VpcLayout(
        preset,
        root,
        suffix,
        enrolls,
        lists,
        train if train.is_dir() else None,
        anon_train if anon_train is not None and anon_train.is_dir() else None,
        None if wav_root is None else Path(wav_root),
    )


# --- reading the lists ---------------------------------------------------------------------------


def _union(manifests, name: str) -> Manifest:
    """Utterances of several dirs, each id once (a 2026 mixed list repeats the f and m lists')."""
    seen = {}
    for manifest in manifests:
        for u in manifest:
            seen.setdefault(u.id, u)
    return Manifest(list(seen.values()), name=name)


def load_folders(folders, name: str, layout: Optional[VpcLayout] = None) -> Manifest:
    """The utterances of Kaldi ``folders`` (each id once); a layout's relative ``wav.scp`` paths
    resolve against its ``wav_root``, and a multilingual layout's utterances say their language
    and (from Multilingual LibriSpeech ids) their book as the episode."""
    from .corpora.kaldi import load_kaldi_dir

    wav_root = layout.wav_root if layout is not None else None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*loading as text-only")
        manifest = _union([load_kaldi_dir(f, wav_root=wav_root) for f in folders], name)
    if layout is None or layout.preset.language is None:
        return manifest
    return with_mls_books(manifest).with_language(layout.preset.language)


def mls_book(utterance) -> Optional[str]:
    """The book of a Multilingual LibriSpeech id ``<speaker>_<book>_<index>`` (numbers, the
    speaker the utterance's own), else None."""
    parts = utterance.id.split("_")
    if len(parts) == 3 and all(p.isdigit() for p in parts) and parts[0] == utterance.speaker:
        return parts[1]
    return None


def with_mls_books(manifest: Manifest) -> Manifest:
    """Utterances with a Multilingual LibriSpeech id get its book as their episode; other ids are
    left as they are."""
    from dataclasses import replace as replace_utterance

    return manifest.replace(
        [replace_utterance(u, episode=b) if (b := mls_book(u)) else u for u in manifest]
    )


def original_corpus(layout: VpcLayout) -> Manifest:
    """Every enrollment and trial utterance of the layout, original speech."""
    folders = [e[0] for e in layout.enrolls.values()] + [f for t in layout.lists for f in t.folders]
    return load_folders(
        dict.fromkeys(folders), f"{layout.preset.name} lists ({layout.root})", layout
    )


def anonymized_corpus(layout: VpcLayout) -> Manifest:
    """The anonymized copies of every enrollment and trial folder, as they are."""
    folders = [e[1] for e in layout.enrolls.values()] + [
        f for t in layout.lists for f in t.anon_folders
    ]
    return load_folders(
        dict.fromkeys(folders), f"{layout.preset.name} lists{layout.suffix}", layout
    )


def enrollment(layout: VpcLayout, by_id) -> dict:
    """speaker -> enrollment utterance ids, from each dataset's ``enrolls`` file."""
    from .corpora.kaldi import read_id_list
    from .splits import check_known

    enroll: dict = {}
    for folder, _ in layout.enrolls.values():
        ids = read_id_list(folder / "enrolls")
        check_known(ids, by_id, "enrollment", folder / "enrolls")
        for utt in ids:
            enroll.setdefault(by_id[utt].speaker, []).append(utt)
    return enroll


def list_pairs(trial_list: TrialList, by_id, enroll: dict, *, seed: int = 0) -> list:
    """(enroll speaker, trial id, is_target) of one list, in the file's order."""
    from .corpora.kaldi import read_trials

    if trial_list.regenerated:
        return regenerate_mixed(trial_list, by_id, enroll, seed=seed)
    return read_trials(
        trial_list.folders[0] / "trials", known_utterances=by_id, known_speakers=enroll
    )


def regenerate_mixed(trial_list: TrialList, by_id, enroll: dict, *, seed: int) -> list:
    """A mixed list built as the 2026 script ``scripts/mixed_trials_librispeech.py`` builds it
    (female and male lists, plus each trial utterance against as many other-sex enrollment
    speakers as its list's average non-target count), with a seeded draw of distinct speakers
    (the script's draw is unseeded and may repeat a speaker): a named deviation."""
    from .corpora.kaldi import read_trials

    rng = random.Random(seed)
    lists = [
        read_trials(f / "trials", known_utterances=by_id, known_speakers=enroll)
        for f in trial_list.folders
    ]
    sex_of = {s: by_id[ids[0]].sex for s, ids in enroll.items()}
    pairs = [p for pairs in lists for p in pairs]
    for own in lists:
        counts = _nontarget_counts(own)
        average = round(sum(counts.values()) / max(1, len(counts)))
        for utt in counts:
            others = sorted(s for s, x in sex_of.items() if x not in (None, by_id[utt].sex))
            pairs += [(s, utt, False) for s in rng.sample(others, min(average, len(others)))]
    return pairs


def _nontarget_counts(pairs) -> dict:
    counts = {utt: 0 for _, utt, _ in pairs}
    for _, utt, is_target in pairs:
        counts[utt] += not is_target
    return counts


def pooled_split(layout: VpcLayout, manifest: Manifest, *, seed: int = 0) -> tuple:
    """(the split pooling every list, {list name: its pairs}): one attacker run scores every list;
    each list's rows select its own pairs (speaker-level models, so a pair scores alike pooled)."""
    by_id = manifest.by_id()
    enroll = enrollment(layout, by_id)
    lists = {t.name: list_pairs(t, by_id, enroll, seed=seed) for t in layout.lists}
    pooled = list(dict.fromkeys(p for pairs in lists.values() for p in pairs))
    trial_ids = list(dict.fromkeys(p[1] for p in pooled))
    return Split(enroll, trial_ids, pooled, source="vpc lists"), lists


# --- the data plan -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Books:
    """The books of a Multilingual LibriSpeech evaluation: each utterance's, and the books of each
    enrollment speaker's enrollment utterances."""

    utterance: dict  # utterance id -> book
    speaker: dict  # enrollment speaker -> frozenset of books

    @classmethod
    def of(cls, manifest: Manifest, enroll: dict) -> Optional["Books"]:
        """The books of Multilingual LibriSpeech ids (:func:`mls_book`); None when no utterance
        has one (English track 2 is LibriSpeech, whose chapters are not books)."""
        utterance = {u.id: b for u in manifest if (b := mls_book(u)) is not None}
        if not utterance:
            return None
        speaker = {
            s: frozenset(utterance[u] for u in ids if u in utterance) for s, ids in enroll.items()
        }
        return cls(utterance, speaker)


@dataclass(frozen=True)
class PlannedLists:
    """The lists a plan scores, each with its pairs: what the per-list rows select."""

    title: str  # VoicePrivacy 2024
    preset: str
    suffix: Optional[str]
    lists: tuple  # (TrialList, [(enroll speaker, trial id, is_target)])
    deviations: dict  # name -> how the plan departs from the challenge
    books: Optional["Books"] = None  # a multilingual preset's books (rows give their sharing)

    def label(self, attacker: str) -> str:
        return f"{self.title} layout, attacker: {attacker}"

    def record(self) -> dict:
        """results.json's ``run.vpc``: the preset, the copies' suffix, each list's folders."""
        return {
            "preset": self.preset,
            "anon_data_suffix": self.suffix,
            "lists": {
                t.name: {
                    "folders": [str(f) for f in t.folders],
                    "anon_folders": [str(f) for f in t.anon_folders],
                    "regenerated": t.regenerated,
                }
                for t, _ in self.lists
            },
        }

    def without(self, gone: set) -> "PlannedLists":
        lists = tuple((t, [p for p in pairs if p[1] not in gone]) for t, pairs in self.lists)
        return replace(self, lists=lists)


def plan_vpc(data):
    """The :class:`~sparc_eval.data.planned.DataPlan` of a preset: the layout's original lists (the
    split pools them; ``lists`` keeps each), their anonymized copies by suffix for the anonymized
    scenarios, ``train-clean-360`` (or its copy, semi-informed) for trained attackers."""
    from .planned import DataPlan

    layout = layout_of(data)
    evaluation = original_corpus(layout)
    split, pairs = pooled_split(layout, evaluation, seed=data.split_seed)
    planned = PlannedLists(
        layout.preset.title,
        layout.preset.name,
        layout.suffix,
        tuple((t, pairs[t.name]) for t in layout.lists),
        _deviations(layout, data),
        Books.of(evaluation, split.enroll) if layout.preset.language else None,
    )
    train = training_corpus(layout, data)
    trials = enroll = evaluation
    if data.scenario != "original":
        trials, gone = anonymized_lists(layout, data, split)
        enroll = trials if data.scenario in ("lazy-informed", "semi-informed") else evaluation
        if gone:
            from .splits import without_utterances

            split, planned = without_utterances(split, gone), planned.without(gone)
    return DataPlan(train, enroll, trials, split, evaluation, data.scenario, lists=planned)


def _deviations(layout: VpcLayout, data) -> dict:
    found = {}
    if any(t.regenerated for t in layout.lists):
        found["vpc: mixed lists regenerated"] = (
            f"the mixed lists were built here (vpc_regenerate_mixed, seed {data.split_seed}) from the "
            "female and male lists as the 2026 script does, with a seeded draw of distinct speakers; the "
            "challenge's lists come from an unseeded draw and cannot be regenerated: numbers are not "
            "comparable with ones on the official lists"
        )
    if data.vpc_train_speakers:
        found["vpc: training speakers"] = (
            f"trained on a seeded subset of {data.vpc_train_speakers} speakers of {layout.preset.train} "
            f"(seed {data.split_seed}; the challenge's attacker uses all 921)"
        )
    if layout.preset.language:
        found.update(_track2_deviations(layout))
    return found


def _track2_deviations(layout: VpcLayout) -> dict:
    """How a track-2 run departs from VoicePrivacy 2026's multilingual evaluation."""
    train = layout.preset.train
    return {
        "vpc2026_track2: attackers": (
            "the challenge's lazy-informed attacker is its English-trained WavLM-ECAPA and its "
            "semi-informed one that model fine-tuned on each language's anonymized training set; here "
            f"the hparams' attacker trains on {train} (original speech; its anonymized copy for "
            "semi-informed), unless train_folders or a model folder name another"
        ),
        "vpc2026_track2: emotion": (
            "the challenge's emotion recognition (emodata_track2_*, UAR) is not read or computed here"
        ),
    }


def anonymized_lists(layout: VpcLayout, data, split: Split) -> tuple:
    """(the anonymized copies as one corpus, the needed ids they lack): each copy is checked
    against the ids its original's role needs, under the runner's missing-utterance rule."""
    from .words import mark_anonymized

    if layout.suffix is None:
        raise DataError(
            f"scenario {data.scenario} needs the anonymized copies, but no folder under the root "
            f"has a suffix (e.g. {layout.lists[0].name}_mcadams)",
            path=layout.root,
            hint="give --anon_data_suffix=_NAME, or --scenario=original",
        )
    gone = _lacking(_needed_by_folder(layout, split))
    name = data.anonymizer_name or layout.suffix.lstrip("_")
    anonymized = mark_anonymized(
        anonymized_corpus(layout), name=name, keeps_words=data.anon_keeps_words
    )
    return anonymized, gone


def _lacking(needed: dict) -> set:
    """The needed ids the copies lack, under the runner's rule over the whole split (a few are
    left out with a warning; more than ``MAX_MISSING_SHARE`` is an error naming the first ids
    and the copy that lacks them)."""
    from .planned import MAX_MISSING_SHARE

    lacking = {f: sorted(ids - _ids_of(f)) for f, ids in needed.items()}
    gone = {u for ids in lacking.values() for u in ids}
    total = sum(len(ids) for ids in needed.values())
    if not gone:
        return gone
    folder, first = next((f, ids) for f, ids in lacking.items() if ids)
    said = f"{len(gone)} of the {total} enrollment and trial utterances are missing from the anonymized copies"
    if len(gone) > MAX_MISSING_SHARE * total:
        raise DataError(
            f"{said}, e.g. {first[:3]} from {folder.name}",
            path=folder,
            hint="anonymize every utterance of the original folder (the copy must hold its ids)",
        )
    warnings.warn(f"{said} (e.g. {first[:3]} from {folder.name}); they are left out", stacklevel=3)
    return gone


def _needed_by_folder(layout: VpcLayout, split: Split) -> dict:
    """anonymized folder -> the ids of its original that the split reads."""
    needed = {}
    enroll_ids = {u for ids in split.enroll.values() for u in ids}
    trial_ids = set(split.trial_ids)
    for original, copy in layout.enrolls.values():
        needed[copy] = _ids_of(original) & enroll_ids
    for t in layout.lists:
        for original, copy in zip(t.folders, t.anon_folders):
            needed[copy] = needed.get(copy, set()) | (_ids_of(original) & trial_ids)
    return needed


def _ids_of(folder: Path) -> set:
    from .corpora.kaldi import read_table

    return set(read_table(folder / "utt2spk", rest=False))


def training_corpus(layout: VpcLayout, data) -> Manifest:
    """``train_folders`` when given, else the preset's training folder (its anonymized copy for
    the semi-informed attacker), on a seeded subset of ``vpc_train_speakers`` when set; an empty
    corpus when the root has none (attackers that do not train need none)."""
    from .corpora.specs import load_specs

    semi = data.scenario == "semi-informed"
    if data.train_folders:
        return load_specs(data.train_folders, cache_folder=data.cache_folder)
    folder = layout.anon_train if semi else layout.train
    if folder is None and semi:
        raise DataError(
            f"{layout.preset.train}{layout.suffix} is missing: the {layout.preset.name} preset's "
            "semi-informed attacker trains on it",
            path=layout.root,
            hint="add the anonymized training folder, or choose another --scenario",
        )
    if folder is None:
        return Manifest([], name=f"{layout.preset.train} (absent)")
    return _speaker_subset(load_folders([folder], str(folder), layout), data)


def _speaker_subset(train: Manifest, data) -> Manifest:
    n = data.vpc_train_speakers
    if not n or n >= len(train.speakers()):
        return train
    speakers = sorted(train.speakers())
    order = np.random.default_rng(data.split_seed).permutation(len(speakers))
    keep = {speakers[i] for i in order[: int(n)]}
    return train.subset(lambda u: u.speaker in keep)
