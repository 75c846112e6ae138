"""What the card anonymizes: exactly the utterances each scenario reads, once per anonymizer and side.

Who anonymizes what, with which draws (VoicePrivacy: the attacker has the anonymization system,
not the user's random choices):

- the user's speech, ``<output_folder>/anonymized/<anonymizer>/eval``: the split's enrollment and
  trial utterances anonymized with the user's draws; trials (every scenario) and utility read it;
- the attacker's speech: enrollment (lazy- and semi-informed), ``.../attacker/enroll``, and the
  training data (semi-informed), ``.../train``, anonymized by a copy of the system with the
  attacker's own seed (``attacker_seed``; derived from the anonymizer's seed when not given).

An anonymizer that declares itself ``deterministic`` has no draws: the attacker's enrollment is
the user's audio, read from ``eval`` and not computed twice. ``attacker_draws: user`` gives the
attacker the user's draws (a stronger attacker, named in ``run.deviations``).

Each run goes through :func:`sparc_eval.anonymization.runner.anonymize_corpus` (cached by input audio and the
anonymizer's settings, resumable, shards and Ray as the runner settings say). An utterance the
anonymizer fails on, on either side, is left out of every attacker alike.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ...anonymization.runner import anonymize_corpus, build_anonymizer
from ...data.manifest import Manifest
from ...data.plan import DataPlan
from ...digest import text_digest
from ...errors import DataError
from .settings import AnonymizerSpec, CardSettings

logger = logging.getLogger(__name__)

REUSES_ENROLLMENT = ("lazy-informed", "semi-informed")  # scenarios whose enrollment is anonymized


@dataclass
class AnonymizedCorpora:
    name: str
    eval_folder: Path
    train_folder: Optional[Path] = None
    enroll_folder: Optional[Path] = None  # the attacker's own enrollment (randomized anonymizers)
    failures: dict = field(default_factory=dict)  # utterance id -> reason
    train_failures: dict = field(default_factory=dict)
    reports: dict = field(
        default_factory=dict
    )  # eval / attacker_enroll / train -> anonymization.json's counts
    draws: dict = field(default_factory=dict)  # how each side was drawn (results.json)
    train_content: Optional[str] = None  # content digest of the training speech: the model's key
    seconds: float = 0.0  # this anonymizer's share of the card's anonymization stage


def read_failures(folder: Path) -> dict:
    """{utterance id: reason} from an anonymized folder's ``failures.jsonl`` (empty when absent)."""
    path = folder / "failures.jsonl"
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            out[record["id"]] = record.get("reason") or record.get("error") or "failed"
    return out


def _run(card: CardSettings, anonymizer, name: str, manifest: Manifest, folder: Path) -> tuple:
    """(anonymization.json's counts, {failed id: reason}, the anonymized manifest)."""
    logger.info("[card] anonymizing %d utterances with %s into %s", len(manifest), name, folder)
    result = anonymize_corpus(manifest, anonymizer, folder, options=card.runner)
    report = result.report
    keep = ("utterances", "finished", "processed", "cached", "failed", "rtf", "timings_s")
    return {k: report[k] for k in keep if k in report}, read_failures(folder), result


def needed_utterances(plan: DataPlan) -> Manifest:
    """The evaluation utterances every scenario reads: the split's enrollments and trials."""
    return Manifest(
        [*plan.enroll_utterances(), *plan.trial_utterances()],
        name=f"{plan.eval_original.name} (split)",
    )


def derived_attacker_seed(user_seed) -> int:
    """The attacker's seed when none is given: a function of the user's, never equal to it."""
    return int(text_digest(f"attacker\x00{user_seed}", 8), 16)


def draw_mode(anonymizer) -> str:
    """deterministic | speaker | utterance | unknown (an object that does not say)."""
    if getattr(anonymizer, "deterministic", False):
        return "deterministic"
    return getattr(anonymizer, "draws", None) or "unknown"


