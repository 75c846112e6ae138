"""A VoicePrivacy challenge data folder made from the demo corpus: Kaldi dirs as the challenge
writes them (wav.scp, utt2spk, spk2utt, text, spk2gender, utt2dur; ``enrolls`` and ``trials``),
the 2024 per-sex lists and the 2026 mixed lists, and anonymized copies under a suffix (the same
audio: the identity anonymizer)."""

from __future__ import annotations

from pathlib import Path

N_ENROLL = 3  # enrollment utterances per speaker; the rest are trials


def write_kaldi_dir(folder: Path, utterances, *, trials=None, enrolls=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    utterances = sorted(utterances, key=lambda u: u.id)
    speakers = sorted({u.speaker for u in utterances})
    sex = {u.speaker: (u.sex or "").lower() for u in utterances}
    files = {
        "wav.scp": [f"{u.id} {u.audio.path}" for u in utterances],
        "utt2spk": [f"{u.id} {u.speaker}" for u in utterances],
        "text": [f"{u.id} {u.text.upper()}" for u in utterances],
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
