"""The LLM judge against a local OpenAI-compatible server that the tests start."""

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from attackers.text.llm import LLMScorer, build_prompt, parse_score
from sparc_eval.errors import DataError
from sparc_eval.jobs.text import TrialSet
from sparc_eval.jobs.text.settings import TextEvaluationOptions


class FakeOpenAI:
    """``POST /v1/chat/completions``; the reply depends on a marker word in the probe text.

    NUM<k>: replies "<k>"; NONUM: "I cannot tell."; BIG: "150, surely"; RATE: 429 once, then "77";
    FAIL: 500 once, then "12"; DOWN: always 500; SLOW: held past the client timeout once (until it
    asks again), then "33"; AUTH: 401. LOGP<k> (read in the last message): with ``logprobs`` requested, a yes/no reply
    whose top log-probabilities give P(yes) = k/100, and for a 0-9 rating P("7") = P("3") = k/100
    (the rest on "A"); without, the text "yes". ``GET /v1/models`` lists ``models`` when set.
    """

    def __init__(self):
        self.calls = []  # (marker, authorization header)
        self.bodies = []
        self.models = None
        self.seen = {}
        self.lock = threading.Lock()
        self.slow_retried = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                if self.path == "/v1/models" and owner.models is not None:
                    return self._send(
                        200, {"object": "list", "data": [{"id": m} for m in owner.models]}
                    )
                return self._send(404, {"error": "not found"})

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                marker = next(
                    (
                        w
                        for w in prompt.replace("\n", " ").split()
                        if w.isupper()
                        and w.isalnum()
                        and w[:3] in ("NUM", "NON", "BIG", "RAT", "FAI", "DOW", "SLO", "AUT", "LOG")
                    ),
                    "NONE",
                )
                with owner.lock:
                    owner.calls.append((marker, self.headers.get("Authorization")))
                    owner.bodies.append(body)
                    n = owner.seen[marker] = owner.seen.get(marker, 0) + 1
                if marker.startswith("LOGP"):
                    return self._send(
                        200, _logprob_reply(int(marker[4:]) / 100, prompt, body.get("logprobs"))
                    )
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": "not found"})
                if marker == "RATE" and n == 1:
                    return self._send(429, {"error": "slow down"}, {"Retry-After": "0"})
                if marker == "FAIL" and n == 1:
                    return self._send(500, {"error": "oops"})
                if marker == "DOWN":
                    return self._send(503, {"error": "down"})
                if marker == "AUTH":
                    return self._send(401, {"error": "bad key"})
                if marker == "SLOW" and n == 1:
                    # held until the client has given up and asked again (at most 30 s), so the
                    # retry is what answers, however slow the machine
                    owner.slow_retried.wait(30)
                if marker == "SLOW" and n == 2:
                    owner.slow_retried.set()
                reply = {
                    "NONUM": "I cannot tell.",
                    "BIG": "150, surely",
                    "RATE": "77",
                    "FAIL": "12",
                    "SLOW": "33",
                }.get(marker)
                if reply is None and marker.startswith("NUM"):
                    reply = marker[3:]
                return self._send(
                    200, {"choices": [{"message": {"role": "assistant", "content": reply}}]}
                )

            def _send(self, code, obj, headers=None):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _logprob_reply(p: float, prompt: str, logprobs: bool) -> dict:
    if "yes or no" in prompt:
        text, top = "Yes", [("Yes", p), (" no", 1 - p)]
    else:
        text, top = "7", [("7", p), ("3", p), ("A", max(1e-9, 1 - 2 * p))]
    choice = {"message": {"role": "assistant", "content": text if logprobs else "yes"}}
    if logprobs:
        choice["logprobs"] = {
            "content": [
                {
                    "token": text,
                    "logprob": 0.0,
                    "top_logprobs": [{"token": t, "logprob": math.log(q)} for t, q in top],
                }
            ]
        }
    return {"choices": [choice]}


