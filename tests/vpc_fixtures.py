"""A VoicePrivacy challenge data folder made from the demo corpus: Kaldi dirs as the challenge
writes them (wav.scp, utt2spk, spk2utt, text, spk2gender, utt2dur; ``enrolls`` and ``trials``),
the 2024 per-sex lists and the 2026 mixed lists, and anonymized copies under a suffix (the same
audio: the identity anonymizer)."""

from __future__ import annotations

from pathlib import Path

N_ENROLL = 3  # enrollment utterances per speaker; the rest are trials


def write_kaldi_dir(folder: Path, utterances, *, trials=None, enrolls=None, upper=True) -> Path:
    """A Kaldi dir of ``utterances`` (LibriSpeech's upper-case text unless ``upper`` is False)."""
    folder.mkdir(parents=True, exist_ok=True)
    utterances = sorted(utterances, key=lambda u: u.id)
    speakers = sorted({u.speaker for u in utterances})
    sex = {u.speaker: (u.sex or "").lower() for u in utterances}
    files = {
        "wav.scp": [f"{u.id} {u.audio.path}" for u in utterances],
        "utt2spk": [f"{u.id} {u.speaker}" for u in utterances],
        "text": [f"{u.id} {u.text.upper() if upper else u.text}" for u in utterances],
        "utt2dur": [f"{u.id} {u.duration} " for u in utterances],
        "spk2gender": [f"{s} {sex[s]}" for s in speakers],
        "spk2utt": [" ".join([s, *(u.id for u in utterances if u.speaker == s)]) for s in speakers],
    }
    if trials is not None:
        files["trials"] = [f"{s} {t} {'target' if ok else 'nontarget'}" for s, t, ok in trials]
    if enrolls is not None:
        files["enrolls"] = list(enrolls)
    for name, lines in files.items():
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _trials(enroll_speakers, trial_utterances) -> list:
    return [(s, u.id, u.speaker == s) for u in trial_utterances for s in enroll_speakers]


def build_vpc_tree(manifest, root: Path, suffix: str = "_identity") -> Path:
    """Half of the demo speakers as libri_dev, half as libri_test (each with both sexes); per
    dataset an enrolls dir, trials_f, trials_m and trials_mixed, each copied under ``suffix``."""
    speakers = sorted({u.speaker for u in manifest})
    by_sex = {
        x: [s for s in speakers if manifest.speaker_attributes()[s]["sex"] == x] for x in "FM"
    }
    for index, dataset in enumerate(("libri_dev", "libri_test")):
        chosen = {s for x in "FM" for s in by_sex[x][index::2]}
        own = [u for u in manifest if u.speaker in chosen]
        enroll = [u for s in sorted(chosen) for u in [v for v in own if v.speaker == s][:N_ENROLL]]
        trial = [u for u in own if u not in enroll]
        dirs = {"enrolls": (enroll, None, [u.id for u in enroll])}
        for x in "FM":
            sex_spk = sorted(s for s in chosen if s in by_sex[x])
            sex_trials = [u for u in trial if u.speaker in sex_spk]
            dirs[f"trials_{x.lower()}"] = (sex_trials, _trials(sex_spk, sex_trials), None)
        dirs["trials_mixed"] = (trial, _trials(sorted(chosen), trial), None)
        for name, (utts, trials, enrolls) in dirs.items():
            for tail in ("", suffix):
                write_kaldi_dir(
                    root / f"{dataset}_{name}{tail}",
                    utts,
                    trials=trials if not tail else None,
                    enrolls=enrolls if not tail else None,
                )
    return root


# --- VoicePrivacy 2026 track 2 -------------------------------------------------------------------
TRACK2_TRAIN = {
    "en": "train_english",
    "de": "train_german",
    "es": "train_spanish",
    "fr": "train_french",
}
ENROLL_SHARE = 0.15  # MLS lists enroll ceil(15%) of each speaker's utterances (seed 123)


