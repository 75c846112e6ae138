"""A fault-injecting HTTP proxy in front of a real OpenAI-compatible server.

llama.cpp never answers 429 or sends ``Retry-After``; hosted APIs do. The proxy forwards every
request unchanged and, for the chat-completion requests numbered in ``faults`` (1-based, in
arrival order), answers instead with an injected status (``{"status": 429, "retry_after": "1"}``)
or forwards after a delay (``{"delay": 3.0}``, for client timeouts). It records each request:
arrival time, path, the status it answered and the Authorization header it saw (requests that
arrived before the last ``reset()`` are not recorded).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx


class FaultProxy:
    def __init__(self, upstream: str, faults=None):
        self.upstream = upstream.rstrip("/")  # e.g. http://127.0.0.1:8080 (no /v1)
        self.faults = dict(faults or {})
        self.requests = []  # (monotonic time, path, status, authorization)
        self._lock = threading.Lock()
        self._chat_posts = 0
        self._epoch = 0  # a request that arrived before reset() is not recorded after it
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def chat_requests(self) -> list:
        return [r for r in self.requests if r[1].endswith("/chat/completions")]

    def reset(self, faults=None) -> None:
        with self._lock:
            self.requests, self._chat_posts, self.faults = [], 0, dict(faults or {})
            self._epoch += 1

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _fault_for(self, path: str):
        with self._lock:
            if not path.endswith("/chat/completions"):
                return None
            self._chat_posts += 1
            return self.faults.get(self._chat_posts)

    def _arrival(self) -> tuple:
        with self._lock:
            return time.monotonic(), self._epoch

    def _record(self, arrival, path, status, auth) -> None:
        with self._lock:
            if arrival[1] == self._epoch:
                self.requests.append((arrival[0], path, status, auth))

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                self._forward(None)

            def do_POST(self):  # noqa: N802
                self._forward(self.rfile.read(int(self.headers.get("Content-Length", 0))))

            def _forward(self, body):
                auth, arrival = self.headers.get("Authorization"), proxy._arrival()
                fault = proxy._fault_for(self.path)
                if fault and "status" in fault:
                    proxy._record(arrival, self.path, fault["status"], auth)
                    extra = (
                        {"Retry-After": str(fault["retry_after"])} if "retry_after" in fault else {}
                    )
                    return self._send(
                        fault["status"], json.dumps({"error": "injected"}).encode(), extra
                    )
                if fault and "delay" in fault:
                    time.sleep(fault["delay"])
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() in ("authorization", "content-type")
                }
                try:
                    resp = httpx.request(
                        self.command,
                        proxy.upstream + self.path,
                        content=body,
                        headers=headers,
                        timeout=600.0,
                    )
                except httpx.HTTPError:
                    proxy._record(arrival, self.path, 502, auth)
                    return self._send(502, b'{"error": "upstream unreachable"}', {})
                proxy._record(arrival, self.path, resp.status_code, auth)
                self._send(resp.status_code, resp.content, {})

            def _send(self, code, data, headers):
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
                    pass

        return Handler
