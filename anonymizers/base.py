"""The anonymizer contract.

An anonymizer is a class with one method::

    anonymize(wav, sr, utterance) -> (wav, sr)

``wav`` is mono float32 in [-1, 1] at ``sr`` (16 kHz unless the class sets ``sample_rate``);
``utterance`` is the output record (a copy of the input :class:`~sparc_eval.manifest.Utterance`):
read ``utterance.speaker`` for per-speaker targets, and put anything worth keeping in
``utterance.extra`` (STT-TTS writes its transcript to ``utterance.extra["asr_text"]``); it ends up
in the output manifest. Return audio at any rate: the runner resamples to 16 kHz.

Optional, with defaults here:

- ``anonymize_batch(items)``: ``items`` is a list of ``(wav, sr, utterance)``; returns a list of
  ``(wav, sr)``. The default calls ``anonymize`` on each item; override it for batched models.
- ``settings()``: a JSON-able dict that, with the input audio, keys the cache; the default
  holds the class path, ``version`` and every constructor argument stored on ``self``
  under the same name. Bump ``version`` when the algorithm changes.
- ``setup()``: called once in each worker before the first utterance (load models here, or
  lazily on first use); objects must stay picklable before ``setup`` for the Ray runner.
- ``keeps_words``: a class attribute, ``True`` when the output says the input's words (voice
  conversion, McAdams), ``False`` when it says its own (STT-TTS, which writes them to
  ``extra.asr_text``). It goes into the output manifest (``extra.keeps_words``); phone and text
  attackers read the words of anonymized speech by it, and refuse an anonymizer that leaves it
  ``None`` and writes no transcript.
- per-speaker state: ``self.speaker_rng(speaker)`` is a numpy Generator seeded from
  ``(self.seed, speaker)`` alone, so a speaker gets the same draw in any order, shard or worker;
  ``self.speaker_state`` is a dict to memoise per-speaker values.

A complete anonymizer (register it in your package's ``sparc_eval.anonymizers`` entry points, or
name it by dotted path)::

    import numpy as np
    from anonymizers.base import Anonymizer

    class Gain(Anonymizer):
        keeps_words = True  # the words are the input's
        def __init__(self, db=-6.0):
            self.db = db
        def anonymize(self, wav, sr, utterance):
            return wav * np.float32(10 ** (self.db / 20)), sr
"""

from __future__ import annotations

import hashlib
import inspect

import numpy as np


class Anonymizer:
    """Base class of anonymizers (see the module doc)."""

    #: name recorded in the output manifest (``extra.anonymizer``); defaults to the class name.
    name = None
    #: rate the input audio is given at (None: the file's own rate).
    sample_rate = 16000
    #: bump when the output for the same settings changes, so caches are invalidated.
    version = 1
    #: seed of per-speaker draws.
    seed = 0
    #: whether the output says the input's words (voice conversion, McAdams: True) or words of
    #: its own (STT-TTS: False, and it writes them to ``extra.asr_text``). None: not declared, and
    #: attackers that read the words of anonymized speech refuse to guess (content-leakage rule).
    keeps_words = None

    # --- the contract --------------------------------------------------------------------------
    def anonymize(self, wav, sr, utterance):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} must implement anonymize(wav, sr, utterance)")

    def anonymize_batch(self, items):
        return [self.anonymize(wav, sr, utt) for wav, sr, utt in items]

    def setup(self) -> None:
        """Load models; called once per worker before the first utterance."""

    def settings(self) -> dict:
        cls = type(self)
        out = {"class": f"{cls.__module__}.{cls.__qualname__}", "version": self.version}
        try:
            params = inspect.signature(cls.__init__).parameters
        except (TypeError, ValueError):
            params = {}
        for key, param in params.items():
            if key == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            if hasattr(self, key):
                out[key] = _jsonable(getattr(self, key))
        return out

    # --- helpers -------------------------------------------------------------------------------
    @property
    def display_name(self) -> str:
        return self.name or type(self).__name__.lower()

    @property
    def speaker_state(self) -> dict:
        state = self.__dict__.get("_speaker_state")
        if state is None:
            state = self.__dict__["_speaker_state"] = {}
        return state

    def speaker_rng(self, speaker) -> np.random.Generator:
        """A generator seeded from (seed, speaker) only: the same speaker, the same draws."""
        digest = hashlib.sha256(f"{self.seed}\x00{speaker}".encode("utf-8")).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little"))

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings().items() if k not in ("class", "version"))
        return f"{type(self).__name__}({args})"


def _jsonable(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    settings = getattr(value, "settings", None)
    if callable(settings):
        return _jsonable(settings())
    return repr(value)
