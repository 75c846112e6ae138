"""ECAPA-TDNN sizes by name: ``model_size`` in every attacker hparams file.

======= ======================= ========================= =========================================
name    channels                attention                 what it is
======= ======================= ========================= =========================================
cpu     [256]x4 + [768]         64                        this project's default: trains on 2 CPU
                                                          cores
vpc2024 [512]x4 + [1536]        128                       VoicePrivacy 2024's attacker (halved
                                                          channels)
spane   [1024]x4 + [3072]       128                       SpAnE's, SpeechBrain's standard
                                                          ECAPA-TDNN: the content-leakage paper's
                                                          attacker
custom  the file's ``channels`` the file's                sizes set by hand under the default
                                ``attention_channels``    ``cpu`` make it ``custom``
======= ======================= ========================= =========================================

The paper's finding depends on size: the VPC 2024 attacker puts STT-TTS at 48.2% EER, SpAnE's at
34.8% (content-leakage paper, section 3). Anything but ``spane`` is a named deviation in
results.json. On 2 CPU cores a training step (batch 16 x 3 s of mel) takes about 0.3 s at ``cpu``
and 0.9 s at ``vpc2024`` (measured offline: :doc:`/installation`); ``spane`` is meant for a GPU.
"""

from __future__ import annotations

from sparc_eval.errors import DataError

MODEL_SIZES = {
    "cpu": {"channels": [256, 256, 256, 256, 768], "attention_channels": 64},
    "vpc2024": {"channels": [512, 512, 512, 512, 1536], "attention_channels": 128},
    "spane": {"channels": [1024, 1024, 1024, 1024, 3072], "attention_channels": 128},
}
PAPER_SIZE = "spane"
DEFAULT_SIZE = "cpu"  # trains on 2 CPU cores; a named deviation


def size_name(hp: dict) -> str:
    return hp.get("model_size") or DEFAULT_SIZE


def size_overrides(hp: dict) -> dict:
    """The ``channels`` / ``attention_channels`` that ``hp['model_size']`` stands for.

    Sizes set by hand under the default ``model_size: cpu`` make it ``custom``; sizes that
    contradict a named larger size are an error asking for ``model_size: custom``."""
    name = size_name(hp)
    if name == "custom":
        return {}
    if name not in MODEL_SIZES:
        raise DataError(f"model_size {name!r} is not one of {', '.join([*MODEL_SIZES, 'custom'])}")
    given = {
        key: list(hp[key]) if isinstance(hp.get(key), (list, tuple)) else hp.get(key)
        for key in MODEL_SIZES[name]
    }
    if name == "cpu" and given != MODEL_SIZES["cpu"]:
        return {"model_size": "custom"}
    for key, value in MODEL_SIZES[name].items():
        if given[key] not in (value, MODEL_SIZES["cpu"][key]):
            raise DataError(
                f"{key}: {given[key]} contradicts model_size: {name} ({key} {value})",
                hint="set model_size: custom to choose the sizes yourself",
            )
    return dict(MODEL_SIZES[name])


def describe(channels, attention) -> str:
    channels = list(channels)
    return f"[{channels[0]}]x{len(channels) - 1}+[{channels[-1]}], attention {attention}"


def size_deviation(hp: dict) -> dict:
    """The named deviation of a model that is not SpAnE's size, else ``{}``."""
    name = size_name(hp)
    if name == PAPER_SIZE:
        return {}
    paper = MODEL_SIZES[PAPER_SIZE]
    return {
        f"model_size_{name}": f"ECAPA-TDNN channels {describe(hp['channels'], hp['attention_channels'])} ({name} size); the "
        f"paper's attacker (SpAnE) has {describe(paper['channels'], paper['attention_channels'])} "
        f"(model_size: spane). The finding depends on size: 48.2% vs 34.8% EER on STT-TTS"
    }
