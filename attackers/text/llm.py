"""LLM judge (SPARC paper A.2.2) over any OpenAI-compatible chat-completions endpoint.

Works with OpenAI, vLLM, Ollama (``http://localhost:11434/v1``), llama.cpp server (``sparc-eval
llm-server``) and anything else that serves ``POST {base_url}/chat/completions``. Each trial is
one zero-shot user message built from the paper's prompt
(:data:`~attackers.text.llm_prompts.PROMPTS`; override per task with ``prompts``); the first
number in the reply is the score, clamped to 0-100. A reply without a number is recorded as
missing (NaN, counted in ``report()``), never as 0.

- Scoring modes (:mod:`.llm_prompts`): ``scoring: number`` is the paper's; ``yes_no`` and
  ``rating`` read a continuous score from the top log-probabilities the server returns (P(yes),
  or the expected 0-9 digit), for models too small to vary a 0-100 answer. Each is a named
  deviation; ``report()`` counts the scores read from log-probabilities and from reply text.
- Few-shot: ``few_shot`` names a trial file with texts (an evaluation's ``trials/*.jsonl`` with
  ``trials_with_text: True``, from another split); ``few_shot_n`` same and different examples,
  drawn seeded, precede every trial as earlier chat turns. Examples that share a speaker with the
  scored trials stop the run.
- Preflight lists the endpoint's models (``GET /models``) once: a server that lists models
  without ours (llama.cpp answers any name with its one model) stops the run before any trial.

- API key: read from the environment variable named by ``api_key_env`` (default
  ``OPENAI_API_KEY``) and sent as a bearer token. It is never logged, cached or reported.
  ``require_api_key``: ``auto`` (required unless the endpoint is on this machine), true or
  false. A required key that is missing raises :class:`~sparc_eval.errors.DataError` from
  ``preflight()``, which the evaluation calls before any work starts.
- Concurrency: ``concurrency`` requests in flight (a thread pool); identical prompts are sent
  once. ``base_url`` may list several endpoints serving the same model: requests rotate over
  them, and under the Ray runner (:mod:`sparc_eval.text_trials.ray_scoring`) worker i uses endpoint
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
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from urllib.parse import urlparse

import numpy as np

from sparc_eval.digest import text_digest
from sparc_eval.errors import DataError

from .base import TextScorer, as_trialset
from .llm_cache import ReplyCache
from .llm_prompts import (
    MODES,
    PROMPTS,
    build_prompt,
    few_shot_messages,
    parse_score,
    reply_logprobs,
    score_reply,
)

__all__ = ["LLMScorer", "PROMPTS", "ReplyCache", "build_prompt", "parse_score"]

log = logging.getLogger(__name__)

_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
# the paper's judges (A.2.2), matched on the end of the model name (provider prefixes vary)
PAPER_MODELS = (
    "gpt-5-mini",
    "llama-3.3-70b-instruct-turbo",
    "llama-3.3-70b-instruct",
    "qwen3.5-9b",
)
_FATAL = {
    401: "the endpoint rejected the API key",
    403: "the API key may not use this model or endpoint",
    404: "no such model or URL",
}
# what a logprob mode asks for unless request_params says otherwise: one short, greedy answer
_LOGPROB_PARAMS = {"logprobs": True, "top_logprobs": 20, "max_tokens": 3, "temperature": 0}


class _Retryable(Exception):
    def __init__(self, message, retry_after=None):
        super().__init__(message)
        self.retry_after = retry_after


class LLMScorer(TextScorer):
    languages = ("en",)  # its prompts are English

    def __init__(
        self,
        base_url="https://api.openai.com/v1",
        model: str = "gpt-5-mini",
        api_key_env: str = "OPENAI_API_KEY",
        require_api_key="auto",
        prompts=None,
        concurrency: int = 4,
        max_retries: int = 5,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        timeout: float = 120.0,
        cache_path="results/cache/llm_replies.jsonl",
        request_params=None,
        task: str = "speaker",
        name=None,
        scoring: str = "number",
        few_shot=None,
        few_shot_n: int = 1,
        few_shot_seed: int = 0,
    ):
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
        if scoring not in MODES:
            raise DataError(f"LLM scorer: scoring {scoring!r} is not one of {', '.join(MODES)}")
        self.scoring = scoring
        self.few_shot = None if few_shot in (None, "") else str(few_shot)
        self.few_shot_n = max(1, int(few_shot_n))
        self.few_shot_seed = int(few_shot_seed)
        self._cache = None
        self.counts = {
            "trials": 0,
            "prompts": 0,
            "requests": 0,
            "retries": 0,
            "cache_hits": 0,
            "no_number": 0,
            "errors": 0,
            "from_logprobs": 0,
            "from_reply_text": 0,
        }
        self.last_errors = []
        self._lock = threading.Lock()
        self._n_posts = 0  # requests rotate over the endpoints
        self._models_checked = False
        self._examples = None  # the few-shot trial file, once read

    def __getstate__(
        self,
    ):  # a copy for another process (a Ray actor): no lock, the cache is reread there
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
        """Add what a worker counted (:func:`sparc_eval.text_trials.ray_scoring.report_delta` of ``report()``)."""
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
        if self._name:
            return self._name
        mode = "" if self.scoring == "number" else f":{self.scoring}"
        return f"llm:{self.model}{mode}" + (
            f":few-shot-{2 * self.few_shot_n}" if self.few_shot else ""
        )

    def settings(self) -> dict:
        out = {
            "base_url": self.base_url,
            "model": self.model,
            "api_key_env": self.api_key_env,
            "require_api_key": self.require_api_key,
            "concurrency": self.concurrency,
            "max_retries": self.max_retries,
            "backoff": self.backoff,
            "max_backoff": self.max_backoff,
            "timeout": self.timeout,
            "cache_path": self.cache_path,
            "request_params": self.request_params,
            "custom_prompts": sorted(self.prompts),
            "scoring": self.scoring,
        }
        if self.few_shot:
            out.update(
                few_shot=self.few_shot, few_shot_n=self.few_shot_n, few_shot_seed=self.few_shot_seed
            )
        if len(self.endpoints) > 1:
            out["endpoints"] = list(self.endpoints)
        return out

    def deviations(self) -> dict:
        out = {}
        if not any(self.model.lower().endswith(m) for m in PAPER_MODELS):
            out["scorer_model"] = (
                f"LLM judge {self.model}, not one of the paper's ({', '.join(PAPER_MODELS)})"
            )
        if self.scoring != "number":
            out["scorer_scoring"] = (
                f"{self.name} scores from the top log-probabilities of a "
                f"{'yes/no answer' if self.scoring == 'yes_no' else '0-9 rating'}, not the "
                "first number of a 0-100 reply (paper A.2.2)"
            )
        if self.few_shot:
            out["scorer_few_shot"] = (
                f"{self.name} sees {self.few_shot_n} same and {self.few_shot_n} different "
                f"labelled examples from {self.few_shot} before each trial (paper: zero-shot)"
            )
        return out

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
                raise DataError(
                    f"LLM scorer: base_url {url!r} is not an http(s) URL",
                    hint="e.g. https://api.openai.com/v1 or http://localhost:8000/v1",
                )
        if self._key_required() and not self._api_key():
            raise DataError(
                f"LLM scorer: the environment variable {self.api_key_env or '(none named)'} holding the API key "
                f"for {', '.join(self.endpoints)} is not set",
                hint="export it before running, or name another variable with api_key_env; a server on this "
                "machine needs none (require_api_key: false)",
            )
        if not self._models_checked:
            for url in self.endpoints:
                self._check_model_listed(url)
            self._models_checked = True

    def _headers(self) -> dict:
        key = self._api_key()
        return {
            "Content-Type": "application/json",
            **({"Authorization": f"Bearer {key}"} if key else {}),
        }

    def _check_model_listed(self, url: str) -> None:
        """``GET /models`` once: a server that lists models but not ours would answer with another
        model (llama.cpp serves its one model under any name), so the run stops here. A server
        without the listing, or one that cannot be reached yet, is left to the requests."""
        import httpx

        try:
            resp = httpx.get(
                f"{url}/models", headers=self._headers(), timeout=min(self.timeout, 30.0)
            )
        except httpx.HTTPError:
            return
        if resp.status_code in (401, 403):
            raise DataError(
                f"LLM endpoint {url} answered HTTP {resp.status_code} to GET /models "
                f"({_FATAL[resp.status_code]})",
                hint=f"check the key in ${self.api_key_env}",
            )
        try:
            listed = [m["id"] for m in resp.json()["data"]] if resp.status_code == 200 else []
        except (ValueError, KeyError, TypeError):
            return
        if listed and self.model not in listed:
            raise DataError(
                f"LLM endpoint {url} serves {', '.join(map(str, listed[:5]))}, not {self.model!r}",
                hint="set --model to a listed name (a llama.cpp server: its --model_alias)",
            )

    # -- requests -------------------------------------------------------------------------------
    def params(self) -> dict:
        """Request parameters as sent: a logprob mode asks for top log-probabilities unless told otherwise."""
        return (
            dict(self.request_params)
            if self.scoring == "number"
            else {**_LOGPROB_PARAMS, **self.request_params}
        )

    def cache_key(self, prompt) -> str:
        """sha256 of (model, parameters, prompt); a prompt is a string or a list of chat messages."""
        text = (
            prompt
            if isinstance(prompt, str)
            else json.dumps(prompt, sort_keys=True, ensure_ascii=False)
        )
        key = {
            "model": self.model,
            "params": self.params(),
            "prompt_sha256": text_digest(text, n=None),
        }
        if (
            self.scoring != "number"
        ):  # what the reply is read for (the number mode keeps its old keys)
            key["scoring"] = self.scoring
        blob = json.dumps(key, sort_keys=True)
        return text_digest(blob, n=None)

    def _post(self, client, prompt):
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        payload = {"model": self.model, "messages": messages, **self.params()}
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
            raise DataError(
                f"LLM endpoint {url} answered HTTP {resp.status_code} "
                f"({_FATAL[resp.status_code]}): {resp.text[:200]}",
                hint=f"check base_url, model ({self.model}) and the key in ${self.api_key_env}",
            )
        if resp.status_code >= 400:
            raise ValueError(f"HTTP {resp.status_code}: {resp.text[:200]}")
        try:
            choice = resp.json()["choices"][0]
            content = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise ValueError(f"not an OpenAI chat-completions reply: {resp.text[:200]}") from None
        if self.scoring == "number":
            return content
        return {"content": content, "top_logprobs": reply_logprobs(choice.get("logprobs"))}

    def _request(self, client, prompt):
        attempt = 0
        while True:
            self._count("requests")
            try:
                return self._post(client, prompt)
            except _Retryable as err:
                if attempt >= self.max_retries:
                    raise RuntimeError(f"gave up after {attempt + 1} attempts: {err}") from None
                delay = (
                    err.retry_after if err.retry_after is not None else self.backoff * (2**attempt)
                )
                delay = min(self.max_backoff, delay) * (1.0 + 0.1 * random.random())
                self._count("retries")
                log.info("LLM request retry %d in %.2fs (%s)", attempt + 1, delay, err)
                time.sleep(delay)
                attempt += 1

    def replies(self, prompts: list) -> list:
        """Reply per prompt (None where the request failed), from the cache or the endpoint."""
        self.preflight()
        if self._cache is None:
            self._cache = ReplyCache(self.cache_path)
        else:
            self._cache.refresh()  # what other workers appended meanwhile
        keys = [self.cache_key(p) for p in prompts]
        todo = {}
        for k, p in zip(keys, prompts):
            if k not in self._cache:
                todo.setdefault(k, p)
        self.counts["prompts"] += len(set(keys))
        self.counts["cache_hits"] += len(set(keys)) - len(todo)
        if todo:
            self._send_all(todo)
        return [self._cache.get(k) for k in keys]

    def _send_all(self, todo: dict) -> None:
        """Send the uncached prompts ``{key: prompt}`` and cache each reply as it arrives."""
        import httpx
        from tqdm.auto import tqdm

        # sorted prompts share their longest prefixes with their neighbours: a llama.cpp server
        # reuses the cached prefix of the previous request (same probe, same examples)
        order = sorted(
            todo.items(), key=lambda kp: kp[1] if isinstance(kp[1], str) else json.dumps(kp[1])
        )
        with (
            httpx.Client(timeout=self.timeout, headers=self._headers()) as client,
            ThreadPoolExecutor(max_workers=self.concurrency) as pool,
            tqdm(total=len(order), desc=self.name, unit="trial", disable=len(order) < 50) as bar,
        ):
            futures = {pool.submit(self._request, client, p): k for k, p in order}
            try:
                for fut in as_completed(futures):
                    bar.update(1)
                    try:
                        reply = fut.result()
                    except DataError:
                        raise
                    except Exception as err:  # recorded, reported, retried on the next run
                        self._count("errors")
                        self.last_errors.append(str(err)[:300])
                        continue
                    self._cache.put(futures[fut], self.model, reply)
            except BaseException:  # a fatal answer or an interruption: send nothing more
                for f in futures:
                    f.cancel()
                raise

    def _few_shot_turns(self, task: str, trials) -> list:
        """The labelled example turns for ``task``: ``few_shot_n`` same and different trials drawn
        (seeded) from the ``few_shot`` trial file, none of whose speakers is in ``trials``."""
        if self._examples is None:  # read once per scorer (each Ray batch calls score())
            from sparc_eval.text_trials.trial_set import read_trials_jsonl

            self._examples = read_trials_jsonl(self.few_shot)
        examples = self._examples
        mine = [i for i, r in enumerate(examples.records) if r.get("task", task) == task]
        speakers = {
            side.get("speaker")
            for r in trials.records
            for side in (r.get("probe", {}), r.get("enroll", {}))
        }
        theirs = {
            examples.records[i].get(side, {}).get("speaker")
            for i in mine
            for side in ("probe", "enroll")
        }
        shared = sorted((theirs & speakers) - {None})
        if shared:
            raise DataError(
                f"LLM few-shot examples in {self.few_shot} share speakers with the trials being scored "
                f"({', '.join(map(str, shared[:3]))}...)",
                hint="draw them from another split (dev)",
            )
        rng = np.random.default_rng(self.few_shot_seed)
        picked = []
        for label in (True, False):
            pool = [i for i in mine if bool(examples.labels[i]) == label]
            if len(pool) < self.few_shot_n:
                raise DataError(
                    f"LLM few-shot: {self.few_shot} has {len(pool)} {task} trials labelled {label}, "
                    f"fewer than few_shot_n = {self.few_shot_n}"
                )
            picked.append(rng.choice(pool, self.few_shot_n, replace=False))
        order = [int(i) for pair in zip(*picked) for i in pair]  # same, different, same, ...
        return few_shot_messages(
            [
                (examples.probe_texts(i), examples.enroll_texts(i), examples.labels[i])
                for i in order
            ],
            task,
            self.scoring,
            self.prompts,
        )

    def score(self, trials) -> np.ndarray:
        trials = as_trialset(trials)
        self.preflight()
        default_task = trials.meta.get("task", self.task)
        tasks = [trials.records[i].get("task", default_task) for i in range(len(trials))]
        shots = {t: self._few_shot_turns(t, trials) for t in set(tasks)} if self.few_shot else {}
        prompts = []
        for i, task in enumerate(tasks):
            text = build_prompt(
                trials.probe_texts(i), trials.enroll_texts(i), task, self.prompts, self.scoring
            )
            prompts.append(shots[task] + [{"role": "user", "content": text}] if shots else text)
        self.counts["trials"] += len(prompts)
        scores = np.full(len(prompts), math.nan)
        for i, reply in enumerate(self.replies(prompts)):
            scores[i], source = score_reply(reply, self.scoring)
            if reply is not None and math.isnan(scores[i]):
                self.counts["no_number"] += 1  # no number (or no answer) in the reply
            elif source:
                self.counts[f"from_{source}"] += 1
        return scores
