"""Resume safety of a trained ECAPA attacker: its checkpoints are reused only by the same model.

``run_fingerprint.json`` in the output folder holds the plain hparams that define the trained
model and the content digest of what it was trained on and built on (:func:`fingerprint_of`). A
run whose hparams differ refuses the folder's checkpoints and names the keys that differ
(:func:`check_resume`); a run on other content (training speech re-anonymized in place, a replaced
``ssl_source``) sets them aside under ``.kept/`` and trains anew, and gets them back when that
content returns.
"""

from __future__ import annotations

import json
from pathlib import Path

from sparc_eval.atomic import write_json
from sparc_eval.cache import file_digests, restore, set_aside
from sparc_eval.data.plan import DataSettings
from sparc_eval.digest import content_digest, digest, text_digest
from sparc_eval.errors import DataError

from .features import FeatureSettings

# hparams a resumed run may change without invalidating its checkpoints: more epochs, and
# everything about evaluation (a trained attacker is evaluated on other corpora this way)
RESUMABLE_CHANGES = {
    "number_of_epochs",
    "progress",
    "plots",
    "num_workers",
    "num_threads",
    "cache_folder",
    "hparams_file",
}
# keys a fingerprint written before they existed lacks, with the value the run then had
KEYS_ADDED_LATER = {
    "model_size": "cpu",
    "attention_channels": 64,
    "anon_keeps_words": None,
    "phone_text": "reference",
}
EVAL_KEYS = {
    "eval_folder",
    "enrolls_dir",
    "trials_dirs",
    "enroll_list",
    "trial_list",
    "split_seed",
    "n_enroll",
    "max_per_speaker",
    "min_duration",
    "max_duration",
    "anon_eval_folder",
    "anon_enroll_folder",
    "anonymizer_name",
    "results_folder",
    "n_boot",
    "bootstrap_unit",
    "accent_grouping",
    "eval_batch_size",
    "scenario",
    "bootstrap_method",
    "bootstrap_bins",
    "min_segment_speakers",
    "segment_attributes",
}


# where a model lives, not what it is: the same folder named by an absolute or a relative path
LOCATION_KEYS = {"output_folder", "save_folder", "train_log"}

# what a model was made from, not how: when only these change, the old checkpoints are kept aside
# under their fingerprint (going back finds them) and a new model trains
CONTENT_KEYS = {"trained_on_content", "built_on"}


def check_resume(output_folder, save_folder, fingerprint: dict) -> None:
    """Refuse to resume checkpoints made with different hparams (naming the keys that differ).
    Checkpoints of the same hparams trained on other content (other speech, replaced weights
    under ``ssl_source`` or ``init_from``) are kept aside, and those of this content come back."""
    path = Path(output_folder) / "run_fingerprint.json"
    if path.is_file():
        written = json.loads(path.read_text())
        old = upgraded(dict(written), fingerprint)
        keys = (set(old) | set(fingerprint)) - LOCATION_KEYS
        changed = sorted(k for k in keys if old.get(k) != fingerprint.get(k))
        if changed and any(Path(save_folder).glob("CKPT*")):
            if not set(changed) <= CONTENT_KEYS:
                details = ", ".join(
                    f"{k}: {old.get(k)!r} -> {fingerprint.get(k)!r}" for k in changed[:5]
                )
                raise DataError(
                    f"{output_folder} holds checkpoints trained with other hparams ({details})",
                    hint="use a new output_folder, or delete its save/ folder to start over",
                )
            set_aside(save_folder, output_folder, model_digest(written))
    # the fingerprint is written before its checkpoints come back: a run cut off in between finds
    # an empty save folder under the right fingerprint, never checkpoints under another's
    write_json(path, fingerprint)
    if not any(Path(save_folder).glob("CKPT*")):
        restore(output_folder, model_digest(fingerprint), save_folder)
    Path(save_folder).mkdir(parents=True, exist_ok=True)  # the checkpointer lists it


def model_digest(fingerprint: dict) -> str:
    """The key of a set-aside model: its fingerprint without where it was saved."""
    return digest({k: v for k, v in fingerprint.items() if k not in LOCATION_KEYS})


