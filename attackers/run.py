"""Run an ECAPA-TDNN attacker end to end: data, features, training, embeddings, scores, metrics.

Both ``recipes/train_attacker.py`` and the leakage comparison call :func:`run_attack` with the
loaded hparams. Attack scenarios (VoicePrivacy Challenge):

=============== ========================= ===================== =====================
scenario        attacker trained on       enrollment            trials
=============== ========================= ===================== =====================
original        original speech           original              original
ignorant        original speech           original              anonymized
lazy-informed   original speech           anonymized            anonymized
semi-informed   anonymized training data  anonymized            anonymized
=============== ========================= ===================== =====================
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sparc_eval.atomic import write_json
from sparc_eval.corpora.specs import load_spec, load_specs
from sparc_eval.errors import DataError
from sparc_eval.manifest import Manifest
from sparc_eval.provenance import bootstrap_deviation, environment
from sparc_eval.scoring import score_pairs, write_score_file
from sparc_eval.splits import Split, make_split, speaker_halves
from sparc_eval.words import mark_anonymized, reference_text_deviation

from .model_size import size_deviation, size_overrides

SCENARIOS = ("original", "ignorant", "lazy-informed", "semi-informed")
FEATURE_TYPES = ("mel", "phones", "phone_durations")
# hparams a resumed run may change without invalidating its checkpoints: more epochs, and
# everything about evaluation (a trained attacker is evaluated on other corpora this way)
RESUMABLE_CHANGES = {"number_of_epochs", "progress", "plots", "num_workers", "num_threads", "cache_folder"}
# keys a fingerprint written before they existed lacks, with the value the run then had
KEYS_ADDED_LATER = {"model_size": "cpu", "attention_channels": 64, "anon_keeps_words": None, "phone_text": "reference"}
EVAL_KEYS = {"eval_folder", "enrolls_dir", "trials_dirs", "enroll_list", "trial_list", "split_seed", "n_enroll",
             "max_per_speaker", "min_duration", "max_duration", "anon_eval_folder", "anonymizer_name",
             "results_folder", "n_boot", "bootstrap_unit", "accent_grouping", "eval_batch_size", "scenario"}


# --- corpora -------------------------------------------------------------------------------------

def load_anonymized(specs, hp: dict, *, cache_folder) -> Manifest:
    """An anonymized corpus, each utterance marked as such (what its words are follows
    :mod:`sparc_eval.words`; ``anon_keeps_words`` declares it for corpora made by other tools)."""
    return mark_anonymized(load_specs(specs, cache_folder=cache_folder), name=hp.get("anonymizer_name"),
                           keeps_words=hp.get("anon_keeps_words"))


@dataclass
class DataPlan:
    train: Manifest       # what the attacker trains on
    enroll: Manifest      # where enrollment utterances come from
    trials: Manifest      # where trial utterances come from
    split: Split
    eval_original: Manifest


def plan_data(hp: dict) -> DataPlan:
    scenario = hp.get("scenario", "original")
    if scenario not in SCENARIOS:
        raise DataError(f"scenario {scenario!r} is not one of {', '.join(SCENARIOS)}")
    cache = hp["cache_folder"]
    train = load_specs(hp.get("train_folders") or hp["data_folder"], cache_folder=cache)
    if hp.get("eval_folder"):
        evaluation = load_spec(hp["eval_folder"], cache_folder=cache)
    else:
        train, evaluation = speaker_halves(train, eval_fraction=hp.get("eval_speaker_fraction", 0.5),
                                           seed=hp.get("split_seed", 0))
    overlap = set(train.speakers()) & set(evaluation.speakers())
    if overlap and not hp.get("allow_speaker_overlap", False):
        raise DataError(f"{len(overlap)} speakers are in both training and evaluation data, e.g. {sorted(overlap)[:3]}",
                        hint="attackers are evaluated on unseen speakers; set allow_speaker_overlap: True to override")
    anonymized, missing = None, []
    if scenario != "original":
        if not hp.get("anon_eval_folder"):
            raise DataError(f"scenario {scenario} needs anon_eval_folder (the anonymized evaluation corpus)")
        anonymized = load_anonymized(hp["anon_eval_folder"], hp, cache_folder=cache)
        missing = sorted(set(evaluation.by_id()) - set(anonymized.by_id()))
        if len(missing) > 0.05 * len(evaluation):
            raise DataError(f"{len(missing)} of {len(evaluation)} evaluation utterances are missing from the "
                            f"anonymized corpus, e.g. {missing[:3]}", path=hp["anon_eval_folder"],
                            hint="anonymize the whole evaluation corpus (failures are listed in its failures.jsonl)")
        if missing:  # a few failures of the anonymizer: evaluate without them, and say so
            warnings.warn(f"{len(missing)} evaluation utterances are missing from the anonymized corpus "
                          f"(e.g. {missing[:3]}); they are left out of the evaluation", stacklevel=2)
    if scenario == "semi-informed":
        if not hp.get("anon_train_folders"):
            raise DataError("scenario semi-informed needs anon_train_folders (the anonymized training corpus)")
        keep = set(train.speakers())
        train = load_anonymized(hp["anon_train_folders"], hp, cache_folder=cache).subset(lambda u: u.speaker in keep)
    split = make_split(
        evaluation, enrolls_dir=hp.get("enrolls_dir"), trials_dirs=hp.get("trials_dirs"),
        enroll_list=hp.get("enroll_list"), trial_list=hp.get("trial_list"), seed=hp.get("split_seed", 0),
        n_enroll=hp.get("n_enroll", 20), max_per_speaker=hp.get("max_per_speaker", 60),
        min_duration=hp.get("min_duration", 2.0), max_duration=hp.get("max_duration", 30.0),
    )
    enroll = anonymized if scenario in ("lazy-informed", "semi-informed") else evaluation
    trials = anonymized if scenario != "original" else evaluation
    if missing:  # the split is made on the full corpus (fixed lists name every utterance), then thinned
        split = without_utterances(split, set(missing))
    return DataPlan(train, enroll, trials, split, evaluation)


def without_utterances(split: Split, gone: set) -> Split:
    """The split without the utterances in ``gone``, each listed in ``dropped``."""
    enroll = {s: [u for u in ids if u not in gone] for s, ids in split.enroll.items()}
    empty = [s for s, ids in enroll.items() if not ids]
    if empty:
        raise DataError(f"enrollment speakers {empty[:3]} lost every enrollment utterance to anonymizer failures",
                        hint="re-run the anonymizer on the utterances listed in its failures.jsonl")
    pairs = None if split.pairs is None else [p for p in split.pairs if p[1] not in gone]
    dropped = dict(split.dropped)
    dropped.update({f"utterance {u}": "missing from the anonymized corpus (the anonymizer failed on it)"
                    for u in sorted(gone)})
    return Split(enroll, [t for t in split.trial_ids if t not in gone], pairs, dropped, split.source)


# --- features ------------------------------------------------------------------------------------

def feature_extractor(hp: dict):
    """None for mel (computed in the model from audio), else a PhoneFeatures extractor.

    Phones of anonymized speech are those of the words it says (``phone_text: spoken``, the
    default; :mod:`sparc_eval.words`): the anonymizer's own transcript (STT-TTS), or the
    reference text of an anonymizer that keeps the words. Original speech says its reference text.
    """
    kind = hp["feature_type"]
    if kind not in FEATURE_TYPES:
        raise DataError(f"feature_type {kind!r} is not one of {', '.join(FEATURE_TYPES)}")
    if kind == "mel":
        return None
    from sparc_eval.phones.features import PhoneFeatures

    durations = kind == "phone_durations"
    return PhoneFeatures(source=phone_source(hp), durations=durations, silence=uses_silence(hp),
                         text=hp.get("phone_text", "spoken"), recognizer=hp.get("recognizer", "pocketsphinx"),
                         cache_dir=Path(hp["cache_folder"]) / "features")


def phone_source(hp: dict) -> str:
    return "audio" if hp["feature_type"] == "phone_durations" else hp.get("phone_source", "transcript")


def uses_silence(hp: dict) -> bool:
    """``silence: auto`` (the default): a recognizer's silence symbol is a feature column, as in
    the paper (its recognizer's alphabet has silence, and its phone-only run is the phone+duration
    run without durations); transcripts have no silence, so 39 columns."""
    silence = hp.get("silence", "auto")
    if silence == "auto":
        return phone_source(hp) == "audio"
    if not isinstance(silence, bool):
        raise DataError(f"silence must be auto, True or False, not {silence!r}")
    return silence


def input_size(hp: dict) -> int:
    if hp["feature_type"] == "mel":
        return hp["n_mels"]
    return 39 + (1 if uses_silence(hp) else 0)


def reads_words(hp: dict) -> bool:
    """Whether the features depend on the words an utterance says (G2P, or forced alignment)."""
    return hp["feature_type"] != "mel" and (phone_source(hp) == "transcript" or hp.get("recognizer") == "align")


def needs_audio(hp: dict) -> bool:
    """Whether the attacker's features come from audio (mel, durations, a phone recognizer)."""
    return hp["feature_type"] == "mel" or phone_source(hp) == "audio"