def attacker_side(card: CardSettings, user) -> tuple:
    """(the anonymizer the attacker uses, the record of how both sides were drawn)."""
    mode = draw_mode(user)
    if mode == "deterministic":
        return user, {"mode": mode, "attacker": "the user's audio (no draws)"}
    if card.attacker_draws == "user":
        return user, {"mode": mode, "attacker": "the user's draws (attacker_draws: user)"}
    with_seed = getattr(user, "with_seed", None)
    if not callable(with_seed):
        return user, {
            "mode": mode,
            "attacker": "the user's draws (the anonymizer has no with_seed(seed))",
        }
    user_seed = getattr(user, "seed", None)
    seed = derived_attacker_seed(user_seed) if card.attacker_seed is None else card.attacker_seed
    if seed == user_seed:
        raise DataError(
            f"attacker_seed {seed} is the anonymizer's own seed: the attacker would have the user's draws",
            hint="choose another attacker_seed, or say attacker_draws: user to mean it",
        )
    return with_seed(seed), {"mode": mode, "attacker": "its own draws", "attacker_seed": seed}


def anonymize_needed(card: CardSettings, plan: DataPlan) -> dict:
    """{anonymizer name: AnonymizedCorpora}, anonymizing what the scenarios need (and no more)."""
    needed = needed_utterances(plan)
    found = {}
    for spec in card.anonymizers:
        start = time.perf_counter()
        found[spec.name] = _anonymize_one(card, spec, plan, needed)
        found[spec.name].seconds = time.perf_counter() - start
    return found


def share_transcripts(anonymizer, cache_folder) -> None:
    """Point an anonymizer that transcribes (``transcript_cache`` left None: STT-TTS) at the card's
    cache folder, where the WER metric finds its transcripts of the original speech."""
    if (
        "transcript_cache" in getattr(anonymizer, "__dict__", {})
        and not anonymizer.transcript_cache
    ):
        anonymizer.transcript_cache = str(cache_folder)


def _anonymize_one(
    card: CardSettings, spec: AnonymizerSpec, plan: DataPlan, needed: Manifest
) -> AnonymizedCorpora:
    user = build_anonymizer(spec.anonymizer, spec.options or None)
    share_transcripts(user, card.cache_folder)
    attacker, draws = attacker_side(card, user)
    base = card.output_folder / "anonymized" / spec.name
    done = AnonymizedCorpora(spec.name, base / "eval", draws=draws)
    done.reports["eval"], done.failures, _ = _run(card, user, spec.name, needed, done.eval_folder)
    if attacker is not user and any(sc in REUSES_ENROLLMENT for sc in card.scenarios):
        done.enroll_folder = base / "attacker" / "enroll"
        enroll = Manifest(plan.enroll_utterances(), name=f"{plan.eval_original.name} (enrollment)")
        done.reports["attacker_enroll"], failed, _ = _run(
            card, attacker, f"{spec.name} (attacker)", enroll, done.enroll_folder
        )
        done.failures.update(
            {
                u: f"the attacker's copy: {why}"
                for u, why in failed.items()
                if u not in done.failures
            }
        )
    if "semi-informed" in card.scenarios:
        done.train_folder = base / "train"
        done.reports["train"], done.train_failures, train = _run(
            card, attacker, f"{spec.name} (attacker)", plan.train, done.train_folder
        )
        done.train_content = train.content_digest()
    return done


def given_copies(card: CardSettings, plan: DataPlan) -> dict:
    """{name: AnonymizedCorpora} of the anonymized copies a VoicePrivacy data folder already holds
    (``vpc_preset``): read as they are, nothing anonymized here. The split's utterances the copies
    lack are left out by the data plan under the runner's missing-utterance rule."""
    from ...data.vpc import layout_of

    layout = layout_of(card.data)
    spec = card.anonymizers[0]
    train = layout.anon_train
    return {
        spec.name: AnonymizedCorpora(
            spec.name,
            layout.root,
            train_folder=train,
            draws={
                "mode": "given",
                "attacker": f"the copies under {layout.root} (*{layout.suffix})",
            },
            train_content=text_digest(str(train), 12) if train else "absent",
        )
    }