@pytest.fixture()
def server():
    s = FakeOpenAI()
    yield s
    s.close()


def trials(markers):
    recs = [
        {
            "probe_texts": [f"probe text {m}"],
            "enroll_texts": ["enrollment one", "enrollment two"],
            "label": i % 2,
        }
        for i, m in enumerate(markers)
    ]
    return TrialSet.from_records(recs, meta={"task": "speaker"})


def scorer(server, tmp_path, **kw):
    args = dict(
        base_url=server.url,
        model="test-model",
        cache_path=tmp_path / "replies.jsonl",
        backoff=0.01,
        max_backoff=0.05,
        timeout=5,
        concurrency=3,
    )
    args.update(kw)
    return LLMScorer(**args)


def test_prompt_is_the_papers():
    p = build_prompt(["probe one", "probe two"], ["enroll one"], "speaker")
    assert p.startswith("You are a speaker verification judge.")
    assert "SAME SPEAKER" in p and "Do not explain your reasoning." in p
    assert (
        p.index("Probe utterances:")
        < p.index("probe one")
        < p.index("Enrollment utterances:")
        < p.index("enroll one")
    )
    assert "SAME BIOLOGICAL SEX" in build_prompt(["a"], ["b"], "sex")
    assert "(<30, 30-60, or 60+)" in build_prompt(["a"], ["b"], "age")
    assert "North America versus Other" in build_prompt(["a"], ["b"], "accent")
    assert "SAME EDUCATION" in build_prompt(["a"], ["b"], "education")


def test_parse_score():
    assert parse_score("85") == 85.0
    assert parse_score("Score: 42.5 out of 100") == 42.5
    assert parse_score("150") == 100.0 and parse_score("-3") == 0.0
    assert math.isnan(parse_score("no idea")) and math.isnan(parse_score(""))


def test_numbers_missing_and_clamped(server, tmp_path):
    sc = scorer(server, tmp_path)
    s = sc.score(trials(["NUM10", "NUM90", "NONUM", "BIG"]))
    assert s[:2].tolist() == [10.0, 90.0]
    assert math.isnan(s[2]) and s[3] == 100.0
    rep = sc.report()
    assert rep["no_number"] == 1 and rep["errors"] == 0 and rep["trials"] == 4


def test_rate_limit_and_server_error_are_retried(server, tmp_path):
    sc = scorer(server, tmp_path)
    s = sc.score(trials(["RATE", "FAIL"]))
    assert s.tolist() == [77.0, 12.0]
    assert server.seen["RATE"] == 2 and server.seen["FAIL"] == 2
    assert sc.report()["retries"] == 2


def test_timeout_is_retried(server, tmp_path):
    sc = scorer(server, tmp_path, timeout=1.5)
    assert sc.score(trials(["SLOW"])).tolist() == [33.0]
    assert server.seen["SLOW"] == 2


def test_persistent_errors_are_reported_not_cached(server, tmp_path):
    sc = scorer(server, tmp_path, max_retries=2)
    s = sc.score(trials(["DOWN", "NUM5"]))
    assert math.isnan(s[0]) and s[1] == 5.0
    rep = sc.report()
    assert rep["errors"] == 1 and server.seen["DOWN"] == 3 and "503" in rep["last_errors"][0]
    lines = (tmp_path / "replies.jsonl").read_text().splitlines()
    assert len(lines) == 1  # only the successful reply


def test_cache_hit_on_rerun_makes_no_http_call(server, tmp_path):
    ts = trials(["NUM1", "NUM2", "NONUM", "NUM1"])
    first = scorer(server, tmp_path).score(ts)
    n_calls = len(server.calls)
    assert n_calls == 3  # identical prompts are sent once
    again = scorer(server, tmp_path)
    second = again.score(ts)
    assert len(server.calls) == n_calls
    assert np.array_equal(first, second, equal_nan=True)
    assert again.report()["cache_hits"] == 3 and again.report()["requests"] == 0


