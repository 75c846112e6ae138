"""Formant speech synthesis with libespeak-ng, through ctypes (:doc:`/installation`).

The PyPI package ``espeakng-loader`` ships libespeak-ng 1.52, its data and about a hundred voice
variants, but only locates them; this module drives the library's C API::

    from sparc_eval.speech.espeak import EspeakSynth
    audio, sr = EspeakSynth(voice="en-us", variant="f3", rate=160, pitch=60).synthesize("Hello there.")
    # audio: float32 in [-1, 1], mono, sr == 16000

espeak-ng outputs 22,050 Hz; the audio is resampled to 16 kHz (``resample_poly`` 320/441).

Reproducibility. libespeak-ng keeps state between syntheses that no API call resets (the phase
of its pitch "flutter" table, an automatic gain, a cycle counter, and libc's ``rand()`` for breath
noise), so two identical calls in one process can differ by a few samples. With
``isolated=True`` (the default where ``os.fork`` exists) every synthesis runs in a child forked
from a small helper process that has initialised the library and run one fixed warm-up
sentence, the same in every helper; so the same text and voice give the same samples, bit for
bit, whatever ran before, in any process. That costs about 5 ms a call (fork, pipes) on top of
the synthesis itself (about 300x faster than real time). ``isolated=False`` synthesizes in
this process: no helper, not bit-exact across call histories. One helper process is started
per concurrent caller (threads may call ``synthesize`` at once) and stopped at exit.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import json
import os
import queue
import struct
import subprocess
import sys
import threading
from dataclasses import dataclass
from math import gcd
from pathlib import Path
from typing import Optional

from ..errors import DataError

SAMPLE_RATE = 16000

# speak_lib.h
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_RATE, _VOLUME, _PITCH, _RANGE, _PUNCTUATION, _CAPITALS, _WORDGAP = 1, 2, 3, 4, 5, 6, 7
_EE_OK = 0

# Names espeak-ng's voice lookup does not resolve by themselves.
VOICE_ALIASES = {"en-gb": "en", "en-uk": "en"}

# The seed given to libc's rand() (breath noise) and espeak-ng's own generator before each
# isolated synthesis.
_RAND_SEED = 1


class EspeakError(RuntimeError):
    """libespeak-ng could not be loaded or initialised, or a synthesis failed inside it."""


# ------------------------------------------------------------------------------------------------
# locating the library and its data


def library_paths() -> tuple:
    """``(library file, data directory)`` as located by ``espeakng_loader``."""
    try:
        import espeakng_loader
    except ImportError as err:
        raise EspeakError(
            "the espeakng-loader package is not installed (pip install espeakng-loader); "
            "it ships libespeak-ng and its voice data"
        ) from err
    try:
        return str(espeakng_loader.get_library_path()), str(espeakng_loader.get_data_path())
    except Exception as err:  # the loader raises RuntimeError when its data is missing
        raise EspeakError(f"espeakng-loader could not locate libespeak-ng's data: {err}") from err


def list_variants(data_path: Optional[str] = None) -> dict:
    """Voice variants shipped in the data dir (``voices/!v``): name -> "female", "male" or None."""
    return dict(_variants(data_path or library_paths()[1]))


@functools.lru_cache(maxsize=4)
def _variants(data_path: str) -> tuple:
    folder = Path(data_path) / "voices" / "!v"
    variants = {}
    if not folder.is_dir():
        return ()
    for path in sorted(folder.iterdir()):
        if not path.is_file():
            continue
        gender = None
        try:
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                words = line.split()
                if len(words) >= 2 and words[0].lower() == "gender":
                    gender = words[1].lower() if words[1].lower() in ("female", "male") else None
                    break
        except OSError:
            continue
        variants[path.name] = gender
    return tuple(variants.items())


def list_english_voices(data_path: Optional[str] = None) -> dict:
    """English voices in the data dir: voice name for ``EspeakSynth(voice=...)`` (``en-us``,
    ``en``, ``en-gb-scotland``, ...) -> espeak-ng's description (``English (America)``)."""
    data_path = data_path or library_paths()[1]
    voices = {}
    for path in sorted((Path(data_path) / "lang").rglob("en*")):
        if not path.is_file():
            continue
        name = path.name
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            words = line.split()
            if words and words[0] == "name":
                name = " ".join(words[1:])
                break
        voices[path.name.lower()] = name
    return voices


# ------------------------------------------------------------------------------------------------
# the in-process engine (one per process)

_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)


