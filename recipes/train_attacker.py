#!/usr/bin/env python3
"""Train an attacker and evaluate how well it identifies (anonymized) speakers.

    python recipes/train_attacker.py hparams/phones.yaml [--data_folder=PATH] [--key=value ...]

The hparams name the attacker (``attacker:``, sparc_eval/attack/), its data, features and
training. Writes results.json, report.md, scores.txt, plots, the training log and checkpoints
under output_folder; the last line printed is the path of results.json. Re-running resumes from
the last checkpoint. On several processes or GPUs:
torchrun --nproc_per_node=N recipes/train_attacker.py ...
"""

import sys

from sparc_eval.errors import DataError
from sparc_eval.speechbrain_compat import import_speechbrain


def main(argv=None):
    sb = import_speechbrain()
    from sparc_eval.attack import load_attack, prepare_attack, run_attack
    from sparc_eval.attack.evaluation import EvaluationSettings
    from sparc_eval.data.plan import DataSettings
    from sparc_eval.hparams import parse_overrides

    hparams_file, run_opts, overrides = sb.parse_arguments(sys.argv[1:] if argv is None else argv)
    try:
        overrides = parse_overrides(overrides)
        sb.utils.distributed.ddp_init_group(run_opts)
        loaded = {}

        def load():
            loaded["attack"] = load_attack(hparams_file, overrides, run_opts)

        def prepare():  # data preparation (the demo corpus, manifests, features) once, on the main process
            load()
            _, plan, attacker = loaded["attack"]
            prepare_attack(attacker, plan)

        sb.utils.distributed.run_on_main(prepare, post_func=load)
        hparams, plan, attacker = loaded["attack"]
        sb.create_experiment_directory(
            experiment_directory=hparams["output_folder"],
            hyperparams_to_save=hparams_file,
            overrides=overrides,
        )
        result = run_attack(
            attacker,
            plan,
            hparams.get("results_folder") or hparams["output_folder"],
            settings=EvaluationSettings.from_hparams(hparams),
            data=DataSettings.from_hparams(hparams),
            run_info={
                "hparams": str(hparams_file),
                "overrides": overrides or None,
                "seed": hparams.get("seed"),
            },
            plots=hparams.get("plots", True),
            is_main=sb.utils.distributed.if_main_process(),
        )
    except DataError as err:
        print(f"train_attacker: error: {err}", file=sys.stderr)
        return 2
    if result.results_path is not None:
        print(result.results_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