def test_missing_api_key_fails_before_any_request(server, tmp_path, monkeypatch):
    monkeypatch.delenv("SPARC_TEST_KEY", raising=False)
    sc = scorer(server, tmp_path, api_key_env="SPARC_TEST_KEY", require_api_key=True)
    with pytest.raises(DataError, match="SPARC_TEST_KEY"):
        sc.score(trials(["NUM1"]))
    assert server.calls == []
    # auto: a remote endpoint needs a key, a local one does not
    remote = LLMScorer(base_url="https://api.example.com/v1", api_key_env="SPARC_TEST_KEY")
    with pytest.raises(DataError, match="is not set"):
        remote.preflight()
    scorer(server, tmp_path, api_key_env="SPARC_TEST_KEY").preflight()


def test_api_key_is_sent_but_never_stored(server, tmp_path, monkeypatch):
    monkeypatch.setenv("SPARC_TEST_KEY", "sk-secret-123")
    sc = scorer(server, tmp_path, api_key_env="SPARC_TEST_KEY", require_api_key=True)
    sc.score(trials(["NUM7"]))
    assert server.calls[0][1] == "Bearer sk-secret-123"
    blob = json.dumps(sc.settings()) + json.dumps(sc.report()) + repr(sc)
    blob += (tmp_path / "replies.jsonl").read_text()
    assert "sk-secret" not in blob


def test_unauthorised_stops_the_run(server, tmp_path):
    with pytest.raises(DataError, match="401"):
        scorer(server, tmp_path).score(trials(["AUTH"]))


def test_missing_scores_are_counted_in_results(server, tmp_path):
    from sparc_eval.data.manifest import Manifest, Utterance
    from sparc_eval.jobs.text import TrialConfig
    from sparc_eval.jobs.text.evaluate import evaluate_text

    utts = []
    for spk, ep, marker in [
        ("A", "e1", "NUM80"),
        ("A", "e2", "NUM70"),
        ("B", "e3", "NONUM"),
        ("C", "e4", "NUM20"),
    ]:
        for i in range(4):
            utts.append(
                Utterance(
                    id=f"{spk}{ep}{i}", speaker=spk, episode=ep, text=f"{marker} word{i} {spk} {ep}"
                )
            )
    doc = evaluate_text(
        Manifest(utts),
        scorer(server, tmp_path),
        tasks=["speaker"],
        settings=[(3, 1)],
        config=TrialConfig(P=3, L=1, tolerance=0, max_probes=1),
        options=TextEvaluationOptions(n_boot=0, plots=False),
        output_folder=tmp_path / "out",
    )
    block = doc["tasks"]["speaker"]["P3_L1"]
    assert block["missing_scores"] > 0
    assert "tasks.speaker.P3_L1.missing_scores" in doc["not_applicable"]
    assert doc["run"]["scorer_report"]["no_number"] >= 1


def test_each_scoring_mode_has_its_instruction():
    from attackers.text.llm_prompts import instruction

    assert instruction("speaker", "yes_no") == (
        "Decide whether the probe and enrollment utterances came from the SAME SPEAKER. Focus on stylistic and "
        "linguistic cues, not topic similarity. Answer with one word: yes or no."
    )
    assert instruction("speaker", "rating").endswith(
        "Output one digit from 0 to 9: 0 = definitely different speaker 9 = definitely same speaker"
    )
    assert instruction("accent", "number") == build_prompt([], [], "accent").split("\n\n")[1]


def test_yes_no_and_rating_read_the_top_logprobs(server, tmp_path):
    yes_no = scorer(server, tmp_path, scoring="yes_no")
    assert yes_no.score(trials(["LOGP25", "LOGP80"])).round(6).tolist() == [25.0, 80.0]
    assert yes_no.report()["from_logprobs"] == 2
    body = server.bodies[-1]
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and body["max_tokens"] == 3
    rating = scorer(
        server, tmp_path, scoring="rating"
    )  # P(7) = P(3): expected digit 5, whatever the mass
    assert rating.score(trials(["LOGP10", "LOGP40"])).round(6).tolist() == [round(500 / 9, 6)] * 2
    assert yes_no.name == "llm:test-model:yes_no" and "scorer_scoring" in rating.deviations()


