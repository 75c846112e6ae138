"""``sparc-eval corpus info PATH``: what a corpus on disk holds."""

from __future__ import annotations

import json
import warnings


def register(subparsers) -> None:
    corpus = subparsers.add_parser("corpus", help="inspect a corpus on disk")
    actions = corpus.add_subparsers(dest="action", metavar="ACTION", required=True)
    info = actions.add_parser(
        "info", help="layout, utterances, speakers, episodes, hours, attributes, trials"
    )
    info.add_argument(
        "path",
        help="LibriSpeech tree, Kaldi dir, EdAcc release or datafile, manifest, SPARC export, "
        "folder of audio files (with a metadata.csv, or speaker folders)",
    )
    info.add_argument(
        "--json", action="store_true", help="print one JSON object instead of name: value lines"
    )
    info.add_argument(
        "--layout",
        help="skip detection: a registered loader (librispeech, kaldi, edacc, spane, manifest, "
        "sparc, or a plug-in's)",
    )
    info.add_argument("--root", help="replaces {root} in SpAnE datafile paths")
    info.add_argument("--split", default="test", help="EdAcc release split (default: test)")
    info.add_argument("--columns", help="YAML column mapping for SPARC exports")
    info.set_defaults(func=run_info)


def run_info(args) -> int:
    from . import detect_layout, load_corpus
    from .summary import format_info, summarize

    layout = args.layout or detect_layout(args.path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manifest = load_corpus(
            args.path, layout=layout, root=args.root, split=args.split, columns=args.columns
        )
    info = summarize(manifest, layout=layout, path=args.path)
    notes = [str(w.message) for w in caught]
    if args.json:
        print(json.dumps({**info, "warnings": notes}, indent=2))
    else:
        for note in notes:
            print(f"warning: {note}", file=__import__("sys").stderr)
        print(format_info(info))
    return 0
