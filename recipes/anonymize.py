#!/usr/bin/env python3
"""Anonymize a corpus with the anonymizer that an hparams file builds.

    python recipes/anonymize.py hparams/anon/mcadams.yaml \
        --input_folder=../shared/data/librispeech_samples --output_folder=results/anon/mcadams
    python recipes/anonymize.py hparams/anon/stt_tts.yaml --input_folder=... --shard=2/8
    python recipes/anonymize.py hparams/anon/mcadams.yaml --input_folder=... --compute_wer=True

Writes ``<output_folder>/manifest.jsonl``, 16 kHz wav files, ``anonymization.json``,
``failures.jsonl``, a copy of the hparams as ``hyperparams.yaml`` and, with ``compute_wer``,
``wer.json``; prints the manifest path last. Overrides are ``--key=value`` (or ``--key value``)
for top-level keys of the YAML file; values are YAML.

``anonymizer`` is an object (``!new:anonymizers.mcadams.McAdams``) or a registered name / dotted
path (``anonymizer: mcadams``) built with the keyword arguments under ``anonymizer_options``.
"""

import sys
from pathlib import Path

from sparc_eval.anonymization.runner import anonymize_corpus
from sparc_eval.atomic import write_json, write_text
from sparc_eval.data.corpora import load_corpus
from sparc_eval.errors import DataError
from sparc_eval.hparams import load_hparams, parse_arguments
from sparc_eval.utility.wer import anonymized_corpus_wer, summary


def main(argv=None) -> int:
    hparams_file, overrides = parse_arguments(sys.argv[1:] if argv is None else argv)
    hparams = load_hparams(hparams_file, overrides)

    out = Path(hparams["output_folder"])
    manifest = anonymize_corpus(
        load_corpus(
            hparams["input_folder"],
            skip_missing=hparams.get("skip_missing", False),
            keep_unreadable=True,
        ),
        hparams["anonymizer"],
        out,
        anonymizer_options=hparams.get("anonymizer_options"),
        shard=str(hparams.get("shard", "0/1")),
        runner=hparams.get("runner", "local"),
        batch_size=hparams.get("batch_size", 1),
        num_workers=hparams.get("num_workers"),
        num_gpus=hparams.get("num_gpus", 0.0),
        progress=hparams.get("progress", True),
    )
    with open(hparams_file, encoding="utf-8") as fin:
        text = fin.read()
    shown = "".join(f"\n# {key}: {value}" for key, value in overrides.items())
    write_text(out / "hyperparams.yaml", text + ("\n# overrides" + shown if overrides else ""))
    report = manifest.report
    print(
        f"finished {report['finished']} of {report['utterances']} utterances "
        f"({report['processed']} now, {report['cached']} cached, {report['failed']} failed); rtf {report['rtf']}"
    )
    complete_manifest = out / "manifest.jsonl"
    if hparams.get("compute_wer", False):
        if report["shard"][1] > 1 and not complete_manifest.is_file():
            print("wer: skipped until every shard has finished")
        else:
            from sparc_eval.data.corpora import load_manifest

            result = anonymized_corpus_wer(
                load_manifest(out), hparams["wer_asr"], progress=hparams.get("progress", True)
            )
            write_json(out / "wer.json", result)
            print(f"wer: {summary(result['anonymized'])}")
    print(
        complete_manifest
        if report["shard"][1] == 1 or complete_manifest.is_file()
        else manifest.name
    )
    return 0 if not report["failed"] else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except DataError as err:
        print(f"anonymize.py: error: {err}", file=sys.stderr)
        sys.exit(2)
