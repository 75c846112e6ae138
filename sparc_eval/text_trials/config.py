"""The trial keys of an hparams file as a :class:`~sparc_eval.text_trials.trials.TrialConfig`:
what the text evaluation and the text attackers read alike."""

from __future__ import annotations

from typing import Optional

from ..errors import DataError
from ..hparams import hparams_keys, keys_in
from .shared_text import AUTO, SharedTextConfig
from .trials import SETTING, TrialConfig

#: the hparams keys that set a field of the same name of
#: :class:`~sparc_eval.text_trials.trials.TrialConfig`, from its fields: all but the (P, L)
#: settings and ``seed``, read by rules of their own
TRIAL_KEYS = tuple(
    key
    for key in hparams_keys(TrialConfig)
    if key != "seed" and key not in keys_in(TrialConfig, SETTING)
)
#: ``shared_text_*`` key -> :class:`~sparc_eval.text_trials.shared_text.SharedTextConfig` field
#: (``shared_text`` itself, true, false, auto or a dict, is read by its own rule)
SHARED_TEXT_KEYS = {k: f for k, f in hparams_keys(SharedTextConfig).items() if f != "enabled"}


def integer_setting(key: str, value, minimum: Optional[int] = None) -> int:
    """``value`` as an integer (``minimum`` at least), else a DataError naming ``key``."""
    try:
        if isinstance(value, bool) or int(value) != float(value):
            raise ValueError
        out = int(value)
    except (TypeError, ValueError):
        raise DataError(f"hparams: {key} must be an integer, not {value!r}") from None
    if minimum is not None and out < minimum:
        raise DataError(f"hparams: {key} must be >= {minimum}, not {out}")
    return out


def _auto_or(value, cast):
    return value if value == AUTO else cast(value)


def shared_text_from_hparams(hparams: dict) -> SharedTextConfig:
    """The ``shared_text*`` keys; by default ``auto``: on iff the corpus's loader marks read
    passages (EdAcc), since SPARC's protocol removes nothing."""
    shared = hparams.get("shared_text", AUTO)
    enabled = shared.get("enabled", AUTO) if isinstance(shared, dict) else shared
    cast = {"n": int, "min_speakers": lambda v: _auto_or(v, int), "min_fraction": float}
    values = {
        name: cast[name](hparams[key])
        for key, name in SHARED_TEXT_KEYS.items()
        if hparams.get(key) is not None
    }
    return SharedTextConfig(enabled=_auto_or(enabled, bool), **values)


def trial_config_from_hparams(hparams: dict) -> TrialConfig:
    """The trial keys (:data:`~sparc_eval.text_trials.config.TRIAL_KEYS`), ``seed`` and the
    ``shared_text*`` keys as a TrialConfig."""
    values = {k: hparams[k] for k in TRIAL_KEYS if hparams.get(k) is not None}
    if "match_negatives" in values:
        values["match_negatives"] = tuple(values["match_negatives"] or ())
    for k in ("topic_sim_edges", "topic_jaccard_edges", "name_fields"):
        if k in values:
            values[k] = tuple(values[k])
    if hparams.get("seed") is not None:
        values["seed"] = integer_setting("seed", hparams["seed"])
    try:
        return TrialConfig(shared_text=shared_text_from_hparams(hparams), **values)
    except (TypeError, ValueError) as err:
        raise DataError(f"trial settings: {err}") from None
