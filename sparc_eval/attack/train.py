"""Training an attacker and evaluating it: ``sparc-eval train`` and ``recipes/train_attacker.py``
are this one implementation.

    sparc-eval train hparams/phones.yaml [--data_folder=PATH] [--key=value ...]
    torchrun --nproc_per_node=N recipes/train_attacker.py hparams/phones.yaml ...

The hparams name the attacker (``attacker:``, :mod:`sparc_eval.attack.contract`), its data,
features and training; SpeechBrain parses the command line (its ``--key=value`` overrides and
run options such as ``--device``). Writes results.json, report.md, scores.txt, plots, the
training log and checkpoints under output_folder; the last line printed is the path of
results.json. Re-running resumes from the last checkpoint.
"""

from __future__ import annotations

import sys

PRESET_KEYS = {"vpc_preset", "attacker_hparams", "attacker_overrides", "model_size"}
# preset keys passed on to the attacker when its file has them (ECAPA sizes mean nothing to others)
PASSED_IF_DEFINED = ("model_size",)


def attacker_file(hparams_file, overrides: dict) -> tuple:
    """(the attacker's hparams file, its overrides): the file itself, or for a VoicePrivacy preset
    (a file with ``vpc_preset``, hparams/vpc2024.yaml) the attacker file it names
    (``attacker_hparams``) with ``attacker_overrides`` and the preset's data and evaluation keys."""
    from ..errors import DataError
    from ..hparams import HparamsFile
    from .run import LIBRARY_KEYS

    preset = HparamsFile(hparams_file)
    if "vpc_preset" not in preset.keys:
        return hparams_file, overrides
    hp = preset.load(overrides, library_keys=LIBRARY_KEYS | PRESET_KEYS)
    passed = {k: hp[k] for k in LIBRARY_KEYS if k in hp}
    own = dict(hp.get("attacker_overrides") or {})
    defined = HparamsFile(hp["attacker_hparams"]).keys
    passed.update({k: hp[k] for k in PASSED_IF_DEFINED if hp.get(k) is not None and k in defined})
    unknown = sorted(set(own) - defined - LIBRARY_KEYS)
    if unknown:
        raise DataError(
            f"attacker_overrides sets {unknown}, which {hp['attacker_hparams']} does not define",
            path=hparams_file,
            hint="give only keys of the attacker's own hparams file",
        )
    return hp["attacker_hparams"], {**passed, **own}


def _preset_settings(hparams_file, overrides: dict) -> dict:
    """A VoicePrivacy preset file's keys with the overrides (empty for an attacker's own file):
    what decides whether the run covers several languages."""
    from ..hparams import HparamsFile
    from .run import LIBRARY_KEYS

    preset = HparamsFile(hparams_file)
    if "vpc_preset" not in preset.keys:
        return {}
    return preset.load(overrides, library_keys=LIBRARY_KEYS | PRESET_KEYS)


def train_and_evaluate(hparams_file, overrides: dict, run_opts: dict, sb):
    """Data prepared once on the main process, the attacker trained on every rank, scored and
    evaluated on the main one: the run's AttackResult."""
    import torch

    from ..data.plan import DataSettings
    from .evaluation import EvaluationSettings
    from .run import load_attack, prepare_attack, run_attack

    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        sb.utils.distributed.ddp_init_group(run_opts)  # once: a multilingual run comes back here
    loaded = {}
    attack_hparams, attack_overrides = attacker_file(hparams_file, overrides)

    def load():
        loaded["attack"] = load_attack(attack_hparams, attack_overrides, run_opts)

    def prepare():  # data preparation (the demo corpus, manifests, features) on the main process
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
    return run_attack(
        attacker,
        plan,
        hparams.get("results_folder") or hparams["output_folder"],
        settings=EvaluationSettings.from_hparams(hparams),
        data=DataSettings.from_hparams(hparams),
        run_info={
            "hparams": str(hparams_file),
            "overrides": overrides or None,
            "seed": hparams.get("seed"),
            **({"attacker_hparams": str(attack_hparams)} if attack_hparams != hparams_file else {}),
        },
        plots=hparams.get("plots", True),
        is_main=sb.utils.distributed.if_main_process(),
    )


def main(argv=None, *, prog: str = "train_attacker") -> int:
    from ..hparams import parse_overrides, reporting_data_errors
    from ..logs import cli_logging
    from ..speechbrain_compat import import_speechbrain

    cli_logging()
    sb = import_speechbrain()
    argv = list(sys.argv[1:] if argv is None else argv)
    hparams_file, run_opts, overrides = sb.parse_arguments(argv)

    def call():
        from .languages import each_language

        given = parse_overrides(overrides)

        def run_one(language, output_folder):
            extra = {"language": language, "output_folder": output_folder} if language else {}
            return train_and_evaluate(hparams_file, {**given, **extra}, run_opts, sb).results_path

        path = each_language(_preset_settings(hparams_file, given), run_one)
        if path is not None:  # None: a DDP rank other than the main one
            print(path)
        return 0

    return reporting_data_errors(prog, call)


def register(subparsers) -> None:
    from ..hparams import register_passthrough

    register_passthrough(
        subparsers,
        "train",
        main,
        help="train an attacker and evaluate it (recipes/train_attacker.py)",
        description=__doc__.split("\n\n")[0],
    )
