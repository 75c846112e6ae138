"""Anonymizing a corpus from the command line: ``sparc-eval anonymize`` and
``recipes/anonymize.py`` are this one front door, with the same keys.

    sparc-eval anonymize --anonymizer mcadams --input data/librispeech_samples --out out/mcadams
    sparc-eval anonymize --anonymizer=mcadams --anonymizer_options="{alpha: 0.7}" --input ... --out ...
    sparc-eval anonymize hparams/anon/stt_tts.yaml --input=... --out=... --shard=3/8   # job arrays
    sparc-eval anonymize --merge --out ...                                            # after the shards
    sparc-eval anonymize ... --runner=ray --num_gpus=0.25                             # a Ray cluster
    sparc-eval anonymize ... --wer                                                    # DIR/wer.json
    python recipes/anonymize.py hparams/anon/mcadams.yaml --input=... --out=...       # the same

An hparams file (optional) builds the anonymizer (``anonymizer: !new:...``); without one,
``--anonymizer`` names it (registered name or dotted path) with ``--anonymizer_options``. Writes
DIR/manifest.jsonl and 16 kHz wav files, anonymization.json, failures.jsonl, a copy of the
hparams as hyperparams.yaml and, with ``--wer``, wer.json; prints ``key: value`` lines, the
manifest last.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..errors import DataError
from ..hparams import (
    HparamsFile,
    apply_renamed,
    hparams_keys,
    parse_arguments,
    parse_value,
    read_fields,
    register_passthrough,
    reporting_data_errors,
)
from .options import RunnerOptions


@dataclass(frozen=True)
class AnonymizationSettings:
    """What an anonymization run takes; each default lives here."""

    anonymizer: object = None  # an anonymizer object, a registered name or a dotted path
    anonymizer_options: dict = field(default_factory=dict)  # its keyword arguments (a name/path)
    input: Optional[str] = None  # any corpus load_corpus reads
    out: Optional[str] = None  # the output folder
    shard: str = "0/1"  # i/n: every n-th utterance from i (0-based)
    merge: bool = False  # only merge finished shards into out/manifest.jsonl
    run: RunnerOptions = RunnerOptions()  # runner, batch_size, num_workers, num_cpus, num_gpus,
    # ray_address, progress: the hparams keys of the same names
    limit: Optional[int] = None  # only the first N utterances (a quick try)
    skip_missing: bool = False  # drop utterances whose audio file is missing
    wer: bool = False  # after the run, WER of the output vs the reference text -> out/wer.json
    wer_asr: object = "faster-whisper"  # ASR backend name or object for the WER
    wer_asr_options: dict = field(default_factory=dict)

    @classmethod
    def keys(cls) -> frozenset:
        return frozenset({*hparams_keys(cls), *hparams_keys(RunnerOptions)})  # run: nested

    @classmethod
    def from_hparams(cls, hp: dict) -> "AnonymizationSettings":
        given = {k: hp[k] for k in hparams_keys(cls) if hp.get(k) is not None}
        for key in ("input", "out", "shard"):
            if key in given:
                given[key] = str(given[key])
        if hp.get("ray_address") is not None:  # an address YAML reads as a number stays a string
            hp = {**hp, "ray_address": str(hp["ray_address"])}
        return cls(run=RunnerOptions(**read_fields(RunnerOptions, hp)), **given)


def _pairs(pairs, into: dict) -> dict:
    """``key=value`` strings (YAML values, dotted keys nest) merged into ``into``."""
    out = dict(into or {})
    for pair in pairs if isinstance(pairs, list) else [pairs]:
        key, sep, raw = str(pair).partition("=")
        if not sep or not key.strip():
            raise DataError(f"{pair!r}: expected key=value")
        node, parts = out, key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise DataError(f"{pair!r}: {part!r} is already set to a value")
        node[parts[-1]] = parse_value(raw.strip()) if raw.strip() else ""
    return out


def parse_params(pairs) -> dict:
    """``key=value`` strings as keyword arguments (the old ``--param`` spelling)."""
    return _pairs(list(pairs or ()), {})


# old spellings (sparc-eval anonymize's dashed flags, the recipe's folder keys), until 0.5.0
RENAMED = {
    "input_folder": "input",
    "output_folder": "out",
    "compute_wer": "wer",
    "batch-size": "batch_size",
    "num-workers": "num_workers",
    "num-cpus": "num_cpus",
    "num-gpus": "num_gpus",
    "ray-address": "ray_address",
    "skip-missing": "skip_missing",
    "wer-asr": "wer_asr",
    "no-progress": ("progress", lambda value, _: not value),
    "param": ("anonymizer_options", lambda v, o: _pairs(v, o.get("anonymizer_options"))),
    "wer-param": ("wer_asr_options", lambda v, o: _pairs(v, o.get("wer_asr_options"))),
}


def read_settings(argv, prog: str) -> tuple:
    """(settings, hparams file or None, overrides) from ``[HPARAMS] --key=value ...``."""
    hparams_file, overrides = parse_arguments(
        argv, file_required=False, repeatable=("param", "wer-param")
    )
    overrides = apply_renamed(overrides, RENAMED, prog=prog)
    if hparams_file is None:
        unknown = sorted(set(overrides) - AnonymizationSettings.keys())
        if unknown:
            raise DataError(
                f"unknown option(s) {', '.join('--' + k for k in unknown)}",
                hint=f"options: {', '.join('--' + k for k in sorted(AnonymizationSettings.keys()))}",
            )
        hp = overrides
    else:
        hp = HparamsFile(hparams_file).load(overrides, library_keys=AnonymizationSettings.keys())
        hp = apply_renamed(hp, {k: v for k, v in RENAMED.items() if "-" not in k}, prog=prog)
    settings = AnonymizationSettings.from_hparams(hp)
    if not settings.out:
        raise DataError("--out is required (the output folder)")
    if not settings.merge and (settings.anonymizer is None or not settings.input):
        raise DataError("--anonymizer and --input are required (or --merge)")
    return settings, hparams_file, overrides


def anonymize(settings: AnonymizationSettings):
    """The run itself (or the merge of finished shards): the output manifest."""
    from ..data.corpora import load_corpus
    from .runner import anonymize_corpus, merge_shards, parse_shard

    out = Path(settings.out)
    if settings.merge:
        n = parse_shard(settings.shard)[1]
        return merge_shards(out, n if n > 1 else None)
    corpus = load_corpus(settings.input, skip_missing=settings.skip_missing, keep_unreadable=True)
    return anonymize_corpus(
        corpus,
        settings.anonymizer,
        out,
        anonymizer_options=settings.anonymizer_options,
        shard=settings.shard,
        options=settings.run,
        limit=settings.limit,
    )


def _merged(settings: AnonymizationSettings, report: dict) -> bool:
    """Whether out/manifest.jsonl now holds every shard of this run."""
    from .runner import parse_shard

    n = parse_shard(settings.shard)[1]
    if settings.merge or n == 1:
        return True
    path = Path(settings.out) / "anonymization.json"
    if not path.is_file():
        return False
    total = json.loads(path.read_text(encoding="utf-8"))
    return total.get("shards") == n and total.get("settings_hash") == report.get("settings_hash")


def write_wer(settings: AnonymizationSettings) -> None:
    """WER of the anonymized corpus against its reference text -> out/wer.json."""
    from ..atomic import write_json
    from ..data.corpora import load_manifest
    from ..speech.asr import make_asr
    from ..utility.wer import anonymized_corpus_wer, summary

    out = Path(settings.out)
    asr = make_asr(settings.wer_asr, **settings.wer_asr_options)
    result = anonymized_corpus_wer(load_manifest(out), asr, progress=settings.run.progress)
    write_json(out / "wer.json", result)
    print(f"wer: {summary(result['anonymized'])}")
    if "anonymizer_asr" in result:
        print(f"anonymizer asr wer: {summary(result['anonymizer_asr'])}")


def print_report(settings: AnonymizationSettings, report: dict) -> tuple:
    """The run's counts as ``key: value`` lines; (merged, file suffix of this shard)."""
    from .runner import parse_shard

    for key in ("utterances", "finished", "processed", "cached", "failed"):
        print(f"{key}: {report[key]}")
    if report.get("rtf") is not None:
        print(f"rtf: {report['rtf']:.4f}")
    shard = parse_shard(settings.shard)
    merged = _merged(settings, report)
    suffix = "" if settings.merge or shard[1] == 1 else ".shard-{}-of-{}".format(*shard)
    if report["failed"]:
        print(f"failures: {Path(settings.out) / ('failures' + suffix + '.jsonl')}")
    return merged, suffix


