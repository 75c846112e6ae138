"""Evaluating a subset of one run's scored trials: a VoicePrivacy trial list (its pairs), the
same-sex trials of a pooled split. One function, so that the card's same-sex EERs and the
per-list rows of the challenge's table are computed alike.

A subset of speaker-level trials scores as it would alone: each pair's score depends on the
enrollment speaker's model and the trial utterance only.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import numpy as np

from .evaluation import EvaluationSettings
from .trials import Trials


def evaluate_subset(
    trials: Trials,
    mask,
    settings: EvaluationSettings,
    *,
    unit: Optional[str] = None,
    per_speaker: bool = False,
    panel_ci: bool = False,
    llr: bool = False,
):
    """Every metric of the scored trials where ``mask`` is True (an
    :class:`~sparc_eval.metrics.Evaluation`), bootstrapped over ``unit`` (None: the run's), or
    None when the subset has no trials."""
    from ..metrics import evaluate_trials

    chosen = trials.select(np.asarray(mask, dtype=bool)).scored()
    if len(chosen) == 0:
        return None
    boot = replace(settings.bootstrap, unit=unit or settings.bootstrap.unit)
    return evaluate_trials(
        chosen.enroll_speakers,
        chosen.test,
        chosen.score,
        chosen.label,
        utt2spk=chosen.utt2spk(),
        enroll2spk=chosen.enroll2spk(),
        settings=replace(settings, bootstrap=boot),
        per_speaker=per_speaker,
        llr=llr,
        panel_ci=panel_ci,
    )


def test_speakers(trials: Trials, mask) -> int:
    return len({str(s) for s in trials.test_speaker[np.asarray(mask, dtype=bool)]})


def summary(evaluation, n_speakers: int) -> dict:
    """The few numbers a table row shows: EER, its CI, the counts, the small-evaluation note."""
    ov = evaluation["overall"]
    return {
        "eer": ov["eer"],
        "ci95": (ov.get("ci95") or {}).get("eer"),
        "n_speakers": n_speakers,
        "n_target": ov["n_target"],
        "n_nontarget": ov["n_nontarget"],
        "small_evaluation": ov.get("small_evaluation"),
    }


def pair_mask(trials: Trials, pairs) -> np.ndarray:
    """Which trials are among ``pairs`` ((enroll speaker, trial id, ...) tuples)."""
    wanted = {f"{p[0]}\t{p[1]}" for p in pairs}
    keys = np.char.add(
        np.char.add(trials.enroll_speakers.astype(str), "\t"), trials.test.astype(str)
    )
    return np.isin(keys, list(wanted))


def list_rows(
    trials: Trials, planned, settings: EvaluationSettings, attacker: str, *, llr=False
) -> dict:
    """results.json's ``lists``: one row per VoicePrivacy trial list (dataset, enrollment, list,
    sex, counts, EER with its CI, the full overall block with the panel, per-speaker EERs), under
    a label that names the layout and the attacker that produced it."""
    rows = []
    for trial_list, pairs in planned.lists:
        mask = pair_mask(trials, pairs)
        found = evaluate_subset(trials, mask, settings, per_speaker=True, panel_ci=True, llr=llr)
        n_test = len({str(t) for t in trials.test[mask]})
        row = {
            "dataset": trial_list.dataset,
            "enrollment": trial_list.enrollment,
            "trial_list": trial_list.name,
            "sex": trial_list.sex,
            "regenerated": trial_list.regenerated,
            "n_listed": len(pairs),
            "n_scored": int(np.isfinite(trials.score[mask]).sum()),
            "n_trial_utterances": n_test,
        }
        if found is None:
            rows.append({**row, "eer": None, "not_applicable": "no scored trials of this list"})
            continue
        if planned.books is not None:
            row["books"] = book_sharing(trials, mask, planned.books, settings)
        rows.append(
            {
                **row,
                **summary(found, test_speakers(trials, mask)),
                "overall": found["overall"],
                "per_speaker": found["per_speaker"],
            }
        )
    return {
        "label": planned.label(attacker),
        "preset": planned.preset,
        "anon_data_suffix": planned.suffix,
        "rows": rows,
    }


def book_sharing(trials: Trials, mask, books, settings: EvaluationSettings) -> dict:
    """On Multilingual LibriSpeech a speaker's utterances mostly come from one book, so the words
    may link books rather than speakers: the share of the list's target trials whose enrollment
    utterances share a book with the trial utterance, and the EER on the cross-book trials (the
    trial utterance's book is none of the enrollment speaker's), where both classes have some."""
    known = np.array([str(t) in books.utterance for t in trials.test], dtype=bool)
    mask = np.asarray(mask, dtype=bool) & known  # a trial utterance without a book: neither
    same = np.array(
        [
            books.utterance.get(str(t)) in books.speaker.get(str(e), ())
            for e, t in zip(trials.enroll_speakers, trials.test)
        ],
        dtype=bool,
    )
    targets = mask & trials.label.astype(bool)
    cross = mask & ~same
    found = evaluate_subset(trials, cross, settings)
    two_classes = (
        found is not None and min(found["overall"]["n_target"], found["overall"]["n_nontarget"]) > 0
    )
    return {
        "target_share_same_book": float(same[targets].mean()) if targets.any() else None,
        "cross_book": summary(found, test_speakers(trials, cross)) if two_classes else None,
        "definition": "a trial shares a book when the trial utterance's book is among the books "
        "of the enrollment speaker's enrollment utterances (MLS ids: <speaker>_<book>_<index>)",
    }
