#!/usr/bin/env python3
"""Train an attacker and evaluate how well it identifies (anonymized) speakers.

    python recipes/train_attacker.py hparams/phones.yaml [--data_folder=PATH] [--key=value ...]

The hparams name the attacker (``attacker:``, sparc_eval/attack/contract.py), its data, features
and training. Writes results.json, report.md, scores.txt, plots, the training log and checkpoints
under output_folder; the last line printed is the path of results.json. Re-running resumes from
the last checkpoint. On several processes or GPUs:
torchrun --nproc_per_node=N recipes/train_attacker.py ...
Same as ``sparc-eval train ...`` (:mod:`sparc_eval.attack.train`).
"""

import sys

from sparc_eval.attack.train import main

if __name__ == "__main__":
    sys.exit(main())
