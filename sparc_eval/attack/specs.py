"""Attackers as a card's or a leakage comparison's hparams name them (``attackers:`` and
``attackers_enabled``), read into :class:`~sparc_eval.attack.cells.AttackerSpec` values the cell
engine runs."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from ..errors import DataError
from ..hparams import bounded, hparams_keys, read_fields
from .cells import AttackerSpec
from .contract import attacker_class, check_attacker


@dataclass(frozen=True)
class CommonAttackerKeys:
    """A job's keys set on every attacker recipe whose hparams file has them (None: the file's
    own value stands)."""

    cache_folder: Optional[str] = None
    progress: Optional[bool] = None
    plots: Optional[bool] = None
    n_boot: Optional[int] = bounded(None, minimum=0)
    num_threads: Optional[int] = None

    @classmethod
    def given(cls, hp: dict) -> dict:
        """{key: value} of the keys ``hp`` sets, checked by the one reader."""
        return {k: v for k, v in asdict(cls(**read_fields(cls, hp))).items() if v is not None}


ATTACKER_COMMON = tuple(hparams_keys(CommonAttackerKeys))


def enabled_names(names, wanted, what: str) -> list:
    """The names ``<what>_enabled`` picks from ``names`` (None or ``all``: every one, in order)."""
    if wanted in (None, "all"):
        return list(names)
    wanted = [wanted] if isinstance(wanted, str) else list(wanted)
    unknown = [w for w in wanted if w not in names]
    if unknown:
        raise DataError(f"{what}_enabled names {unknown}, which are not in {what}: {list(names)}")
    return wanted


def object_spec(name: str, spec: dict, seed: int) -> AttackerSpec:
    """An attacker given in the comparison's hparams: ``attacker: !new:...``, or ``kind:`` a registered
    attacker (``text``: a SPARC scorer, ``scorer: !new:attackers.text...``, with P, L and trial keys)."""
    kind, options = spec.pop("kind", None), {k: v for k, v in spec.items() if k != "attacker"}
    if spec.get("attacker") is not None:
        if options:
            raise DataError(
                f"attackers.{name}: unknown keys {sorted(options)}",
                hint="set them on the attacker itself",
            )
        return AttackerSpec(
            name, kind, attacker=check_attacker(spec["attacker"], f"attackers.{name}")
        )
    if kind == "text" and options.get("scorer") is None:
        raise DataError(
            f"attackers.{name}: a text attacker needs a scorer (!new:attackers.text...)"
        )
    try:
        attacker = (
            attacker_class(kind)(name=name, seed=seed, **options)
            if kind == "text"
            else attacker_class(kind)(**options)
        )
    except TypeError as err:
        raise DataError(f"attackers.{name}: {err}") from None
    return AttackerSpec(name, kind, attacker=check_attacker(attacker, f"attackers.{name}"))


def attackers_of(hp: dict) -> dict:
    """The ``attackers`` map of a card's or a comparison's hparams, checked."""
    attackers = hp.get("attackers") or {}
    if not isinstance(attackers, dict) or not attackers:
        raise DataError(
            "hparams: attackers must map names to {hparams: FILE} or {attacker: !new:...} or {kind: ...}"
        )
    return attackers


def attacker_specs(hp: dict, quick: tuple = (None, {})) -> list:
    """One :class:`~sparc_eval.attack.cells.AttackerSpec` per enabled attacker of ``hp``: given
    by its recipe's hparams file, by an object (``attacker: !new:...``) or by ``kind``. ``quick``:
    (names, {name: overrides}) a comparison's quick grid enables, else (None, {})."""
    attackers = attackers_of(hp)
    quick_names, quick_overrides = quick
    wanted = hp.get("attackers_enabled")
    if (
        wanted is None and quick_names is not None
    ):  # grid: quick; attackers_enabled given explicitly wins
        wanted = quick_names
    out = []
    for name in enabled_names(attackers, wanted, "attackers"):
        spec = dict(attackers[name] or {})
        if "hparams" not in spec and spec.get("kind") != "ecapa":
            if name in quick_overrides:
                raise DataError(
                    f"quick_overrides.{name}: only attackers given by hparams: take overrides"
                )
            out.append(object_spec(name, spec, int(hp.get("seed", 0))))
            continue
        if not spec.get("hparams") or not Path(spec["hparams"]).is_file():
            raise DataError(
                f"attackers.{name}: hparams {spec.get('hparams')!r} is not a file",
                hint="e.g. hparams/phones.yaml (paths are relative to where you run the recipe)",
            )
        unknown = set(spec) - {"kind", "hparams", "overrides", "model_folder"}
        if unknown:
            raise DataError(f"attackers.{name}: unknown keys {sorted(unknown)}")
        out.append(
            AttackerSpec(
                name,
                spec.get("kind"),
                hparams=str(spec["hparams"]),
                overrides={**(spec.get("overrides") or {}), **quick_overrides.get(name, {})},
                model_folder=spec.get("model_folder"),
            )
        )
    return out
