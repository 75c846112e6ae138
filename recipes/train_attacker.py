#!/usr/bin/env python3
"""Train an ECAPA-TDNN attacker and evaluate how well it identifies (anonymized) speakers.

    python recipes/train_attacker.py hparams/phones.yaml [--data_folder=PATH] [--key=value ...]

Writes results.json, report.md, scores.txt, plots, the training log and checkpoints under
output_folder; the last line printed is the path of results.json. Re-running resumes from the
last checkpoint. On several GPUs: torchrun --nproc_per_node=N recipes/train_attacker.py ...
"""

import sys

from sparc_eval.errors import DataError
from sparc_eval.speechbrain_compat import import_speechbrain


def main(argv=None):
    sb = import_speechbrain()
    from attackers.run import parse_overrides, prepare, run_attack

    hparams_file, run_opts, overrides = sb.parse_arguments(sys.argv[1:] if argv is None else argv)
    try:
        overrides = parse_overrides(overrides)
        hparams, plan = prepare(hparams_file, overrides)
        sb.create_experiment_directory(experiment_directory=hparams["output_folder"],
                                       hyperparams_to_save=hparams_file, overrides=overrides)
        results = run_attack(hparams, run_opts, hparams_file=hparams_file, overrides=overrides, plan=plan)
    except DataError as err:
        print(f"train_attacker: error: {err}", file=sys.stderr)
        return 2
    print(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
