"""``sparc-eval anonymize``: anonymize a corpus into DIR/ (16 kHz wav files + manifest.jsonl).

sparc-eval anonymize --anonymizer mcadams --input data/librispeech_samples --out out/mcadams
sparc-eval anonymize --anonymizer mcadams --param alpha=0.7 --input ... --out ...
sparc-eval anonymize --anonymizer stt_tts --param tts=espeak --param tts_options.variant=f3 ...
sparc-eval anonymize --anonymizer stt_tts --input ... --out ... --shard 3/8      # job arrays
sparc-eval anonymize --merge --out ...                                          # after the shards
sparc-eval anonymize --anonymizer stt_tts --runner ray --num-gpus 0.25 ...      # a Ray cluster
sparc-eval anonymize ... --wer                                                  # DIR/wer.json
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from ..errors import DataError


def parse_params(pairs) -> dict:
    """``key=value`` strings into keyword arguments; values are YAML (``0.8``, ``[0.5, 0.9]``,
    ``true``); dotted keys nest (``asr_options.model=base``)."""
    params: dict = {}
    for pair in pairs or ():
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise DataError(f"--param {pair!r}: expected key=value")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        node = params
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise DataError(f"--param {pair!r}: {part!r} is already set to a value")
        node[parts[-1]] = value
    return params


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "anonymize",
        help="anonymize a corpus into DIR (16 kHz wav + manifest.jsonl)",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument(
        "--anonymizer",
        help="registered name (identity, mcadams, stt_tts, ...) or dotted class path",
    )
    p.add_argument(
        "--input",
        help="corpus: LibriSpeech tree, Kaldi dir, EdAcc release, manifest.jsonl or its folder",
    )
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="anonymizer keyword argument (YAML value; dotted keys nest); repeatable",
    )
    p.add_argument("--shard", default="0/1", help="i/n: do every n-th utterance from i (0-based)")
    p.add_argument(
        "--merge", action="store_true", help="only merge finished shards into DIR/manifest.jsonl"
    )
    p.add_argument("--runner", choices=("local", "ray"), default="local")
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument(
        "--num-workers",
        type=int,
        default=None,
        help="Ray actors (default: cluster CPUs / --num-cpus)",
    )
    p.add_argument("--num-cpus", type=float, default=1.0, help="CPUs per Ray actor")
    p.add_argument(
        "--num-gpus", type=float, default=0.0, help="GPUs per Ray actor (fractions allowed)"
    )
    p.add_argument(
        "--ray-address", default=None, help="Ray cluster address (default: a local instance)"
    )
    p.add_argument(
        "--limit", type=int, default=None, help="only the first N utterances (a quick try)"
    )
    p.add_argument(
        "--skip-missing", action="store_true", help="drop utterances whose audio file is missing"
    )
    p.add_argument(
        "--wer",
        action="store_true",
        help="after the run, WER of the output vs the reference text -> DIR/wer.json",
    )
    p.add_argument(
        "--wer-asr",
        default="faster-whisper",
        help="ASR backend for --wer (default faster-whisper tiny.en)",
    )
    p.add_argument(
        "--wer-param", action="append", default=[], metavar="KEY=VALUE", help="ASR option for --wer"
    )
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..utility.wer import summary
    from .runner import anonymize_corpus, merge_shards, parse_shard

    out = Path(args.out)
    if args.merge:
        shard = parse_shard(args.shard)
        manifest = merge_shards(out, shard[1] if shard[1] > 1 else None)
    else:
        if not args.anonymizer or not args.input:
            raise DataError("--anonymizer and --input are required (or --merge)")
        from ..data.corpora import load_corpus

        corpus = load_corpus(
            args.input, skip_missing=args.skip_missing, keep_unreadable=True
        )  # failures.jsonl
        manifest = anonymize_corpus(
            corpus,
            args.anonymizer,
            out,
            anonymizer_options=parse_params(args.param),
            shard=args.shard,
            progress=not args.no_progress,
            runner=args.runner,
            batch_size=args.batch_size,
            num_workers=args.num_workers,
            num_cpus=args.num_cpus,
            num_gpus=args.num_gpus,
            ray_address=args.ray_address,
            limit=args.limit,
        )
    report = manifest.report
    print(f"utterances: {report['utterances']}")
    print(f"finished: {report['finished']}")
    print(f"processed: {report['processed']}")
    print(f"cached: {report['cached']}")
    print(f"failed: {report['failed']}")
    if report.get("rtf") is not None:
        print(f"rtf: {report['rtf']:.4f}")
    shard = parse_shard(args.shard)
    suffix = "" if args.merge or shard[1] == 1 else ".shard-{}-of-{}".format(*shard)
    if report["failed"]:
        print(f"failures: {out / ('failures' + suffix + '.jsonl')}")
    merged = args.merge or shard[1] == 1
    if not merged and (out / "anonymization.json").is_file():
        total = json.loads((out / "anonymization.json").read_text(encoding="utf-8"))
        merged = total.get("shards") == shard[1] and total.get("settings_hash") == report.get(
            "settings_hash"
        )
    if args.wer:
        if not merged:
            print("wer: skipped until all shards are merged (run --merge --wer)")
        else:
            from ..atomic import write_json
            from ..data.corpora import load_manifest
            from ..speech.asr import make_asr
            from ..utility.wer import anonymized_corpus_wer

            asr = make_asr(args.wer_asr, **parse_params(args.wer_param))
            result = anonymized_corpus_wer(load_manifest(out), asr, progress=not args.no_progress)
            write_json(out / "wer.json", result)
            print(f"wer: {summary(result['anonymized'])}")
            if "anonymizer_asr" in result:
                print(f"anonymizer asr wer: {summary(result['anonymizer_asr'])}")
    print(f"manifest: {out / ('manifest.jsonl' if merged else 'manifest' + suffix + '.jsonl')}")
    return 0 if not report["failed"] else 1
