#!/usr/bin/env python3
"""SPARC transcript-only evaluation: speaker and attribute verification from the words alone.

    python recipes/evaluate_text.py hparams/text/tfidf.yaml \
        --data_folder=../shared/data/edacc/spane_lists/edacc-test.txt --output_folder=results/text/edacc/tfidf

Builds trials (probes of P words, L enrollment utterances, easy/hard positives and negatives,
same/different topic) for every task and (P, L) setting, scores them with the scorer of the
hparams file, and writes results.json, report.md, roc_<task>.png, trials/ and scores/ under
output_folder. The last line printed is the path of results.json. Overrides are
``--key=value`` with YAML values (``--P=[50] --L=[5] --tasks=[speaker]``), as in SpeechBrain.
"""

import sys

from sparc_eval.jobs.text.cli import main

if __name__ == "__main__":
    sys.exit(main())
