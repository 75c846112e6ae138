"""Start, wait for and stop ``python -m llama_cpp.server`` on this machine.

The server runs in its own process group, logs to a file, and is described by a small JSON
state file (pid, port, model, URL) so that ``sparc-eval llm-server stop`` finds it later. An API
key, when asked for, reaches the server through its environment (``API_KEY``, read by its
pydantic settings), never its command line, so it does not show in ``ps`` or in the state file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from sparc_eval.atomic import write_text
from sparc_eval.errors import DataError


@dataclass
class ServerConfig:
    model_path: str
    alias: str
    port: int = 8080
    host: str = "127.0.0.1"
    n_ctx: int = 4096
    n_threads: int = 2
    logits_all: bool = (
        True  # top log-probabilities (the judge's logprob modes) need every token's logits
    )

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list:
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            self.model_path,
            "--model_alias",
            self.alias,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--n_threads_batch",
            str(self.n_threads),
            "--logits_all",
            str(self.logits_all),
        ]


def state_path(home: Path, port: int) -> Path:
    return Path(home) / "servers" / f"{port}.json"


def start(
    config: ServerConfig, home: Path, *, api_key_env=None, ready_timeout: float = 300.0
) -> dict:
    """Start the server in the background, wait until it lists its model, record its state."""
    try:
        import llama_cpp.server.app  # noqa: F401  (the package imports without its [server] extras)
    except ImportError as err:
        raise DataError(
            "llama-cpp-python's server is not installed in this environment",
            hint="run `make llm-server` (builds llama-cpp-python[server] 0.3.36 once, then reuses the wheel)",
        ) from err
    state_file = state_path(home, config.port)
    if state_file.is_file() and alive(json.loads(state_file.read_text())["pid"]):
        raise DataError(
            f"an LLM server is already running on port {config.port} ({state_file})",
            hint="stop it with `sparc-eval llm-server stop --port N` or choose another --port",
        )
    check_port_free(config.host, config.port)
    log_path = state_file.with_suffix(".log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # the server's settings also read these from the environment (HOST and PORT override its
    # command line, API_KEY would require a key nobody asked for): only what we set reaches it
    env = {
        k: v
        for k, v in os.environ.items()
        if k.upper() not in ("HOST", "PORT", "API_KEY", "CONFIG_FILE")
    }
    key = os.environ.get(api_key_env) if api_key_env else None
    if api_key_env and not key:
        raise DataError(
            f"the server should require the API key in ${api_key_env}, which is not set"
        )
    if key:
        env["API_KEY"] = key
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            config.command(), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    state = {
        "pid": proc.pid,
        **asdict(config),
        "base_url": config.base_url,
        "log": str(log_path),
        "requires_api_key": bool(key),
    }
    try:
        wait_ready(
            config.base_url, proc, log_path, timeout=ready_timeout, api_key=key, alias=config.alias
        )
    except BaseException:
        stop_pid(proc.pid)
        raise
    write_text(state_file, json.dumps(state, indent=2) + "\n")
    return state


def check_port_free(host: str, port: int) -> None:
    import socket

    with socket.socket() as sock:
        try:
            sock.bind((host, int(port)))
        except OSError:
            raise DataError(
                f"port {port} on {host} is taken by another program",
                hint="choose another --port (make llm-server LLM_PORT=N)",
            ) from None


def wait_ready(
    base_url: str, proc, log_path: Path, *, timeout: float, api_key=None, alias=None
) -> None:
    """Poll ``GET /models`` until our process answers with our model; fail with the log's tail if
    the process dies."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise DataError(
                f"the LLM server exited with status {proc.returncode} while starting:\n"
                f"{log_tail(log_path)}",
                hint=f"the whole log is {log_path}",
            )
        try:
            resp = httpx.get(f"{base_url}/models", headers=headers, timeout=5.0)
            if resp.status_code == 200 and (
                alias is None or alias in [m.get("id") for m in resp.json()["data"]]
            ):
                return
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            pass
        time.sleep(0.5)
    raise DataError(
        f"the LLM server at {base_url} did not answer within {timeout:.0f} s:\n{log_tail(log_path)}"
    )


def log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live llama.cpp server (not a reused pid, not a zombie)."""
    try:
        cmdline = Path(f"/proc/{int(pid)}/cmdline").read_bytes()
        state = Path(f"/proc/{int(pid)}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return False
    return b"llama_cpp.server" in cmdline and state != "Z"


def stop_pid(pid: int, *, grace: float = 10.0) -> None:
    """SIGTERM the server's process group, then SIGKILL what is left after ``grace`` seconds."""
    if not alive(pid):
        _reap(pid)
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(int(pid), sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                if os.waitpid(int(pid), os.WNOHANG)[0]:  # our child: reap it
                    return
            except ChildProcessError:  # started by another process: poll it
                if not alive(pid):
                    return
            time.sleep(0.1)


def _reap(pid: int) -> None:
    try:
        os.waitpid(int(pid), os.WNOHANG)
    except (ChildProcessError, OSError):
        pass


def stop(home: Path, port: int) -> bool:
    """Stop the server recorded for ``port``; False when none was recorded."""
    state_file = state_path(home, port)
    if not state_file.is_file():
        return False
    stop_pid(json.loads(state_file.read_text())["pid"])
    state_file.unlink()
    return True


def running(home: Path) -> list:
    """States of the servers recorded under ``home`` whose process is alive."""
    folder = Path(home) / "servers"
    states = (
        [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
        if folder.is_dir()
        else []
    )
    return [s for s in states if alive(s["pid"])]
