"""LLM judge (SPARC paper A.2.2) over any OpenAI-compatible chat-completions endpoint.

Works with OpenAI, vLLM, Ollama (``http://localhost:11434/v1``), llama.cpp server and anything
else that serves ``POST {base_url}/chat/completions``. Each trial is one zero-shot user
message built from the paper's prompt (:data:`PROMPTS`; override per task with ``prompts``);
the first number in the reply is the score, clamped to 0-100. A reply without a number is
recorded as missing (NaN, counted in ``report()``), never as 0.

- API key: read from the environment variable named by ``api_key_env`` (default
  ``OPENAI_API_KEY``) and sent as a bearer token. It is never logged, cached or reported.
  ``require_api_key``: ``auto`` (required unless the endpoint is on this machine), true or
  false. A required key that is missing raises :class:`DataError` from ``preflight()``, which
  the evaluation calls before any work starts.
- Concurrency: ``concurrency`` requests in flight (a thread pool); identical prompts are sent
  once. ``base_url`` may list several endpoints serving the same model: requests rotate over
  them, and under the Ray runner (:mod:`sparc_eval.text.ray_scoring`) worker i uses endpoint
  i mod their number (``for_worker``). The cache key does not name the endpoint.
- Retries: 429, 5xx, timeouts and connection errors are retried up to ``max_retries`` times
  with exponential backoff (``backoff`` * 2^attempt, capped at ``max_backoff``, honouring a
  ``Retry-After`` header); a trial that still fails is recorded as an error (NaN, counted,
  with the last error in ``report()``) and is not cached, so a rerun tries it again. 401, 403
  and 404 stop the run at once (a wrong key, model or URL fails every trial the same way).
- Cache: every reply is appended to ``cache_path`` (JSON lines, one ``O_APPEND`` write and an
  fsync per reply, so several processes may share the file) keyed by sha256 of (model, request
  parameters, prompt); an interrupted run loses nothing and a rerun sends only what is missing.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from urllib.parse import urlparse

import numpy as np

from sparc_eval.digest import text_digest
from sparc_eval.errors import DataError

from .base import TextScorer, as_trialset

log = logging.getLogger(__name__)

_HEADER = "You are a speaker verification judge."
_TAIL = "Do not explain your reasoning."
PROMPTS = {
    "speaker": (
        "Estimate how likely it is that the probe and enrollment utterances came from the SAME SPEAKER. "
        "Focus on stylistic and linguistic cues, not topic similarity. Output one number from 0 to 100: "
        "0 = definitely different speaker 100 = definitely same speaker"),
    "sex": (
        "Estimate how likely it is that the probe and enrollment utterances came from speakers of the SAME "
        "BIOLOGICAL SEX. Focus on stylistic and linguistic cues, not topic similarity. Output one number from "
        "0 to 100: 0 = definitely different sex 100 = definitely same sex"),
    "age": (
        "Estimate how likely it is that the probe and enrollment utterances came from speakers in the SAME AGE "
        "GROUP (<30, 30-60, or 60+). Focus on stylistic and linguistic cues, not topic similarity. Output one "
        "number from 0 to 100: 0 = definitely different age group 100 = definitely same age group"),
    "accent": (
        "Estimate how likely it is that the probe and enrollment utterances came from speakers in the SAME "
        "ACCENT GROUP (North America versus Other). Focus on vocabulary, phrasing, and linguistic markers, not "
        "topic similarity. Output one number from 0 to 100: 0 = definitely different accent group "
        "100 = definitely same accent group"),
}
_GENERIC = (
    "Estimate how likely it is that the probe and enrollment utterances came from speakers with the SAME "
    "{task}. Focus on stylistic and linguistic cues, not topic similarity. Output one number from 0 to 100: "
    "0 = definitely different {task} 100 = definitely same {task}")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
# the paper's judges (A.2.2), matched on the end of the model name (provider prefixes vary)
PAPER_MODELS = ("gpt-5-mini", "llama-3.3-70b-instruct-turbo", "llama-3.3-70b-instruct", "qwen3.5-9b")
_FATAL = {401: "the endpoint rejected the API key", 403: "the API key may not use this model or endpoint",
          404: "no such model or URL"}


def build_prompt(probe_texts, enroll_texts, task: str = "speaker", instructions=None) -> str:
    """The paper's A.2 prompt: header, task instruction, 'Do not explain', probe, enrollment."""
    body = (instructions or {}).get(task) or PROMPTS.get(task) or _GENERIC.format(task=task.upper())
    return "\n\n".join([_HEADER, body, _TAIL, "Probe utterances:", "\n".join(probe_texts),
                        "Enrollment utterances:", "\n".join(enroll_texts)])