def upgraded(old: dict, fingerprint: dict) -> dict:
    """A fingerprint written by an earlier version, in today's terms: keys added since with the
    value the run then had, ``silence: auto`` resolved, and keys that no longer define the model
    (``phone_text`` outside semi-informed runs) left out. A fingerprint without the training
    content is trusted for original speech (which nothing rewrites in place), not for anonymized
    training speech (which a re-run with other settings rewrites in place)."""
    old = {**{k: v for k, v in KEYS_ADDED_LATER.items() if k in fingerprint}, **old}
    if "trained_on_speech" in fingerprint:  # the paths in trained_on tell original from anonymized
        old.setdefault("trained_on_speech", fingerprint["trained_on_speech"])
    if "trained_on_content" in fingerprint and fingerprint.get("trained_on_speech") == "original":
        old.setdefault("trained_on_content", fingerprint["trained_on_content"])
    if old.get("silence") == "auto" and old.get("feature_type") in ("phones", "phone_durations"):
        source = (
            "audio"
            if old["feature_type"] == "phone_durations"
            else old.get("phone_source", "transcript")
        )
        old["silence"] = source == "audio"
    for key in ("phone_text", "anon_keeps_words"):
        if key not in fingerprint:
            old.pop(key, None)
    return old


def model_signature(hp: dict) -> str:
    """Digest of what the hparams build but plain keys miss: the modules' architecture (kernel
    sizes, attention channels...), the loss's scalar settings (AAM margin and scale) and the
    optimizer's keyword arguments."""
    loss = getattr(hp.get("compute_cost"), "loss_fn", hp.get("compute_cost"))
    loss_settings = (
        {k: v for k, v in vars(loss).items() if isinstance(v, (int, float, bool, str))}
        if loss
        else {}
    )
    optimizer = getattr(hp.get("opt_class"), "keywords", {})
    text = repr(hp.get("modules")) + json.dumps(
        [type(loss).__name__, loss_settings, optimizer], sort_keys=True, default=str
    )
    return text_digest(text)


def _plain(v) -> bool:
    return (
        v is None
        or isinstance(v, (str, int, float, bool))
        or (isinstance(v, (list, tuple)) and all(_plain(x) for x in v))
    )


def built_on(hp: dict) -> list:
    """The weights a model starts from besides its training: the SSL upstream's snapshot
    (``ssl_source`` under ``feature_type: ssl``) and the checkpoint it is fine-tuned from
    (``init_from``)."""
    upstream = hp.get("ssl_source") if hp.get("feature_type") == "ssl" else None
    return [str(p) for p in (upstream, hp.get("init_from")) if p]


def fingerprint_of(hp: dict, train=None) -> dict:
    """The plain (str/number/bool/list) hparams that define the trained model, and with the
    training manifest ``train`` its content digest (:meth:`sparc_eval.data.manifest.Manifest.content_digest`)."""
    semi = hp.get("scenario") == "semi-informed"
    skip = (
        RESUMABLE_CHANGES | EVAL_KEYS | (set() if semi else {"phone_text", "anon_keeps_words"})
    )  # eval-only
    out = {
        k: (list(v) if isinstance(v, tuple) else v)
        for k, v in hp.items()
        if not k.startswith("__") and _plain(v) and k not in skip
    }
    if hp.get("feature_type") in ("phones", "phone_durations"):
        out["silence"] = FeatureSettings.from_hparams(
            hp
        ).uses_silence  # resolved: auto and its value agree
    out["model"] = model_signature(hp)
    trained_on = (
        hp.get("anon_train_folders") if semi else (hp.get("train_folders") or hp.get("data_folder"))
    )
    out["trained_on"] = (
        [str(x) for x in trained_on] if isinstance(trained_on, (list, tuple)) else str(trained_on)
    )
    out["trained_on_speech"] = "anonymized" if semi else "original"
    digests = file_digests(hp.get("cache_folder"))  # a warm run: one stat per file
    if train is not None:
        out["trained_on_content"] = train.content_digest(digests)
    on_disk = [p for p in built_on(hp) if Path(p).exists()]  # a hub name is keyed by its name
    if on_disk:  # weights it starts from: their bytes, not their paths
        out["built_on"] = content_digest(on_disk, digests=digests)
    if not hp.get("eval_folder"):  # the evaluation speakers are held out of data_folder
        data = DataSettings.from_hparams(hp)
        out["held_out_by"] = [data.eval_speaker_fraction, data.split_seed]
    return out
