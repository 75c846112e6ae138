#!/usr/bin/env python3
"""Anonymize a corpus with the anonymizer that an hparams file builds.

    python recipes/anonymize.py hparams/anon/mcadams.yaml \
        --input=../shared/data/librispeech_samples --out=results/anon/mcadams
    python recipes/anonymize.py hparams/anon/stt_tts.yaml --input=... --shard=2/8
    python recipes/anonymize.py hparams/anon/mcadams.yaml --input=... --wer

Same as ``sparc-eval anonymize HPARAMS ...`` (:mod:`sparc_eval.anonymization.cli`, the one front
door): writes ``<out>/manifest.jsonl``, 16 kHz wav files, ``anonymization.json``,
``failures.jsonl``, a copy of the hparams as ``hyperparams.yaml`` and, with ``wer``,
``wer.json``; prints ``key: value`` lines, the manifest last. Overrides are ``--key=value`` with
YAML values. The old keys ``input_folder``, ``output_folder`` and ``compute_wer`` work until
0.5.0, with a message naming the new one.
"""

import sys

from sparc_eval.anonymization.cli import main

if __name__ == "__main__":
    sys.exit(main(prog="anonymize.py"))
