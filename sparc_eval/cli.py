"""The ``sparc-eval`` command line.

Each subcommand lives in the module that owns its job and exposes ``register(subparsers)``;
modules are imported only when their subcommand runs, so ``sparc-eval metrics`` never pays for
torch or SpeechBrain.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .errors import DataError

# subcommand -> (module, one-line help)
COMMANDS = {
    "corpus": ("sparc_eval.data.corpora.cli", "inspect a corpus on disk"),
    "metrics": ("sparc_eval.metrics.cli", "verification metrics and plots from a score file"),
    "demo": ("sparc_eval.demo.cli", "build the built-in demo corpus and print its summary"),
    "g2p": ("sparc_eval.phones.cli", "phonemize text: ARPAbet without stress, | between words"),
    "phones": (
        "sparc_eval.phones.analysis_cli",
        "phone-frequency distinctiveness of a corpus's speakers",
    ),
    "text": (
        "sparc_eval.jobs.text.cli",
        "SPARC transcript-only speaker and attribute verification",
    ),
    "anonymize": (
        "sparc_eval.anonymization.cli",
        "anonymize a corpus into 16 kHz wav files and a manifest",
    ),
    "train": ("sparc_eval.attack.train", "train an attacker and evaluate it (an attacker recipe)"),
    "leakage": (
        "sparc_eval.jobs.leakage.cli",
        "compare content leakage across corpora and attackers",
    ),
    "llm-server": (
        "sparc_eval.llm_server.cli",
        "start or stop a local OpenAI-compatible LLM server (llama.cpp)",
    ),
    "evaluate": (
        "sparc_eval.jobs.card.cli",
        "evaluate anonymizers: privacy against voice and content, and utility",
    ),
    "report": (
        "sparc_eval.jobs.report_cli",
        "re-render a card or leakage comparison from its results.json (nothing recomputed)",
    ),
    "prune": (
        "sparc_eval.cache",
        "delete what earlier settings left kept (.kept/) under an output or cache folder",
    ),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparc-eval",
        description="Speaker identifiability after anonymization, from the voice and from the words.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        if command == name:
            importlib.import_module(module).register(subparsers)
        else:
            subparsers.add_parser(name, help=help_text, add_help=False)
    return parser


# subcommands that read the hparams syntax themselves (HPARAMS --key=value ...): main(argv, prog)
HPARAMS_SYNTAX = ("anonymize", "train")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    if command in HPARAMS_SYNTAX:
        module = importlib.import_module(COMMANDS[command][0])
        return int(module.main(argv[1:], prog=f"sparc-eval {command}") or 0)
    parser = build_parser(command)
    args = parser.parse_args(argv)
    if command is None:
        parser.print_help()
        return 0 if not argv else 2
    try:
        return int(args.func(args) or 0)
    except DataError as err:
        print(f"sparc-eval {command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