def run(settings: AnonymizationSettings, hparams_file=None, overrides=None) -> int:
    """Anonymize (or merge), print the report, the WER if asked, and the manifest last."""
    from ..atomic import write_text

    out = Path(settings.out)
    report = anonymize(settings).report
    if hparams_file is not None:
        shown = "".join(f"\n# {k}: {v}" for k, v in (overrides or {}).items())
        text = HparamsFile(hparams_file).text
        write_text(out / "hyperparams.yaml", text + ("\n# overrides" + shown if shown else ""))
    merged, suffix = print_report(settings, report)
    if settings.wer and not merged:
        print("wer: skipped until all shards are merged (run --merge --wer)")
    elif settings.wer:
        write_wer(settings)
    print(f"manifest: {out / ('manifest.jsonl' if merged else 'manifest' + suffix + '.jsonl')}")
    return 0 if not report["failed"] else 1


def main(argv=None, *, prog: str = "sparc-eval anonymize") -> int:
    """Both front doors: ``sparc-eval anonymize ...`` and ``python recipes/anonymize.py ...``."""
    from ..logs import cli_logging

    cli_logging()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    return reporting_data_errors(prog, lambda: run(*read_settings(argv, prog)))


def register(subparsers) -> None:
    register_passthrough(
        subparsers,
        "anonymize",
        main,
        help="anonymize a corpus into DIR (16 kHz wav + manifest.jsonl)",
        description=__doc__.split("\n\n")[0],
    )