def test_without_logprobs_the_reply_text_scores_and_is_counted(server, tmp_path):
    sc = scorer(server, tmp_path, scoring="yes_no", request_params={"logprobs": False})
    assert sc.score(trials(["LOGP25"])).tolist() == [100.0]  # the text "yes"
    assert sc.report()["from_reply_text"] == 1 and sc.report()["from_logprobs"] == 0


def test_few_shot_examples_come_first_and_from_other_speakers(server, tmp_path):
    examples = tmp_path / "dev.jsonl"
    rows = [
        {
            "task": "speaker",
            "label": lab,
            "probe": {"id": f"p{i}", "speaker": f"dev{i}"},
            "enroll": {"id": f"e{i}", "speaker": f"dev{i}" if lab else "devX"},
            "probe_texts": [f"example probe {i}"],
            "enroll_texts": [f"example enroll {i}"],
        }
        for i, lab in enumerate([1, 0, 1, 0])
    ]
    examples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    sc = scorer(server, tmp_path, scoring="yes_no", few_shot=examples, few_shot_n=1)
    assert np.isfinite(sc.score(trials(["LOGP60"]))).all()
    messages = server.bodies[-1]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert [messages[1]["content"], messages[3]["content"]] == ["yes", "no"]
    assert "example probe" in messages[0]["content"] and "LOGP60" in messages[4]["content"]
    assert "scorer_few_shot" in sc.deviations() and sc.name.endswith(":few-shot-2")
    leaky = [{**r, "probe": {"id": "x", "speaker": "s1"}} for r in rows]
    examples.write_text("".join(json.dumps(r) + "\n" for r in leaky))
    test = TrialSet.from_records(
        [
            {
                "probe_texts": ["LOGP60"],
                "enroll_texts": ["b"],
                "label": 1,
                "probe": {"id": "q", "speaker": "s1"},
            }
        ],
        meta={"task": "speaker"},
    )
    with pytest.raises(DataError, match="share speakers"):
        scorer(server, tmp_path, scoring="yes_no", few_shot=examples).score(test)


def test_a_model_the_endpoint_does_not_list_stops_before_any_request(server, tmp_path):
    server.models = ["other-model"]
    with pytest.raises(DataError, match="serves other-model, not 'test-model'"):
        scorer(server, tmp_path).score(trials(["NUM10"]))
    assert server.calls == []
    server.models = ["test-model"]
    assert scorer(server, tmp_path).score(trials(["NUM10"])).tolist() == [10.0]


def test_replies_are_read_whatever_their_punctuation():
    from attackers.text.llm_prompts import score_reply

    def reply(top, content=""):
        return {"content": content, "top_logprobs": [top]}

    assert score_reply(reply([("Yes.", math.log(0.75)), (" no", math.log(0.25))]), "yes_no") == (
        75.0,
        "logprobs",
    )
    assert score_reply(reply([("YES", None), (" No", 0.0)]), "yes_no") == (
        0.0,
        "logprobs",
    )  # a null logprob is skipped
    assert score_reply(reply([("²", 0.0), ("7", 0.0)]), "rating")[0] == pytest.approx(
        700 / 9
    )  # "²" is no digit
    assert score_reply(reply([], "Rating: 7"), "rating")[0] == pytest.approx(700 / 9)
    assert math.isnan(score_reply(reply([], "10"), "rating")[0])  # not a 0-9 digit
    assert math.isnan(score_reply(reply([], "Not sure"), "yes_no")[0])
    assert score_reply(reply([], "No, they differ."), "yes_no") == (0.0, "reply_text")
