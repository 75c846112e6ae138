"""``sparc-eval g2p "TEXT"``: stress-free CMU phones, space separated, ``|`` between words.

    $ sparc-eval g2p "Speech is silver."
    S P IY CH | IH Z | S IH L V ER

Several TEXT arguments, or ``--file`` (one sentence per line, ``-`` for stdin), print one line
each, in order; a text with no English words prints an empty line and a warning on stderr.
``--json`` prints the words as a JSON list of lists instead. The word cache lives under
``--cache-dir`` (default: $SPARC_EVAL_CACHE or ~/.cache/sparc_eval), so a later call with known
words starts at once; ``--no-cache`` keeps nothing on disk.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

from ..errors import DataError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "g2p",
        help="text -> stress-free CMU phones (offline g2p_en)",
        description="Print the stress-free CMU (ARPAbet) phones of English text: phones separated by "
        "spaces, words by ' | '. Offline g2p_en: CMU dictionary, its homograph table with a "
        "POS tagger, its neural model for unknown words.",
    )
    parser.add_argument("text", nargs="*", help="text to convert (one output line per argument)")
    parser.add_argument(
        "--file",
        type=str,
        default=None,
        help="read sentences from FILE, one per line ('-' for stdin)",
    )
    parser.add_argument("--json", action="store_true", help="print words as JSON lists of phones")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="word cache folder (default: $SPARC_EVAL_CACHE or ~/.cache/sparc_eval)",
    )
    parser.add_argument("--no-cache", action="store_true", help="keep no word cache on disk")
    parser.add_argument(
        "--strict-g2p-en",
        action="store_true",
        help="exactly g2p_en's phones (no hyphen splitting or Unicode clean-up)",
    )
    parser.set_defaults(func=run)


def _read_lines(path: str) -> list:
    if path == "-":
        return sys.stdin.read().splitlines()
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DataError(f"{path} does not exist") from None
    except UnicodeDecodeError as err:
        raise DataError(f"{path} is not UTF-8 text ({err.reason} at byte {err.start})") from None
    except OSError as err:
        raise DataError(f"{path} cannot be read: {err.strerror}") from None


def run(args) -> int:
    from .g2p import G2P, G2PWarning, format_words

    texts = list(args.text)
    if args.file is not None:
        texts.extend(_read_lines(args.file))
    if not texts:
        raise DataError("no text given", hint='sparc-eval g2p "some text" or --file FILE')
    cache_dir = None
    if not args.no_cache:
        from ..cache import default_cache_dir

        cache_dir = args.cache_dir or default_cache_dir()
    g2p = G2P(cache_dir=cache_dir, strict_g2p_en=args.strict_g2p_en)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", G2PWarning)
        results = [g2p.words(text) for text in texts]
    for warning in caught:
        print(f"sparc-eval g2p: warning: {warning.message}", file=sys.stderr)
    try:
        g2p.save()
    except OSError as err:  # a read-only cache folder must not lose the answer
        print(f"sparc-eval g2p: warning: word cache not saved ({err})", file=sys.stderr)
    for words in results:
        print(json.dumps(words) if args.json else format_words(words))
    return 0
