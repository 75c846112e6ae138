"""Anonymizer plug-ins, one module each, and their common interface (:mod:`anonymizers.base`).

Built-ins, registered by name in the ``sparc_eval.anonymizers`` entry-point group:
``identity`` (:mod:`.identity`), ``mcadams`` (:mod:`.mcadams`, VPC B2) and ``stt_tts``
(:mod:`.stt_tts`, Whisper + a TTS voice).
"""

from .base import Anonymizer

__all__ = ["Anonymizer"]
