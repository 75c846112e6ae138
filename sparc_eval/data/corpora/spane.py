"""SpAnE datafiles: JSON lines ``{"path", "label", "text", "duration", "gender", ...}``.

EdAcc's lists (``edacc-test.txt``) carry more speaker fields (age, ethnicity, education,
self-reported accent, n_languages, start_english_age) and use bare ``NaN`` for missing values,
which Python's ``json`` accepts. Paths hold a ``{root}`` placeholder, replaced by ``root``.
The utterance id is the file stem; the episode is the EdAcc conversation (``EDACC-C29`` for
``EDACC-C29_P2-000000123``: parts of one conversation are one episode) or the LibriSpeech chapter.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ...errors import DataError
from ..manifest import (
    AudioRef,
    Manifest,
    Utterance,
    clean_age,
    clean_value,
    normalise_sex,
    read_json_lines,
    resolve_audio,
)
from .kaldi import LIBRISPEECH_ID
from .registry import json_lines_keys

EDACC_ID = re.compile(r"^(?P<conv>EDACC-C\d+)(?:_P\d+)?-\d+$")
_CORE = {"path", "label", "text", "duration", "gender", "age", "accent"}


class SpAnELoader:
    """A SpAnE (or EdAcc) datafile: JSON lines whose first record has ``path`` and ``label``."""

    name = "spane"
    priority = 50

    def detects(self, path: Path) -> bool:
        return not path.is_dir() and {"path", "label"} <= json_lines_keys(path)

    def load(self, path, *, root=None, skip_missing: bool = False, **_unused) -> Manifest:
        return load_spane_datafile(path, root=root, skip_missing=skip_missing)


def episode_of(utt_id: str, speaker: str):
    match = EDACC_ID.match(utt_id)
    if match:
        return match.group("conv")
    match = LIBRISPEECH_ID.match(utt_id)
    if match and match.group("spk") == speaker:
        return match.group("chapter")
    return None


def is_spane_datafile(path) -> bool:
    try:
        with open(path, encoding="utf-8") as handle:
            first = json.loads(handle.readline())
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(first, dict) and {"path", "label"} <= set(first)


def load_spane_datafile(path, *, root=None, skip_missing: bool = False) -> Manifest:
    path = Path(path)
    utterances = []
    for number, record in read_json_lines(
        path, hint="the file may be truncated; restore it from the release"
    ):
        if not isinstance(record, dict):
            raise DataError("expected a JSON object", path=path, line=number)
        missing = {"path", "label"} - set(record)
        if missing:
            raise DataError(f"missing field(s) {sorted(missing)}", path=path, line=number)
        audio_path = str(record["path"])
        if root is not None:
            audio_path = audio_path.replace("{root}", str(Path(root).resolve()))
        utt_id = Path(audio_path).stem
        speaker = str(record["label"])
        duration = clean_value(record.get("duration"))
        extra = {k: clean_value(v) for k, v in record.items() if k not in _CORE}
        utterances.append(
            Utterance(
                id=utt_id,
                speaker=speaker,
                text=(record.get("text") or "").strip(),
                episode=episode_of(utt_id, speaker),
                audio=AudioRef(audio_path),
                duration=None if duration is None else float(duration),
                sex=normalise_sex(record.get("gender")),
                age=clean_age(record.get("age")),
                accent=clean_value(record.get("accent")),
                extra={k: v for k, v in extra.items() if v is not None},
            )
        )
    utterances = resolve_audio(utterances, name=str(path), skip_missing=skip_missing)
    # EdAcc conversations open with a read elicitation passage (sparc_eval.text_trials.shared_text)
    edacc = any(EDACC_ID.match(u.id) for u in utterances)
    return Manifest(utterances, name=str(path), read_passages=edacc).validate()
