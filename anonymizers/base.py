"""The anonymizer contract.

An anonymizer is a class with one method::

    anonymize(wav, sr, utterance) -> (wav, sr)

``wav`` is mono float32 in [-1, 1] at ``sr`` (16 kHz unless the class sets ``sample_rate``);
``utterance`` is the output record (a copy of the input :class:`~sparc_eval.data.manifest.Utterance`):
read ``utterance.speaker`` for per-speaker targets, and put anything worth keeping in
``utterance.extra`` (STT-TTS writes its transcript to ``utterance.extra["asr_text"]``); it ends up
in the output manifest. Return audio at any rate: the runner resamples to 16 kHz.

Optional, with defaults here:

- ``anonymize_batch(items)``: ``items`` is a list of ``(wav, sr, utterance)``; returns a list of
  ``(wav, sr)``. The default calls ``anonymize`` on each item; override it for batched models.
- ``settings()``: a JSON-able dict that, with the input audio, keys the cache; the default
  holds the class path, ``version``, every constructor argument (the attribute of the same name
  when there is one, else the value given), and ``seed`` when the object has its own. Bump
  ``version`` when the algorithm changes.
- ``setup()``: called once in each worker before the first utterance (load models here, or
  lazily on first use); objects must stay picklable before ``setup`` for the Ray runner.
- ``keeps_words``: a class attribute, ``True`` when the output says the input's words (voice
  conversion, McAdams), ``False`` when it says its own (STT-TTS, which writes them to
  ``extra.asr_text``). It goes into the output manifest (``extra.keeps_words``); phone and text
  attackers read the words of anonymized speech by it, and refuse an anonymizer that leaves it
  ``None`` and writes no transcript.
- random draws: ``self.draw_rng(utterance)`` is a numpy Generator for the utterance's random
  choices, seeded by ``(self.seed, speaker)`` when ``draws = "speaker"`` (the same draw for every
  utterance of a speaker, in any order, shard or worker) or by ``(self.seed, utterance id)`` when
  ``draws = "utterance"`` (VoicePrivacy 2024: every utterance anonymized independently);
  ``self.speaker_state`` is a dict to memoise per-speaker values.
- ``deterministic``: True when the output depends on the input and the settings alone (no random
  choices: McAdams at a fixed alpha, a one-voice STT-TTS). Evaluations then give the attacker the
  user's audio as is; otherwise the attacker anonymizes its own speech with ``with_seed(seed)``,
  a copy whose draws are its own (it has the system, not the user's secret choices). The default
  is False: unknown randomness is treated as randomness.

The cache key (``settings()``) always holds the arguments the object was built with: an argument
kept under another attribute name (``self._gain``) is keyed by the value it was given.

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

import copy
import hashlib
import inspect
import re

import numpy as np

from sparc_eval.digest import UNKNOWN_STATE

DRAW_MODES = ("speaker", "utterance")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


class Anonymizer:
    """Base class of anonymizers (see the module doc)."""

    #: name recorded in the output manifest (``extra.anonymizer``); defaults to the class name.
    name = None
    #: rate the input audio is given at; None for the file's own rate.
    sample_rate = 16000
    #: bump when the output for the same settings changes, so caches are invalidated.
    version = 1
    #: seed of per-speaker draws.
    seed = 0
    #: whether the output says the input's words (True for voice conversion and McAdams) or words
    #: of its own (False for STT-TTS, which writes them to ``extra.asr_text``). None means not
    #: declared, and attackers that read the words of anonymized speech refuse to guess
    #: (content-leakage rule).
    keeps_words = None
    #: how random choices are drawn, per speaker or per utterance (see ``draw_rng``).
    draws = "speaker"
    #: True when the output depends on the input and the settings alone (see the module doc).
    deterministic = False

    def __new__(cls, *args, **kwargs):
        # the constructor's arguments as given, so the cache key holds them whatever the class
        # stores them as (a copy or an unpickled object gets them back with its __dict__)
        obj = super().__new__(cls)
        if cls.__init__ is not object.__init__:
            obj.__dict__["_init_arguments"] = _given_arguments(cls, obj, args, kwargs)
        return obj

    # --- the contract --------------------------------------------------------------------------
    def anonymize(self, wav, sr, utterance):  # pragma: no cover - abstract
        raise NotImplementedError(
            f"{type(self).__name__} must implement anonymize(wav, sr, utterance)"
        )

    def anonymize_batch(self, items):
        return [self.anonymize(wav, sr, utt) for wav, sr, utt in items]

    def setup(self) -> None:
        """Load models; called once per worker before the first utterance."""

    def model_files(self) -> list:
        """Every model file (or folder) the anonymizer reads itself; their content joins the key
        of its outputs (an ASR or TTS it holds says its own through its settings)."""
        return []

    def settings(self) -> dict:
        cls = type(self)
        out = {"class": f"{cls.__module__}.{cls.__qualname__}", "version": self.version}
        try:
            params = inspect.signature(cls.__init__).parameters
        except (TypeError, ValueError):
            params = {}
        given = self.__dict__.get("_init_arguments", {})
        for key, param in params.items():
            if key == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            if key in self.__dict__ or isinstance(inspect.getattr_static(cls, key, None), property):
                out[key] = _jsonable(getattr(self, key))  # what the instance made of the argument
            elif key in given:
                out[key] = _jsonable(
                    given[key]
                )  # stored under another name (self._gain), or not at all
            elif hasattr(self, key):
                out[key] = _jsonable(getattr(self, key))
        out.update(
            {
                k: _jsonable(v)
                for k, v in given.items()
                if k not in out and (k not in params or params[k].kind == params[k].VAR_POSITIONAL)
            }
        )  # **options, non-empty *args
        if "seed" in self.__dict__ and "seed" not in out:
            out["seed"] = _jsonable(self.seed)
        return out

    def with_seed(self, seed: int) -> "Anonymizer":
        """The attacker's own copy of the system, whose random draws come from ``seed``: built again
        from the constructor's arguments when ``seed`` is one of them (so whatever the constructor
        derives from it, a generator or ``self._seed``, is the attacker's), else a copy with
        ``seed`` set."""
        given = self.__dict__.get("_init_arguments")
        try:
            params = inspect.signature(type(self).__init__).parameters
        except (TypeError, ValueError):
            params = {}
        positional = any(p.kind == p.VAR_POSITIONAL for p in params.values())
        if given is not None and "seed" in params and not positional:
            twin = type(self)(**{**given, "seed": int(seed)})
            twin.__dict__.update(
                {k: v for k, v in self.__dict__.items() if k.startswith("_sparc_eval")}
            )
            return twin
        twin = copy.copy(self)
        twin.__dict__.pop("_speaker_state", None)
        twin.seed = int(seed)
        return twin

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
        return _seeded(f"{self.seed}\x00{speaker}")

    def utterance_rng(self, utterance_id) -> np.random.Generator:
        """A generator seeded from (seed, utterance id) only: each utterance its own draws."""
        return _seeded(f"{self.seed}\x00utterance\x00{utterance_id}")

    def draw_rng(self, utterance) -> np.random.Generator:
        """The generator of this utterance's random choices, as ``draws`` says."""
        if self.draws not in DRAW_MODES:
            raise ValueError(f"{type(self).__name__}.draws is {self.draws!r}; one of {DRAW_MODES}")
        if self.draws == "utterance":
            return self.utterance_rng(utterance.id)
        return self.speaker_rng(utterance.speaker)

    def __repr__(self):
        args = ", ".join(
            f"{k}={v!r}" for k, v in self.settings().items() if k not in ("class", "version")
        )
        return f"{type(self).__name__}({args})"


def _given_arguments(cls, obj, args, kwargs) -> dict:
    """{name: value} of a constructor call, defaults applied, ``**options`` spread out, ``*args``
    kept only when given; {} when the call does not bind (an unpickled object: its __dict__
    brings the original's back)."""
    try:
        signature = inspect.signature(cls.__init__)
        bound = signature.bind(obj, *args, **kwargs)
    except (TypeError, ValueError):
        return {}
    bound.apply_defaults()
    arguments = dict(list(bound.arguments.items())[1:])
    for name, param in signature.parameters.items():
        if param.kind == param.VAR_KEYWORD:
            arguments.update(arguments.pop(name, {}))
        elif param.kind == param.VAR_POSITIONAL and not arguments.get(name):
            arguments.pop(name, None)
    return arguments


def _seeded(text: str) -> np.random.Generator:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


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
    text = repr(value)
    # the default repr names a memory address: the value's state cannot be known (no reuse)
    return UNKNOWN_STATE if _ADDRESS.search(text) else text
