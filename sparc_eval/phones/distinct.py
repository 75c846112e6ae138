"""Phone-frequency distinctiveness of a corpus's speakers (content-leakage paper, section 4.1)."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import DataError
from .frequencies import correlate, distinctiveness, relative_frequencies


def speaker_distinctiveness(manifest, features) -> dict:
    """speaker -> {"distinctiveness", "n_phones"} from each utterance's phones.

    ``features`` is a :class:`~sparc_eval.phones.features.PhoneFeatures` (transcript G2P by
    default), so a second analysis of the same text is read from its cache. The frequencies are
    over the corpus language's phones (:func:`~sparc_eval.phones.phoneset.inventory`).
    """
    from .phoneset import inventory

    by_speaker: dict = {}
    for utt in manifest:
        by_speaker.setdefault(utt.speaker, []).append(features.phones(utt))
    speakers, freqs = relative_frequencies(by_speaker, inventory(manifest.language))
    scores = distinctiveness(freqs)
    return {
        s: {"distinctiveness": float(d), "n_phones": int(sum(len(p) for p in by_speaker[s]))}
        for s, d in zip(speakers, scores)
    }


def per_speaker_eers(results_path) -> dict:
    """speaker -> EER (or None) from a results.json's ``per_speaker`` block."""
    path = Path(results_path)
    try:
        per = json.loads(path.read_text()).get("per_speaker")
    except (OSError, json.JSONDecodeError) as err:
        raise DataError(f"cannot read per-speaker EERs ({err})", path=path) from None
    if not per:
        raise DataError(
            "results.json has no per_speaker block",
            path=path,
            hint="evaluate with --utt2spk so per-speaker EERs exist",
        )
    return {s: v.get("eer") for s, v in per.items()}


def analyse(manifest, features, *, eers: dict | None = None) -> dict:
    """Distinctiveness per speaker, ranked, and (with per-speaker EERs) the signed correlation."""
    table = speaker_distinctiveness(manifest, features)
    ranked = sorted(table, key=lambda s: -table[s]["distinctiveness"])
    out = {"speakers": table, "ranked": ranked}
    if eers is not None:
        out["correlation_with_eer"] = correlate(
            {s: v["distinctiveness"] for s, v in table.items()}, eers
        )
    return out
