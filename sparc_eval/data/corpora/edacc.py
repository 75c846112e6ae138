"""The EdAcc release layout (``edacc_v1.0/``), known here only from its description.

Assumed layout (document of record; the tests build a fixture of exactly this shape)::

    edacc_v1.0/
      linguistic_background.csv      one row per participant, column PARTICIPANT_ID
      data/<conversation>.wav        whole conversation recordings (used when no wav.scp)
      dev/  test/                    Kaldi-style: segments, text, utt2spk, optional wav.scp

``segments`` lines are ``<utt> <recording> <start> <end>``; recordings like ``EDACC-C29_P2``
are parts of conversation ``EDACC-C29``, which is the episode. Speaker metadata columns are
found by keyword in their (long, question-style) headers; pass ``columns`` to override:
``{"speaker": ..., "sex": ..., "age": ..., "birth_year": ..., "accent": ..., "ethnicity": ...,
"education": ...}``. A value over 1900 in the age/birth-year column is a birth year and
becomes ``reference_year - year`` (2023 by default, matching SpAnE's EdAcc lists).
"""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

from ...errors import DataError
from ..manifest import Manifest, clean_age, clean_value, normalise_sex
from .kaldi import load_kaldi_dir, read_table
from .spane import EDACC_ID


class EdAccLoader:
    """An EdAcc release folder (``linguistic_background.csv`` and ``dev/`` or ``test/``)."""

    name = "edacc"
    priority = 30

    def detects(self, path: Path) -> bool:
        return path.is_dir() and is_edacc_release(path)

    def load(self, path, *, split: str = "test", skip_missing: bool = False, **_unused) -> Manifest:
        return load_edacc_release(path, split=split, skip_missing=skip_missing)


# attribute -> header keywords (lower-case); the first header containing any of them is used
_HEADER_KEYWORDS = {
    "speaker": ("participant_id", "participant id"),
    "sex": ("gender", "sex"),
    "birth_year": ("year of birth", "birth year", "born"),
    "age": ("age",),
    "accent": ("accent",),
    "ethnicity": ("ethnic",),
    "education": ("education",),
}


def is_edacc_release(path) -> bool:
    path = Path(path)
    return (path / "linguistic_background.csv").is_file() and any(
        (path / split / "segments").is_file() for split in ("dev", "test")
    )


def _find_columns(header: list, overrides: dict) -> dict:
    columns = dict(overrides)
    lowered = [h.lower().strip() for h in header]
    for attr, keywords in _HEADER_KEYWORDS.items():
        if attr in columns:
            continue
        for h, low in zip(header, lowered):
            words = set(
                low.replace("?", " ").replace("(", " ").replace(")", " ").replace(",", " ").split()
            )
            # 'age' must be a whole word (not 'language'); the rest may be substrings
            hit = any((k in words) if k == "age" else (k in low) for k in keywords)
            if hit and h not in columns.values():
                columns[attr] = h
                break
    return columns


def read_linguistic_background(
    path, *, columns: dict | None = None, reference_year: int = 2023
) -> dict:
    """speaker -> attributes from ``linguistic_background.csv``."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            found = _find_columns(header, columns or {})
            if "speaker" not in found:
                raise DataError(
                    f"no participant id column among {header[:6]}...",
                    path=path,
                    hint="pass columns={'speaker': '<header>'}",
                )
            speakers = {}
            for number, row in enumerate(reader, 2):
                spk = clean_value(row.get(found["speaker"]))
                if spk is None:
                    raise DataError("empty participant id", path=path, line=number)
                age = None
                for key in ("age", "birth_year"):
                    if key in found and age is None:
                        age = clean_age(row.get(found[key]))
                        if age is not None and age > 1900:
                            age = float(reference_year - age)
                attrs = {
                    "sex": normalise_sex(row.get(found["sex"])) if "sex" in found else None,
                    "age": age,
                    "accent": clean_value(row.get(found["accent"])) if "accent" in found else None,
                    "extra": {
                        k: clean_value(row.get(found[k]))
                        for k in ("ethnicity", "education")
                        if k in found
                    },
                }
                speakers[str(spk)] = attrs
    except (csv.Error, UnicodeDecodeError) as err:
        raise DataError(f"unreadable CSV ({err})", path=path, hint="save it as UTF-8 CSV") from None
    return speakers


def load_edacc_release(
    path,
    *,
    split: str = "test",
    columns: dict | None = None,
    skip_missing: bool = False,
    reference_year: int = 2023,
) -> Manifest:
    root = Path(path)
    split_dir = root / split
    if not (split_dir / "segments").is_file():
        raise DataError(
            f"{split_dir}: no segments file",
            hint="split is 'dev' or 'test' of an edacc_v1.0 folder",
        )
    if not (split_dir / "wav.scp").is_file():
        # The release keeps recordings in data/<recording>.wav.
        recordings = sorted(
            {fields[0] for fields in read_table(split_dir / "segments", rest=False).values()}
        )
        manifest = load_kaldi_dir(
            split_dir,
            skip_missing=skip_missing,
            wav_entries={r: str((root / "data" / f"{r}.wav").resolve()) for r in recordings},
        )
    else:
        manifest = load_kaldi_dir(split_dir, skip_missing=skip_missing)
    speakers = read_linguistic_background(
        root / "linguistic_background.csv", columns=columns, reference_year=reference_year
    )
    unknown = sorted({u.speaker for u in manifest} - set(speakers))
    if unknown:
        raise DataError(
            f"{len(unknown)} speakers of {split} have no row in linguistic_background.csv, "
            f"e.g. {unknown[:3]}",
            path=root / "linguistic_background.csv",
        )
    utterances = [_with_background(utt, speakers[utt.speaker]) for utt in manifest]
    # every conversation opens with a read elicitation passage
    return manifest.replace(utterances, name=f"{root}:{split}", read_passages=True)


def _with_background(utt, attrs: dict):
    """A copy of ``utt`` with its speaker's background row, and its conversation as episode."""
    match = EDACC_ID.match(utt.episode + "-0") if utt.episode else None
    return replace(
        utt,
        episode=match.group("conv") if match else utt.episode,
        sex=attrs["sex"],
        age=attrs["age"],
        accent=attrs["accent"],
        extra={**utt.extra, **{k: v for k, v in attrs["extra"].items() if v is not None}},
    )
