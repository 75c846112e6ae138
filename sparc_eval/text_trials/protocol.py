"""The paper's two trial protocols (SPARC appendix A.1) and the ways a run departs from them.

``PROTOCOLS[name]["trials"]`` holds the :class:`~sparc_eval.text_trials.trials.TrialConfig` values of
each protocol; ``hparams/text/naturalvoices.yaml`` and ``hparams/text/sporc.yaml`` spell out the
same values (a test keeps them equal), and every other hparams file names the protocol its
deviations are listed against (``protocol: naturalvoices``).

- ``naturalvoices`` (A.1.1): one probe per (speaker or attribute, podcast) pair; one partner per
  probe and trial type, drawn from the eligible pool with a fixed seed; attribute trials labelled
  by agreement without balancing; no screens and no metadata topic control.
- ``sporc`` (A.1.2): single-speaker episodes, so no easy positives and no hard negatives;
  negatives span podcast series and share sex, age group and accent group with the probe
  speaker; title/description TF-IDF filter (cosine <= 0.10) and one stratum-matched negative per
  positive (balanced classes); exact-utterance overlap screen (any length); name screen on
  positive speaker trials. ``positives_cross_series`` is appendix A.4's cross-series control.

:func:`trial_deviations` returns ``{setting: sentence}`` for each trial setting of a run that
differs from its protocol (``run.deviations`` in results.json, :mod:`sparc_eval.provenance`).
"""

from __future__ import annotations

from .trials import EN, EP, HN, HP

PROTOCOLS = {
    "naturalvoices": {
        "section": "A.1.1",
        "trials": {
            "tolerance": 5,
            "max_probes": 1,
            "partners": {EP: 1, HP: 1, EN: 1, HN: 1},
            "attribute_partners": {"same_episode": 1, "cross_episode": 1},
            "match_negatives": (),
            "negatives_cross_series": False,
            "positives_cross_series": False,
            "overlap_screen": False,
            "name_screen": "off",
            "topic_control": "off",
        },
    },
    "sporc": {
        "section": "A.1.2",
        "trials": {
            "tolerance": 5,
            "max_probes": 1,
            "partners": {EP: 0, HP: 1, EN: 1, HN: 0},
            "attribute_partners": {"same_episode": 0, "cross_episode": 2},
            "match_negatives": ("sex", "age", "accent"),
            "negatives_cross_series": True,
            "positives_cross_series": False,
            "overlap_screen": True,
            "overlap_min_words": 1,
            "name_screen": "speaker_positives",
            "topic_control": "on",
            "topic_max_similarity": 0.10,
        },
    },
}

# why a setting departs, where there is more to say than the two values
REASONS = {
    "max_probes": "several non-overlapping probes per (speaker, episode), so that a small corpus (EdAcc: 30 "
    "conversations) yields thousands of trials; the paper forms one probe per (speaker or attribute, "
    "podcast) pair",
    "partners": "several sampled partners per probe and trial type, for the same reason",
    "attribute_partners": "several sampled partners per probe, for the same reason",
    "overlap_min_words": "identical utterances shorter than this are not screened: at any length the screen drops "
    "trials for shared back-channels (EdAcc P200 L20: 1,366 of 1,724 trials left, every "
    'exclusion for a 1-2-word turn such as "yeah", "mm hmm" or "okay")',
    "overlap_screen": "the paper screens exact utterance overlap only in SPoRC (A.1.2)",
    "name_screen": "the paper screens names only in SPoRC's positive speaker trials",
    "positives_cross_series": "appendix A.4's cross-series control, not the main protocol of Table 6",
    "topic_control": "the metadata topic control is SPoRC's (episode titles, descriptions, categories)",
}


def check_protocol(name: str) -> str:
    if name not in PROTOCOLS:
        raise ValueError(f"protocol is one of {', '.join(PROTOCOLS)}, not {name!r}")
    return name


def _shown(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def trial_deviations(config, protocol: str, *, topic_on: bool) -> dict:
    """``{setting: sentence}`` for each trial setting of ``config`` that differs from ``protocol``'s
    (``topic_on``: whether the metadata topic control was in force, after ``auto``)."""
    ref = PROTOCOLS[check_protocol(protocol)]
    out = {}
    for key, paper in ref["trials"].items():
        if key == "overlap_min_words" and not config.overlap_screen:
            continue
        value = topic_on if key == "topic_control" else getattr(config, key)
        paper_value = paper == "on" if key == "topic_control" else paper
        if isinstance(paper, (tuple, list)):
            value, paper_value = tuple(value), tuple(paper)
        if value != paper_value:
            why = REASONS.get(key)
            out[key] = (
                f"{_shown(value)} here, {_shown(paper_value)} in the paper's {protocol} protocol "
                f"({ref['section']})" + (f": {why}" if why else "")
            )
    return out
