"""ECAPA training throughput: the attacker recipe against a bare PyTorch loop, and what
LibriSpeech train-clean-360 would cost on this machine.

    python benchmarks/bench_training.py [--epochs 3] [--model_size cpu] [--threads 2] [--repeats 3]
                                       [--estimate_epochs 15]

- recipe: ``sparc_eval.attack.load_attack`` + ``EcapaAttacker.fit`` (SpeechBrain's Brain.fit:
  data loader, AAM loss, optimiser, LR annealing, a validation pass and a checkpoint per epoch)
  on the demo corpus's phone features, computed and cached first;
- baseline: a bare PyTorch loop over the same model (same seed, same initial weights), the same
  datasets and loaders, features already in memory: forward, loss, backward, step, and the same
  validation pass; no checkpoints, no logging.

Each runs ``--repeats`` times, alternated; the fastest of each counts. Prints training steps per
second of each and their ratio (the recipe's overhead; goal >= 0.9),
the feature cache's read rate and the G2P rate (features of a new corpus), and from them an
estimate of one training run on train-clean-360 (104,014 utterances, 921 speakers; about 160
phones per utterance, cropped to ``chunk_phones``) for this model size.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
LS360_UTTERANCES = 104_014
LS360_PHONES_PER_UTTERANCE = 160  # 12.3 s on average at about 13 phones a second


def recipe(folder: Path, args):
    """(hparams, plan, attacker) of the phone attacker on the demo corpus, features cached."""
    from sparc_eval.attack import load_attack

    overrides = {
        "data_folder": "demo:reading",
        "output_folder": str(folder),
        "number_of_epochs": args.epochs,
        "model_size": args.model_size,
        "progress": False,
        "plots": False,
        "num_threads": args.threads,
    }
    hp, plan, attacker = load_attack(
        REPO / "hparams/phones.yaml", overrides, run_opts={"noprogressbar": True}
    )
    attacker.prepare(plan)
    return hp, plan, attacker


def datasets(hp, attacker, train):
    """The recipe's own training and validation datasets (same split, same crop)."""
    from attackers.data import hold_out, make_dataset

    feats = attacker._features(train)
    index = {s: i for i, s in enumerate(train.speakers())}
    train_utts, valid_utts = hold_out(
        list(train), fraction=attacker.training.valid_fraction, seed=attacker.training.seed
    )
    kind, chunk = attacker.features.feature_type, attacker.training.chunk
    return (
        make_dataset(
            train_utts, feature_type=kind, features=feats, speaker_index=index, chunk=chunk
        ),
        make_dataset(valid_utts, feature_type=kind, features=feats, speaker_index=index, sort=True),
        feats,
    )


def bare_loop(hp, attacker, train_set, valid_set, epochs: int) -> float:
    """Seconds of a plain PyTorch training loop over the same batches."""
    import torch
    from speechbrain.dataio.dataloader import make_dataloader

    from attackers.ecapa import pad_to_min_length

    model, classifier = hp["embedding_model"], hp["classifier"]
    optimiser = hp["opt_class"](list(model.parameters()) + list(classifier.parameters()))
    batch = attacker.training.batch_size
    train_loader = make_dataloader(train_set, batch_size=batch, shuffle=True)
    valid_loader = make_dataloader(valid_set, batch_size=attacker.training.eval_batch_size)
    start = time.perf_counter()
    for _ in range(epochs):
        model.train(), classifier.train()
        for b in train_loader:
            feats, lens = pad_to_min_length(*b.inputs, hp["min_frames"])
            loss = hp["compute_cost"](classifier(model(feats, lens)), b.speaker_index[0])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        model.eval(), classifier.eval()
        with torch.no_grad():
            for b in valid_loader:
                feats, lens = pad_to_min_length(*b.inputs, hp["min_frames"])
                hp["compute_cost"](classifier(model(feats, lens)), b.speaker_index[0])
    return time.perf_counter() - start


def feature_rates(attacker, train) -> tuple:
    """(cached reads per second, uncached G2P utterances per second)."""
    from sparc_eval.phones.features import PhoneFeatures

    start = time.perf_counter()
    attacker._features(train)
    cached = len(train) / (time.perf_counter() - start)
    sample = list(train)[:200]
    fresh = PhoneFeatures(source="transcript", use_cache=False)
    start = time.perf_counter()
    for u in sample:
        fresh(u)
    return cached, len(sample) / (time.perf_counter() - start)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--model_size", default="cpu")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--repeats", type=int, default=3, help="alternated runs of each; the fastest counts"
    )
    p.add_argument(
        "--estimate_epochs",
        type=int,
        default=15,
        help="epochs of the estimate (phones.yaml's default)",
    )
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        hp0, plan0, attacker0 = recipe(
            Path(tmp) / "warm", args
        )  # torch's first steps are slow: warm up once
        bare_loop(hp0, attacker0, *datasets(hp0, attacker0, plan0.train)[:2], 1)
        recipe_s, bare_s = [], []
        for r in range(args.repeats):  # alternated, so that the machine's load hits both alike
            hp, plan, attacker = recipe(Path(tmp) / f"recipe{r}", args)
            attacker.fit(plan.train)
            recipe_s.append(attacker.timings_s["training"])
            hp2, plan2, attacker2 = recipe(
                Path(tmp) / f"bare{r}", args
            )  # same seed: the same initial model
            train_set, valid_set, feats = datasets(hp2, attacker2, plan2.train)
            bare_s.append(bare_loop(hp2, attacker2, train_set, valid_set, args.epochs))
        cached, g2p = feature_rates(attacker2, plan2.train)
    recipe_s, bare_s = min(recipe_s), min(bare_s)
    steps = args.epochs * math.ceil(len(train_set) / attacker.training.batch_size)
    report(args, steps, recipe_s, bare_s, cached, g2p, feats, attacker)
    return 0


def report(args, steps, recipe_s, bare_s, cached, g2p, feats, attacker) -> None:
    chunk = attacker.training.chunk or LS360_PHONES_PER_UTTERANCE
    demo_len = float(np.mean([min(m.shape[0], chunk) for m in feats.values()]))
    ratio = bare_s / recipe_s
    print(
        f"model_size {args.model_size}, {args.threads} threads, {args.epochs} epochs, {steps} steps "
        f"of batch {attacker.training.batch_size} (demo: {demo_len:.0f} phones per item after the crop)"
    )
    print(f"recipe  {steps / recipe_s:7.2f} steps/s ({recipe_s:.1f} s)")
    print(f"bare    {steps / bare_s:7.2f} steps/s ({bare_s:.1f} s)")
    print(f"ratio recipe/bare: {ratio:.2f} (goal >= 0.9)")
    print(
        f"feature cache: {cached:,.0f} utterances/s read; G2P of new text: {g2p:,.0f} utterances/s"
    )
    ls_len = min(chunk, LS360_PHONES_PER_UTTERANCE)
    step_s = recipe_s / steps * ls_len / demo_len  # a step's cost grows with the phones per item
    per_epoch = math.ceil(
        LS360_UTTERANCES * (1 - attacker.training.valid_fraction) / attacker.training.batch_size
    )
    epochs = args.estimate_epochs
    hours = per_epoch * epochs * step_s / 3600
    print(
        f"train-clean-360 estimate: {per_epoch:,} steps/epoch x {epochs} epochs x {step_s:.3f} s = {hours:.1f} h "
        f"training; features {LS360_UTTERANCES / g2p / 60:.0f} min of G2P once, "
        f"{LS360_UTTERANCES / cached:.0f} s to read from the cache per run"
    )


if __name__ == "__main__":
    raise SystemExit(main())