def require_audio(manifest: Manifest, role: str, hp: dict) -> None:
    if needs_audio(hp) and not manifest.has_audio:
        raise DataError(f"{hp['feature_type']} features need audio, but the {role} corpus ({manifest.name}) is text-only",
                        hint="use feature_type: phones with phone_source: transcript for text-only corpora")


# --- resume safety -------------------------------------------------------------------------------

def check_resume(output_folder, save_folder, fingerprint: dict) -> None:
    """Refuse to resume checkpoints made with different hparams (naming the keys that differ)."""
    path = Path(output_folder) / "run_fingerprint.json"
    if path.is_file():
        old = json.loads(path.read_text())
        old = {**{k: v for k, v in KEYS_ADDED_LATER.items() if k in fingerprint}, **old}
        changed = sorted(k for k in set(old) | set(fingerprint) if old.get(k) != fingerprint.get(k))
        if changed and any(Path(save_folder).glob("CKPT*")):
            details = ", ".join(f"{k}: {old.get(k)!r} -> {fingerprint.get(k)!r}" for k in changed[:5])
            raise DataError(f"{output_folder} holds checkpoints trained with other hparams ({details})",
                            hint="use a new output_folder, or delete its save/ folder to start over")
    write_json(path, fingerprint)


def model_signature(hp: dict) -> str:
    """Digest of what the hparams build but plain keys miss: the modules' architecture (kernel
    sizes, attention channels...), the loss's scalar settings (AAM margin and scale) and the
    optimizer's keyword arguments."""
    import hashlib

    loss = getattr(hp.get("compute_cost"), "loss_fn", hp.get("compute_cost"))
    loss_settings = {k: v for k, v in vars(loss).items() if isinstance(v, (int, float, bool, str))} if loss else {}
    optimizer = getattr(hp.get("opt_class"), "keywords", {})
    text = repr(hp.get("modules")) + json.dumps([type(loss).__name__, loss_settings, optimizer],
                                                sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprint_of(hp: dict) -> dict:
    """The plain (str/number/bool/list) hparams that define the trained model."""
    def plain(v):
        return v is None or isinstance(v, (str, int, float, bool)) or (
            isinstance(v, (list, tuple)) and all(plain(x) for x in v))

    semi = hp.get("scenario") == "semi-informed"
    skip = RESUMABLE_CHANGES | EVAL_KEYS | (set() if semi else {"phone_text", "anon_keeps_words"})  # eval-only
    out = {k: (list(v) if isinstance(v, tuple) else v) for k, v in hp.items()
           if not k.startswith("__") and plain(v) and k not in skip}
    if hp.get("feature_type") != "mel":
        out["silence"] = uses_silence(hp)  # resolved, so that auto and the value it stands for agree
    out["model"] = model_signature(hp)
    trained_on = hp.get("anon_train_folders") if semi else (hp.get("train_folders") or hp.get("data_folder"))
    out["trained_on"] = [str(x) for x in trained_on] if isinstance(trained_on, (list, tuple)) else str(trained_on)
    if not hp.get("eval_folder"):  # the evaluation speakers are held out of data_folder
        out["held_out_by"] = [hp.get("eval_speaker_fraction", 0.5), hp.get("split_seed", 0)]
    return out


# --- the run -------------------------------------------------------------------------------------

def run_attack(hp: dict, run_opts=None, *, hparams_file=None, overrides=None, plan: DataPlan | None = None) -> Path:
    """Train (or resume) the attacker and evaluate it; returns the path of results.json.

    ``plan`` is the data plan :func:`prepare` made while sizing the model (built here if None)."""
    from sparc_eval.speechbrain_compat import import_speechbrain

    sb = import_speechbrain()
    from sparc_eval.metrics import evaluate_trials, write_report

    from .data import hold_out, make_dataset
    from .ecapa import AttackerBrain

    if hp.get("num_threads"):
        import torch

        torch.set_num_threads(int(hp["num_threads"]))
    timings = {}
    out = Path(hp.get("results_folder") or hp["output_folder"])
    start = time.perf_counter()
    plan = plan if plan is not None else plan_data(hp)
    require_audio(plan.train, "training", hp)
    require_audio(plan.trials, "trial", hp)
    require_audio(plan.enroll, "enrollment", hp)
    timings["data"] = time.perf_counter() - start

    start = time.perf_counter()
    scenario = hp.get("scenario", "original")
    extractor = feature_extractor(hp)
    progress = hp.get("progress", True)
    enroll_ids = {u for ids in plan.split.enroll.values() for u in ids}
    trial_ids = set(plan.split.trial_ids)
    enroll_utts = [u for u in plan.enroll if u.id in enroll_ids]
    trial_utts = [u for u in plan.trials if u.id in trial_ids]
    if extractor is not None:
        train_feats = extractor.corpus(plan.train, progress=progress)
        enroll_feats = extractor.corpus(enroll_utts, progress=progress)
        trial_feats = extractor.corpus(trial_utts, progress=progress)
        trainable = [u for u in plan.train if train_feats[u.id].shape[0] > 0]
    else:
        train_feats = enroll_feats = trial_feats = None
        trainable = list(plan.train)
    timings["features"] = time.perf_counter() - start

    speakers = plan.train.speakers()  # the classifier's classes, as load_hparams sized them
    if len({u.speaker for u in trainable}) < 2:
        raise DataError(f"only {len(speakers)} training speaker(s)", hint="an attacker needs several speakers to learn")
    speaker_index = {s: i for i, s in enumerate(speakers)}
    train_utts, valid_utts = hold_out(trainable, fraction=hp.get("valid_fraction", 0.1), seed=hp.get("seed", 0))
    chunk = hp.get("chunk_seconds") if hp["feature_type"] == "mel" else hp.get("chunk_phones")
    train_set = make_dataset(train_utts, feature_type=hp["feature_type"], features=train_feats,
                             speaker_index=speaker_index, chunk=chunk)
    valid_set = make_dataset(valid_utts, feature_type=hp["feature_type"], features=train_feats,
                             speaker_index=speaker_index, sort=True)

    if hp["n_train_speakers"] != len(speakers) or hp["input_size"] != input_size(hp):
        raise DataError("hparams were loaded without the data-derived sizes",
                        hint="load them with attackers.run.load_hparams, which sets n_train_speakers and input_size")
    check_resume(hp["output_folder"], hp["save_folder"], fingerprint_of(hp))
    brain = AttackerBrain(modules=hp["modules"], opt_class=hp["opt_class"], hparams=hp, run_opts=run_opts,
                          checkpointer=hp["checkpointer"])
    start = time.perf_counter()
    loader = {"batch_size": hp["batch_size"], "shuffle": True, "num_workers": hp.get("num_workers", 0)}
    brain.fit(hp["epoch_counter"], train_set, valid_set, train_loader_kwargs=loader,
              valid_loader_kwargs={"batch_size": hp.get("eval_batch_size", hp["batch_size"])})
    timings["training"] = time.perf_counter() - start

    if not sb.utils.distributed.if_main_process():
        return out / "results.json"
    brain.checkpointer.recover_if_possible(min_key="error_rate")
    start = time.perf_counter()
    eval_batch = hp.get("eval_batch_size", hp["batch_size"])
    embeddings = brain.embed(make_dataset(enroll_utts, feature_type=hp["feature_type"], features=enroll_feats,
                                          sort=True), batch_size=eval_batch, progress=progress)
    embeddings.update(brain.embed(make_dataset(trial_utts, feature_type=hp["feature_type"], features=trial_feats,
                                               sort=True), batch_size=eval_batch, progress=progress))
    timings["embeddings"] = time.perf_counter() - start

    start = time.perf_counter()
    utt2spk = plan.eval_original.utt2spk()
    pairs = plan.split.trial_pairs(utt2spk)
    scores = score_pairs(embeddings, plan.split.enroll, pairs)
    write_score_file(out / "scores.txt", pairs, scores)
    timings["scoring"] = time.perf_counter() - start

    start = time.perf_counter()
    speakers_table = {s: a for s, a in plan.eval_original.speaker_attributes().items()}
    results = evaluate_trials(
        [p[0] for p in pairs], [p[1] for p in pairs], scores, np.array([p[2] for p in pairs]),
        utt2spk=utt2spk, speakers=speakers_table, n_boot=hp.get("n_boot", 1000), seed=hp.get("seed", 0),
        bootstrap_unit=hp.get("bootstrap_unit", "speaker"), accent_grouping=hp.get("accent_grouping", "coarse"),
    )
    for what, why in plan.split.dropped.items():
        key = what if what.startswith("utterance ") else f"speaker {what}"
        results.setdefault("not_applicable", {})[key] = why
    timings["metrics"] = time.perf_counter() - start
    run_info = {
        **run_description(hp, plan, hparams_file=hparams_file, overrides=overrides),
        "n_train_speakers": len(speakers), "n_train_utterances": len(train_utts),
        "timings_s": {k: round(v, 3) for k, v in timings.items()},
        "deviations": attack_deviations(hp, [*plan.train, *enroll_utts, *trial_utts]),
    }
    write_report(out, results, run_info, plots=hp.get("plots", True))
    return out / "results.json"


def run_description(hp: dict, plan: DataPlan, *, hparams_file=None, overrides=None) -> dict:
    """results.json's ``run``: what was evaluated, how, and on what machine and software."""
    scenario = hp.get("scenario", "original")
    return {
        "dataset": plan.eval_original.name, "features": hp["feature_type"],
        "anonymizer": hp.get("anonymizer_name") or (None if scenario == "original" else str(hp.get("anon_eval_folder"))),
        "scenario": scenario, "hparams": str(hparams_file) if hparams_file else None,
        "overrides": overrides or None, "seed": hp.get("seed"), "split": plan.split.source,
        "n_enroll_speakers": len(plan.split.enroll), "n_trial_utterances": len(plan.split.trial_ids),
        "phone_text": hp.get("phone_text", "spoken") if hp["feature_type"] != "mel" else None,
        "model_size": hp.get("model_size", "cpu"), "bootstrap_unit": hp.get("bootstrap_unit", "speaker"),
        "accent_grouping": hp.get("accent_grouping", "coarse"), "environment": environment(),
    }


def attack_deviations(hp: dict, utterances) -> dict:
    """How this run departs from the content-leakage paper's protocol, by name."""
    out = size_deviation(hp)
    if reads_words(hp):
        out.update(reference_text_deviation(utterances, hp.get("phone_text", "spoken")))
    out.update(bootstrap_deviation(hp.get("bootstrap_unit", "speaker")))
    if phone_source(hp) == "audio" and hp["feature_type"] != "mel" and not uses_silence(hp):
        out["no_silence"] = "the recognizer's silence symbol is dropped (the paper keeps it as a phone)"
    return out


def load_hparams(hparams_file, overrides: str | dict | None = None) -> dict:
    """The hparams with the data-derived model sizes set (see :func:`prepare`)."""
    return prepare(hparams_file, overrides)[0]


def prepare(hparams_file, overrides: str | dict | None = None) -> tuple:
    """(hparams, data plan). Hparams are loaded twice: once to read the data keys, then with the
    data-derived sizes (``n_train_speakers``, ``input_size``) and the channels of ``model_size``
    (:mod:`.model_size`) that the model definitions reference; the plan is returned so that
    :func:`run_attack` does not load the corpora again."""
    from hyperpyyaml import load_hyperpyyaml

    from sparc_eval.speechbrain_compat import ensure_torchaudio

    ensure_torchaudio()  # the hparams name SpeechBrain classes, which import torchaudio

    def load(extra):
        merged = _merge_overrides(overrides, extra)
        with open(hparams_file, encoding="utf-8") as fin:
            try:
                return load_hyperpyyaml(fin, merged)
            except (KeyError, ValueError) as err:
                raise DataError(f"cannot apply overrides ({err})", path=hparams_file,
                                hint="every --key=value must name a key that exists in the hparams file") from None

    first = load({})
    plan = plan_data(first)
    derived = {"input_size": input_size(first), "n_train_speakers": len(plan.train.speakers()),
               **size_overrides(first)}
    return load(derived), plan


def parse_overrides(overrides) -> dict:
    """``--key=value`` overrides (SpeechBrain's YAML string, or a dict) as a dict; a key given
    twice keeps its last value, as on any command line."""
    import yaml

    if not overrides:
        return {}
    if isinstance(overrides, dict):
        return dict(overrides)
    try:
        parsed = yaml.safe_load(overrides)
    except yaml.YAMLError as err:
        raise DataError(f"malformed --key=value override ({err})") from None
    if not isinstance(parsed, dict):
        raise DataError(f"overrides must be --key=value pairs, got {overrides!r}")
    return parsed


def _merge_overrides(overrides, extra: dict) -> dict:
    return {**parse_overrides(overrides), **extra}