class _Engine:
    """libespeak-ng loaded and initialised once in this process; every call holds the lock."""

    _instance: Optional["_Engine"] = None
    _instance_lock = threading.Lock()

    def __init__(self):
        lib_path, data_path = library_paths()
        try:
            lib = ctypes.CDLL(lib_path)
        except OSError as err:
            raise EspeakError(f"cannot load libespeak-ng from {lib_path}: {err}") from err
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_SetSynthCallback.argtypes = [_CALLBACK]
        lib.espeak_SetSynthCallback.restype = None
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_SetParameter.restype = ctypes.c_int
        lib.espeak_Synth.argtypes = [
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        lib.espeak_Synth.restype = ctypes.c_int
        lib.espeak_Info.argtypes = [ctypes.c_void_p]
        lib.espeak_Info.restype = ctypes.c_char_p
        # espeak_Initialize accepts the folder holding espeak-ng-data, or that folder itself
        rate = lib.espeak_Initialize(
            _AUDIO_OUTPUT_SYNCHRONOUS,
            0,
            str(Path(data_path).parent).encode(),
            _INITIALIZE_DONT_EXIT,
        )
        if rate <= 0:
            raise EspeakError(
                f"espeak_Initialize failed (returned {rate}) with data at {data_path}"
            )
        self.lib = lib
        self.data_path = data_path
        self.native_rate = int(rate)
        self.version = (lib.espeak_Info(None) or b"").decode("utf-8", "replace")
        self._chunks: list = []
        self._callback = _CALLBACK(self._collect)  # keep a reference: the library holds a pointer
        lib.espeak_SetSynthCallback(self._callback)
        self._srand = getattr(ctypes.CDLL(None), "srand", None) if os.name == "posix" else None
        self._set_seed = getattr(lib, "espeak_ng_SetRandSeed", None)
        self.lock = threading.Lock()

    @classmethod
    def get(cls) -> "_Engine":
        with cls._instance_lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def _collect(self, wav, numsamples, events):
        if wav and numsamples > 0:
            self._chunks.append(ctypes.string_at(wav, numsamples * 2))
        return 0

    def seed(self, value: int) -> None:
        if self._srand is not None:
            self._srand(ctypes.c_uint(value))
        if self._set_seed is not None:
            self._set_seed(ctypes.c_int(value))

    def synth(
        self, voice_name: str, rate: int, pitch: int, pitch_range: int, word_gap: int, text: str
    ) -> bytes:
        """int16 little-endian samples at ``native_rate``."""
        with self.lock:
            code = self.lib.espeak_SetVoiceByName(voice_name.encode("utf-8"))
            if code != _EE_OK:
                raise DataError(
                    f"espeak-ng has no voice {voice_name!r}",
                    hint="use a language code such as en-us, en, en-gb-scotland, optionally "
                    "with +variant (see sparc_eval.speech.espeak.list_english_voices/list_variants)",
                )
            for parameter, value in (
                (_RATE, rate),
                (_PITCH, pitch),
                (_RANGE, pitch_range),
                (_VOLUME, 100),
                (_PUNCTUATION, 0),
                (_CAPITALS, 0),
                (_WORDGAP, word_gap),
            ):
                self.lib.espeak_SetParameter(parameter, int(value), 0)
            data = text.encode("utf-8")
            self._chunks = []
            code = self.lib.espeak_Synth(
                data, len(data) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None
            )
            chunks, self._chunks = self._chunks, []
            if code != _EE_OK:
                raise EspeakError(f"espeak_Synth failed with code {code} on {text[:60]!r}")
            return b"".join(chunks)


# ------------------------------------------------------------------------------------------------
# isolated synthesis: a helper process that forks one child per request


def _read_exact(stream, n: int) -> bytes:
    parts, left = [], n
    while left:
        part = stream.read(left)
        if not part:
            raise EOFError
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _zygote_main() -> None:  # pragma: no cover - runs in the helper process
    """Helper process: initialise the library, then fork a fresh child for every request.

    Protocol on stdin/stdout: request = 4-byte length + JSON; reply = 1 status byte
    (0 ok, 1 data error, 2 engine error) + 4-byte length + payload (int16 samples or a message).
    The helper imports nothing heavy (no numpy): a child's copy-on-write page faults grow with
    the parent's heap, and a helper holding numpy and scipy made each synthesis twice as costly.
    The first reply (to no request) is the handshake: the native sample rate and version as JSON.
    """
    import signal

    signal.signal(
        signal.SIGINT, signal.SIG_IGN
    )  # Ctrl-C is the parent's to handle; it closes our stdin
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer

    def reply(status: int, payload: bytes) -> None:
        stdout.write(struct.pack("<BI", status, len(payload)) + payload)
        stdout.flush()

    try:
        engine = _Engine.get()
        # One fixed synthesis loads the dictionary and touches the buffers, so that children
        # start warm (about 2x faster); it is the same in every helper, so children stay identical.
        engine.seed(_RAND_SEED)
        engine.synth("en-us", 175, 50, 50, 0, "Warm up: one, two, three.")
    except Exception as err:
        reply(2, str(err).encode("utf-8"))
        return
    reply(0, json.dumps({"rate": engine.native_rate, "version": engine.version}).encode())
    while True:
        try:
            (length,) = struct.unpack("<I", _read_exact(stdin, 4))
            request = json.loads(_read_exact(stdin, length))
        except EOFError:
            return
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            status, payload = 0, b""
            try:
                engine.seed(_RAND_SEED)
                payload = engine.synth(
                    request["voice"],
                    request["rate"],
                    request["pitch"],
                    request["range"],
                    request["word_gap"],
                    request["text"],
                )
            except DataError as err:
                status, payload = 1, str(err).encode("utf-8")
            except BaseException as err:
                status, payload = 2, repr(err).encode("utf-8")
            with os.fdopen(write_fd, "wb") as out:
                out.write(struct.pack("<BI", status, len(payload)) + payload)
            os._exit(0)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as child:
            data = child.read()
        _, wait_status = os.waitpid(pid, 0)
        if len(data) >= 5 and len(data) == 5 + struct.unpack("<BI", data[:5])[1]:
            stdout.write(data)
            stdout.flush()
        else:
            reply(2, f"synthesis child died (wait status {wait_status})".encode())


class _Zygote:
    def __init__(self):
        # Import this module without running sparc_eval/__init__.py (a stub package stands in):
        # whatever the package may import one day stays out of the helper, whose size every
        # fork pays for.
        package_dir = str(Path(__file__).resolve().parent)
        code = (
            "import sys, types; package = types.ModuleType('sparc_eval'); "
            f"package.__path__ = [{package_dir!r}]; sys.modules['sparc_eval'] = package; "
            "from sparc_eval.speech.espeak import _zygote_main; _zygote_main()"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        status, payload = self._read_reply()
        if status != 0:
            self.close()
            raise EspeakError(payload.decode("utf-8", "replace"))
        info = json.loads(payload)
        self.native_rate, self.version = int(info["rate"]), info["version"]

    def _read_reply(self):
        try:
            status, length = struct.unpack("<BI", _read_exact(self.proc.stdout, 5))
            return status, _read_exact(self.proc.stdout, length)
        except EOFError:
            raise EspeakError(
                f"the espeak-ng helper process exited (code {self.proc.poll()})"
            ) from None

    def synth(self, request: dict) -> bytes:
        data = json.dumps(request).encode("utf-8")
        try:
            self.proc.stdin.write(struct.pack("<I", len(data)) + data)
        except (BrokenPipeError, OSError) as err:
            raise EspeakError(f"the espeak-ng helper process is gone: {err}") from None
        status, payload = self._read_reply()
        if status == 1:
            raise DataError(payload.decode("utf-8", "replace"))
        if status != 0:
            raise EspeakError(payload.decode("utf-8", "replace"))
        return payload

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        finally:
            self.proc.stdout.close()


class _ZygotePool:
    """Idle helper processes; a caller takes one (starting a new one if none is idle)."""

    def __init__(self):
        self._idle: "queue.SimpleQueue[_Zygote]" = queue.SimpleQueue()
        self._all: list = []
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def _reset_after_fork(self):
        if self._pid != os.getpid():  # a forked copy of this process must not share the pipes
            self.__init__()

    def run(self, request: dict) -> tuple:
        self._reset_after_fork()
        try:
            zygote = self._idle.get_nowait()
        except queue.Empty:
            zygote = _Zygote()
            with self._lock:
                self._all.append(zygote)
        try:
            payload = zygote.synth(request)
        except DataError:  # a bad voice name: the helper is fine
            self._idle.put(zygote)
            raise
        except (
            BaseException
        ):  # broken, or interrupted mid-reply: stop it, the next call starts another
            zygote.close()
            with self._lock:
                if zygote in self._all:
                    self._all.remove(zygote)
            raise
        self._idle.put(zygote)
        return payload, zygote.native_rate

    def close(self):
        if self._pid != os.getpid():
            return
        with self._lock:
            for zygote in self._all:
                zygote.close()
            self._all.clear()
        self._idle = queue.SimpleQueue()


_POOL = _ZygotePool()
atexit.register(_POOL.close)


def isolation_available() -> bool:
    return hasattr(os, "fork")


def engine_version() -> str:
    """The libespeak-ng version string (e.g. ``1.52.0``)."""
    return _Engine.get().version


def text_to_phonemes(voice: str, text: str, separator: str) -> str:
    """espeak-ng's phonemes of ``text`` in ``voice`` (``espeak_TextToPhonemes``, phoneme names,
    not IPA), clause by clause in this process (phonemization draws no random numbers): words
    split by spaces, the phonemes of a word by ``separator`` (one character)."""
    engine = _Engine.get()
    lib = engine.lib
    with engine.lock:
        lib.espeak_TextToPhonemes.argtypes = [
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.c_int,
            ctypes.c_int,
        ]
        lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
        if lib.espeak_SetVoiceByName(voice.encode("utf-8")) != _EE_OK:
            raise DataError(f"espeak-ng has no voice {voice!r}")
        buffer = ctypes.create_string_buffer(text.encode("utf-8"))
        pointer = ctypes.c_void_p(ctypes.addressof(buffer))
        mode = ord(separator) << 8  # bit 1 off: phoneme names; bits 8-23: the separator
        clauses = []
        while pointer.value:
            out = lib.espeak_TextToPhonemes(ctypes.byref(pointer), _CHARS_UTF8, mode)
            clauses.append((out or b"").decode("utf-8", "replace"))
    return " ".join(clauses)


# ------------------------------------------------------------------------------------------------
# the public synthesizer


def _to_float_16k(raw: bytes, native_rate: int):
    import numpy as np
    from scipy.signal import resample_poly

    samples = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
    if native_rate != SAMPLE_RATE and samples.size:
        g = gcd(SAMPLE_RATE, native_rate)
        samples = resample_poly(samples, SAMPLE_RATE // g, native_rate // g).astype(np.float32)
    return np.clip(samples, -1.0, 1.0).astype(np.float32, copy=False)


@dataclass(frozen=True)
class EspeakSynth:
    """One espeak-ng voice: language voice + variant, speaking rate (words per minute, 80-450),
    pitch (0-100, 50 normal), pitch range (0-100, 0 monotone), extra gap between words (units of
    10 ms at normal speed)."""

    voice: str = "en-us"
    variant: Optional[str] = None
    rate: int = 175
    pitch: int = 50
    pitch_range: int = 50
    word_gap: int = 0
    isolated: Optional[bool] = None  # None: isolated wherever os.fork exists

    def __post_init__(self):
        for name, low, high in (
            ("rate", 80, 450),
            ("pitch", 0, 100),
            ("pitch_range", 0, 100),
            ("word_gap", 0, 100),
        ):
            value = getattr(self, name)
            if not isinstance(value, (int,)) or not low <= value <= high:
                raise DataError(
                    f"EspeakSynth: {name}={value!r} is outside {low}..{high} (an integer)"
                )
        if not self.voice or any(c in self.voice for c in "+ \t\n"):
            raise DataError(
                f"EspeakSynth: voice {self.voice!r} must be a language code such as 'en-us'; "
                "give the variant separately"
            )
        if self.variant is not None and self.variant not in list_variants():
            raise DataError(
                f"EspeakSynth: espeak-ng has no voice variant {self.variant!r}",
                hint="see sparc_eval.speech.espeak.list_variants()",
            )

    @property
    def name(self) -> str:
        """The voice name given to ``espeak_SetVoiceByName``, e.g. ``en-us+f3``."""
        voice = VOICE_ALIASES.get(self.voice.lower(), self.voice)
        return voice if not self.variant else f"{voice}+{self.variant}"

    def synthesize_native(self, text: str) -> tuple:
        """int16 little-endian sample bytes at espeak-ng's own rate (22,050 Hz), and that rate."""
        if not isinstance(text, str):
            raise DataError(f"EspeakSynth: text must be a string, got {type(text).__name__}")
        isolated = isolation_available() if self.isolated is None else self.isolated
        if isolated and not isolation_available():
            raise EspeakError(
                "isolated synthesis needs os.fork, which this platform lacks; use isolated=False"
            )
        if isolated:
            return _POOL.run(
                {
                    "voice": self.name,
                    "rate": self.rate,
                    "pitch": self.pitch,
                    "range": self.pitch_range,
                    "word_gap": self.word_gap,
                    "text": text,
                }
            )
        engine = _Engine.get()
        return engine.synth(
            self.name, self.rate, self.pitch, self.pitch_range, self.word_gap, text
        ), engine.native_rate

    def synthesize(self, text: str) -> tuple:
        """``(audio, 16000)``: float32 mono samples in [-1, 1] at 16 kHz (empty for empty text)."""
        raw, native_rate = self.synthesize_native(text)
        return _to_float_16k(raw, native_rate), SAMPLE_RATE


def _main(argv=None) -> int:  # pragma: no cover - a small manual check
    import argparse

    import soundfile as sf

    parser = argparse.ArgumentParser(description="synthesize a sentence with espeak-ng")
    parser.add_argument("text")
    parser.add_argument("--voice", default="en-us")
    parser.add_argument("--variant")
    parser.add_argument("--rate", type=int, default=175)
    parser.add_argument("--pitch", type=int, default=50)
    parser.add_argument("--out", default="espeak.wav")
    args = parser.parse_args(argv)
    audio, sr = EspeakSynth(args.voice, args.variant, args.rate, args.pitch).synthesize(args.text)
    sf.write(args.out, audio, sr, subtype="PCM_16")
    print(args.out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main())
