"""Same-sex EERs beside the pooled ones: VoicePrivacy scores per-sex trial lists (enrollment and
trial speakers of one sex), the card's seeded split pools both sexes and cross-sex trials.

For every finished cell on the card's utterance trials, the trials whose enrollment and test
speakers share a sex are evaluated per sex, with the card's bootstrap unit (by default the
speakers on both sides, two-way) and its small-evaluation rule. The verdicts read the pooled EER; the card says so.
"""

from __future__ import annotations

import numpy as np

from ...attack.subsets import evaluate_subset, summary, test_speakers
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
    for sex in sorted({x for x in test_sex if x is not None}):
        mask = (enroll_sex == sex) & (test_sex == sex)
        if not mask.any() or trials.label[mask].all() or not trials.label[mask].any():
            continue
        # the pooled cell carries the panel's CIs; the same-sex rows resample the run's unit
        found = evaluate_subset(trials, mask, settings)
        out[sex] = summary(found, test_speakers(trials, mask))
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
