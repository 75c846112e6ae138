#!/usr/bin/env python3
"""Compare content leakage across corpora: which corpus leaks more speaker content, and why.

    python recipes/compare_leakage.py hparams/leakage.yaml [--key=value ...]

Runs every attacker of the hparams file (SPARC text scorers; ECAPA-TDNN on phones, phone
durations or mel spectrograms) on every corpus, with and without shared (scripted) text, and
writes under output_folder: results.json, report.md, eer_by_corpus.png,
distinctiveness_<condition>.png, segments_<condition>.png and one folder per cell
(cells/<corpus>/<attacker>/<condition>/). The last line printed is the path of results.json.
Interrupted runs resume: finished cells are reused and ECAPA training resumes from its
checkpoints.
"""

import sys

from sparc_eval.jobs.leakage.cli import main

if __name__ == "__main__":
    sys.exit(main())
