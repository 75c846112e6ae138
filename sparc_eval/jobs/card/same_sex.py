"""Same-sex EERs beside the pooled ones: VoicePrivacy scores per-sex trial lists (enrollment and
trial speakers of one sex), the card's seeded split pools both sexes and cross-sex trials.

For every finished cell on the card's utterance trials, the trials whose enrollment and test
speakers share a sex are evaluated per sex, with the card's speaker bootstrap (test speakers
resampled) and its small-evaluation rule. The verdicts read the pooled EER; the card says so.
"""

from __future__ import annotations

import numpy as np

from ...metrics import evaluate_trials
from .reference import probe_level


def sex_table(speakers: dict) -> dict:
    """speaker -> sex (as the speaker table writes it; speakers without one are left out)."""
    return {
        spk: str(attrs["sex"])
        for spk, attrs in (speakers or {}).items()
        if attrs.get("sex") not in (None, "")
    }


def same_sex_eers(trials, sex_of: dict, settings) -> dict:
    """{sex: {eer, ci95, n_speakers, n_target, n_nontarget, small_evaluation}} of one cell's scored trials."""
    enroll_sex = np.array([sex_of.get(str(e)) for e in trials.enroll], dtype=object)
    test_sex = np.array([sex_of.get(str(t)) for t in trials.test_speaker], dtype=object)
    out = {}
    boot = settings.bootstrap
    for sex in sorted({x for x in test_sex if x is not None}):
        mask = (enroll_sex == sex) & (test_sex == sex)
        if not mask.any() or trials.label[mask].all() or not trials.label[mask].any():
            continue
        utt2spk = dict(zip(trials.test[mask].tolist(), trials.test_speaker[mask].tolist()))
        ev = evaluate_trials(
            trials.enroll[mask],
            trials.test[mask],
            trials.score[mask],
            trials.label[mask],
            utt2spk=utt2spk,
            n_boot=boot.n_boot,
            seed=boot.seed,
            bootstrap_unit="speaker",
            per_speaker=False,
            min_verdict_speakers=settings.min_verdict_speakers,
            panel_ci=False,  # the pooled cell carries the panel's CIs
        )
        ov = ev["overall"]
        out[sex] = {
            "eer": ov["eer"],
            "ci95": (ov.get("ci95") or {}).get("eer"),
            "n_speakers": len(set(utt2spk.values())),
            "n_target": ov["n_target"],
            "n_nontarget": ov["n_nontarget"],
            "small_evaluation": ov["small_evaluation"],
        }
    return out


def same_sex(card, cells: dict, reader, speakers: dict) -> dict:
    """{where: {attacker: {scenario: {sex: ...}}}} for every finished cell on the utterance trials."""
    sex_of = sex_table(speakers)
    if len(set(sex_of.values())) < 1:
        return {"not_applicable": "no speaker has a sex in the speaker table"}
    out = {}
    for where, by in cells.items():
        for attacker, by_sc in by.items():
            for sc, cell in by_sc.items():
                if cell.get("status") != "ok" or probe_level(cell):
                    continue
                found = same_sex_eers(
                    reader.trials(cell["folder"]).scored(), sex_of, card.evaluation
                )
                if found:
                    out.setdefault(where, {}).setdefault(attacker, {})[sc] = found
    return out
