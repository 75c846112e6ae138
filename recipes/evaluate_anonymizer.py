#!/usr/bin/env python3
"""Evaluate an anonymizer in one command: how private, how useful, better than another?

    python recipes/evaluate_anonymizer.py hparams/evaluate.yaml --anonymizer=mcadams [--key=value ...]
    python recipes/evaluate_anonymizer.py hparams/evaluate.yaml --anonymizer=[mcadams,stt_tts]

Anonymizes the evaluation corpus's enrollment and trial utterances (and the training data for
semi-informed attackers) once, runs every attacker on original speech and in every scenario,
reads each audio attacker against the content the anonymized speech still carries, measures
utility, compares anonymizers pairwise, and writes under output_folder: card.md, results.json,
eer_by_attacker.png, det.png, per_speaker.png, anonymized/<anonymizer>/ and one folder per cell
(cells/<original|anonymizer>/<attacker>/<scenario>/). The last line printed is the path of
results.json. A re-run reuses the anonymized speech, the trained models and finished cells.
"""

import sys

from sparc_eval.jobs.card.cli import main

if __name__ == "__main__":
    sys.exit(main())