def parse_score(reply) -> float:
    """The first number in the reply, clamped to [0, 100]; NaN when there is none."""
    if not reply:
        return math.nan
    m = _NUMBER.search(str(reply))
    if not m:
        return math.nan
    return float(min(100.0, max(0.0, float(m.group()))))


class _Retryable(Exception):
    def __init__(self, message, retry_after=None):
        super().__init__(message)
        self.retry_after = retry_after


class ReplyCache:
    """JSON lines of {key, model, reply}, shared by threads and processes (Ray actors).

    Each reply is appended with one ``os.write`` of one whole line to a file opened with
    ``O_APPEND``, then fsynced, so lines that several processes append at once never interleave.
    :meth:`refresh` reads what other processes appended since the last read; a torn last line (a
    process killed while writing) is skipped, and the next append starts on a new line.
    """

    def __init__(self, path):
        self.path = Path(path) if path else None
        self._lock = threading.Lock()
        self._mem = {}
        self._offset = 0
        self.refresh()

    def refresh(self) -> None:
        """Read the lines appended to the file since the last read (complete lines only)."""
        if self.path is None or not self.path.is_file():
            return
        with self._lock, open(self.path, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
            end = data.rfind(b"\n") + 1
            for line in data[:end].splitlines():
                try:
                    row = json.loads(line)
                    self._mem[row["key"]] = row["reply"]
                except (ValueError, KeyError, TypeError):
                    continue  # a torn line from an interrupted run
            self._offset += end

    def get(self, key):
        return self._mem.get(key)

    def __contains__(self, key) -> bool:
        return key in self._mem

    def put(self, key, model, reply) -> None:
        with self._lock:
            self._mem[key] = reply
            if self.path is None:
                return
            line = (json.dumps({"key": key, "model": model, "reply": reply}, ensure_ascii=False) + "\n").encode()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                if _ends_torn(fd):
                    line = b"\n" + line
                while line:  # one write for a line on a local file system; the loop is for the rare short write
                    line = line[os.write(fd, line):]
                os.fsync(fd)
            finally:
                os.close(fd)


def _ends_torn(fd) -> bool:
    """Whether the file does not end with a newline (a torn last line)."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


class LLMScorer(TextScorer):
    def __init__(self, base_url="https://api.openai.com/v1", model: str = "gpt-5-mini",
                 api_key_env: str = "OPENAI_API_KEY", require_api_key="auto", prompts=None, concurrency: int = 4,
                 max_retries: int = 5, backoff: float = 1.0, max_backoff: float = 60.0, timeout: float = 120.0,
                 cache_path="results/cache/llm_replies.jsonl", request_params=None, task: str = "speaker",
                 name=None):
        urls = [base_url] if isinstance(base_url, str) or base_url is None else list(base_url)
        self.endpoints = [str(u).rstrip("/") for u in urls]
        if not self.endpoints:
            raise DataError("LLM scorer: base_url lists no endpoint")
        self.base_url = self.endpoints[0]
        self.model = str(model)
        self.api_key_env = api_key_env
        self.require_api_key = require_api_key
        self.prompts = dict(prompts or {})
        self.concurrency = max(1, int(concurrency))
        self.max_retries = max(0, int(max_retries))
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.timeout = float(timeout)
        self.cache_path = None if cache_path in (None, "") else str(cache_path)
        self.request_params = dict(request_params or {})
        self.task = task
        self._name = name
        self._cache = None
        self.counts = {"trials": 0, "prompts": 0, "requests": 0, "retries": 0, "cache_hits": 0, "no_number": 0,
                       "errors": 0}
        self.last_errors = []
        self._lock = threading.Lock()
        self._n_posts = 0  # requests rotate over the endpoints

    def __getstate__(self):  # a copy for another process (a Ray actor): no lock, the cache is reread there
        state = dict(self.__dict__)
        state["_lock"], state["_cache"] = None, None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def for_worker(self, index: int, n_workers: int) -> "LLMScorer":
        """The copy that worker ``index`` of ``n_workers`` uses: endpoint ``index`` mod the number of
        endpoints (a copy of the scorer as it is, counts included)."""
        import copy

        mine = copy.copy(self)  # through __getstate__: its own lock, no cache yet
        mine.counts, mine.last_errors = dict(self.counts), list(self.last_errors)
        mine.endpoints = [self.endpoints[index % len(self.endpoints)]]
        mine.base_url = mine.endpoints[0]
        return mine

    def merge_report(self, delta: dict) -> None:
        """Add what a worker counted (:func:`sparc_eval.text.ray_scoring.report_delta` of ``report()``)."""
        with self._lock:
            for key in self.counts:
                self.counts[key] += int(delta.get(key, 0))
            self.last_errors.extend(delta.get("last_errors", []))

    def _endpoint(self) -> str:
        with self._lock:
            self._n_posts += 1
            return self.endpoints[(self._n_posts - 1) % len(self.endpoints)]

    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.counts[key] += n

    @property
    def name(self) -> str:
        return self._name or f"llm:{self.model}"

    def settings(self) -> dict:
        out = {"base_url": self.base_url, "model": self.model, "api_key_env": self.api_key_env,
               "require_api_key": self.require_api_key, "concurrency": self.concurrency,
               "max_retries": self.max_retries, "backoff": self.backoff, "max_backoff": self.max_backoff,
               "timeout": self.timeout, "cache_path": self.cache_path, "request_params": self.request_params,
               "custom_prompts": sorted(self.prompts)}
        if len(self.endpoints) > 1:
            out["endpoints"] = list(self.endpoints)
        return out

    def deviations(self) -> dict:
        if any(self.model.lower().endswith(m) for m in PAPER_MODELS):
            return {}
        return {"scorer_model": f"LLM judge {self.model}, not one of the paper's ({', '.join(PAPER_MODELS)})"}

    def report(self) -> dict:
        return {**self.counts, "last_errors": list(self.last_errors[-5:])}

    # -- key handling ---------------------------------------------------------------------------
    def _key_required(self) -> bool:
        if isinstance(self.require_api_key, str) and self.require_api_key.lower() == "auto":
            hosts = {(urlparse(u).hostname or "").lower() for u in self.endpoints}
            return not hosts <= _LOCAL_HOSTS
        return bool(self.require_api_key)

    def _api_key(self):
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def preflight(self) -> None:
        for url in self.endpoints:
            if not urlparse(url).scheme.startswith("http"):
                raise DataError(f"LLM scorer: base_url {url!r} is not an http(s) URL",
                                hint="e.g. https://api.openai.com/v1 or http://localhost:8000/v1")
        if self._key_required() and not self._api_key():
            raise DataError(
                f"LLM scorer: the environment variable {self.api_key_env or '(none named)'} holding the API key "
                f"for {', '.join(self.endpoints)} is not set",
                hint="export it before running, or name another variable with api_key_env; a server on this "
                     "machine needs none (require_api_key: false)")

    # -- requests -------------------------------------------------------------------------------
    def cache_key(self, prompt: str) -> str:
        blob = json.dumps({"model": self.model, "params": self.request_params,
                           "prompt_sha256": text_digest(prompt, n=None)}, sort_keys=True)
        return text_digest(blob, n=None)

    def _post(self, client, prompt: str) -> str:
        payload = {"model": self.model, "messages": [{"role": "user", "content": prompt}], **self.request_params}
        import httpx

        url = self._endpoint()
        try:
            resp = client.post(f"{url}/chat/completions", json=payload)
        except (httpx.TimeoutException, httpx.TransportError) as err:
            raise _Retryable(f"{type(err).__name__}: {err}") from None
        if resp.status_code == 429 or resp.status_code >= 500:
            retry_after = resp.headers.get("retry-after")
            try:
                retry_after = float(retry_after) if retry_after is not None else None
            except ValueError:
                retry_after = None
            raise _Retryable(f"HTTP {resp.status_code}: {resp.text[:200]}", retry_after)
        if resp.status_code in _FATAL:
            raise DataError(f"LLM endpoint {url} answered HTTP {resp.status_code} "
                            f"({_FATAL[resp.status_code]}): {resp.text[:200]}",
                            hint=f"check base_url, model ({self.model}) and the key in ${self.api_key_env}")
        if resp.status_code >= 400:
            raise ValueError(f"HTTP {resp.status_code}: {resp.text[:200]}")
        try:
            data = resp.json()
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ValueError(f"not an OpenAI chat-completions reply: {resp.text[:200]}") from None
        return message.get("content") or ""

    def _request(self, client, prompt: str) -> str:
        attempt = 0
        while True:
            self._count("requests")
            try:
                return self._post(client, prompt)
            except _Retryable as err:
                if attempt >= self.max_retries:
                    raise RuntimeError(f"gave up after {attempt + 1} attempts: {err}") from None
                delay = err.retry_after if err.retry_after is not None else self.backoff * (2 ** attempt)
                delay = min(self.max_backoff, delay) * (1.0 + 0.1 * random.random())
                self._count("retries")
                log.info("LLM request retry %d in %.2fs (%s)", attempt + 1, delay, err)
                time.sleep(delay)
                attempt += 1

    def replies(self, prompts: list) -> list:
        """Reply text per prompt (None where the request failed), from the cache or the endpoint."""
        self.preflight()
        if self._cache is None:
            self._cache = ReplyCache(self.cache_path)
        else:
            self._cache.refresh()  # what other workers appended meanwhile
        keys = [self.cache_key(p) for p in prompts]
        todo = {}
        for k, p in zip(keys, prompts):
            if k in self._cache:
                continue
            todo.setdefault(k, p)
        self.counts["prompts"] += len(set(keys))
        self.counts["cache_hits"] += len(set(keys)) - len(todo)
        if todo:
            import httpx

            headers = {"Content-Type": "application/json"}
            key = self._api_key()
            if key:
                headers["Authorization"] = f"Bearer {key}"
            with httpx.Client(timeout=self.timeout, headers=headers) as client, \
                    ThreadPoolExecutor(max_workers=self.concurrency) as pool:
                futures = {pool.submit(self._request, client, p): k for k, p in todo.items()}
                try:
                    for fut in as_completed(futures):
                        k = futures[fut]
                        try:
                            reply = fut.result()
                        except DataError:
                            raise
                        except Exception as err:  # recorded, reported, retried on the next run
                            self._count("errors")
                            self.last_errors.append(str(err)[:300])
                            continue
                        self._cache.put(k, self.model, reply)
                except DataError:
                    for f in futures:
                        f.cancel()
                    raise
        return [self._cache.get(k) for k in keys]

    def score(self, trials) -> np.ndarray:
        trials = as_trialset(trials)
        self.preflight()
        default_task = trials.meta.get("task", self.task)
        prompts = [build_prompt(trials.probe_texts(i), trials.enroll_texts(i),
                                trials.records[i].get("task", default_task), self.prompts)
                   for i in range(len(trials))]
        self.counts["trials"] += len(prompts)
        replies = self.replies(prompts)
        scores = np.array([parse_score(r) if r is not None else math.nan for r in replies], dtype=float)
        self.counts["no_number"] += int(sum(1 for r, s in zip(replies, scores) if r is not None and math.isnan(s)))
        return scores