def _relative_copy(utterances, root: Path, folder: str, convert=None) -> list:
    """Copies of the utterances' audio at root/folder/<speaker>/<book>/<id>.wav (``convert``:
    audio -> audio, the anonymizer), each utterance pointing at its path relative to the root."""
    import dataclasses

    import soundfile as sf

    from sparc_eval.data.manifest import AudioRef

    out = []
    for u in utterances:
        book = u.id.split("_")[1]
        relative = Path(folder) / u.speaker / book / f"{u.id}.wav"
        if not (root / relative).exists():  # one file per utterance, however many lists hold it
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            audio, sr = sf.read(u.audio.path, dtype="float32")
            if convert is not None:
                audio = convert(audio, sr, u)
            sf.write(str(root / relative), audio, sr, subtype="PCM_16")
        out.append(dataclasses.replace(u, audio=AudioRef(str(relative))))
    return out


def _split_lists(utterances) -> dict:
    """MLS's lists of one split: enroll ceil(15%) of each speaker's utterances (seeded), pair
    every enrolled speaker with every other utterance (mixed), and the per-sex lists."""
    import math
    import random

    rng = random.Random(123)
    speakers = sorted({u.speaker for u in utterances})
    enroll = []
    for s in speakers:
        own = sorted(u.id for u in utterances if u.speaker == s)
        enroll += rng.sample(own, math.ceil(ENROLL_SHARE * len(own)))
    trial = [u for u in utterances if u.id not in set(enroll)]
    sex = {u.speaker: u.sex for u in utterances}
    lists = {"trials_mixed": (trial, _trials(speakers, trial))}
    for x in "FM":
        chosen = [s for s in speakers if sex[s] == x]
        own = [u for u in trial if u.speaker in chosen]
        lists[f"trials_{x.lower()}"] = (own, _trials(chosen, own))
    return {"enroll": [u for u in utterances if u.id in set(enroll)], "lists": lists}


def build_track2_tree(corpora: dict, root: Path, *, suffix: str, anonymize) -> dict:
    """A VoicePrivacy 2026 track-2 challenge root from per-language demo corpora (language ->
    manifest with MLS ids): per language a training, a dev and a test third of the speakers (both
    sexes in each), data/{lang}_{dev,test}_enrolls and _trials_{mixed,f,m}, data/train_<name>,
    and each folder's anonymized copy under ``suffix``; ``wav.scp`` paths are relative to the root.
    Returns {list folder name: (n_target, n_nontarget)} as written."""
    written = {}
    for language, manifest in corpora.items():
        speakers = sorted({u.speaker for u in manifest})
        thirds = {part: speakers[k::3] for k, part in enumerate(("train", "dev", "test"))}
        for part, chosen in thirds.items():
            own = [u for u in manifest if u.speaker in chosen]
            folders = _track2_folders(language, part, own)
            for name, (utts, trials, enrolls) in folders.items():
                audio = f"corpora/{language}/{part}/audio"
                write_kaldi_dir(
                    root / "data" / name,
                    _relative_copy(utts, root, audio),
                    trials=trials,
                    enrolls=enrolls,
                    upper=False,
                )
                write_kaldi_dir(
                    root / "data" / f"{name}{suffix}",
                    _relative_copy(utts, root, f"anon{suffix}/{audio}", anonymize),
                    upper=False,
                )
                if trials is not None:
                    n_target = sum(1 for t in trials if t[2])
                    written[name] = (n_target, len(trials) - n_target)
    return written


def _track2_folders(language: str, part: str, utterances) -> dict:
    """Folder name -> (utterances, trials or None, enrolls or None) of one split of a language."""
    if part == "train":
        return {TRACK2_TRAIN[language]: (utterances, None, None)}
    lists = _split_lists(utterances)
    dataset = f"{language}_{part}"
    folders = {f"{dataset}_enrolls": (lists["enroll"], None, [u.id for u in lists["enroll"]])}
    for which, (utts, trials) in lists["lists"].items():
        folders[f"{dataset}_{which}"] = (utts, trials, None)
    return folders
