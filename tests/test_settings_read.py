"""Settings read from hparams by one typed reader (issue 64, item 2, first part): a value is cast to
its field's type and checked against its range before any work, naming the key; each default is
set once, on its field, and the hparams files that show a default agree with it."""

import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Optional

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sparc_eval.data.plan import DataSettings  # noqa: E402
from sparc_eval.errors import DataError  # noqa: E402
from sparc_eval.hparams import (  # noqa: E402
    HparamsFile,
    bounded,
    has_range,
    hparams_keys,
    library_only,
    read_fields,
)
from sparc_eval.jobs.card.settings import CardSettings  # noqa: E402
from sparc_eval.metrics.settings import (  # noqa: E402
    BootstrapSettings,
    EvaluationSettings,
    SegmentSettings,
    evaluation_settings,
    trial_settings,
)


@dataclass(frozen=True)
class Toy:
    count: int = bounded(3, minimum=1)
    share: float = bounded(0.5, minimum=0.0, maximum=1.0)
    mode: str = bounded("a", choices=("a", "b"))
    bins: Optional[int] = bounded(None, minimum=2)
    names: Optional[tuple] = None


KEYS = {"count": "count", "share": "share", "mode": "mode", "bins": "bins", "names": "names"}


def test_values_are_cast_and_absent_or_null_keys_take_the_default():
    found = read_fields(Toy, {"count": 4.0, "share": 1, "bins": None, "names": ["x"]}, KEYS)
    assert found == {"count": 4, "share": 1.0, "names": ("x",)}
    assert Toy(**found) == Toy(count=4, share=1.0, names=("x",))
    assert read_fields(Toy, {}, KEYS) == {}


@pytest.mark.parametrize(
    "hp, message",
    [
        ({"count": -3}, "count must be >= 1, not -3"),
        ({"count": 2.5}, "count must be an int, not 2.5"),
        ({"count": True}, "count must be an int"),
        ({"count": "many"}, "count must be an int, not 'many'"),
        ({"share": 1.5}, r"share must be in \[0.0, 1.0\], not 1.5"),
        ({"share": "half"}, "share must be a float"),
        ({"mode": "c"}, "mode must be one of a, b, not 'c'"),
        ({"bins": 1}, "bins must be >= 2, not 1"),
    ],
)
def test_a_bad_value_is_an_error_naming_its_key(hp, message):
    with pytest.raises(DataError, match=message):
        read_fields(Toy, hp, KEYS)


def test_the_evaluation_settings_refuse_bad_values_before_any_work():
    with pytest.raises(DataError, match="min_verdict_speakers must be >= 1, not -3"):
        EvaluationSettings.from_hparams({"min_verdict_speakers": -3})
    with pytest.raises(DataError, match="bootstrap_unit must be one of"):
        EvaluationSettings.from_hparams({"bootstrap_unit": "utterance"})
    # 0 was silently the default before (``or MIN_SPEAKERS``); now it is refused by name
    with pytest.raises(DataError, match="min_verdict_speakers must be >= 1, not 0"):
        EvaluationSettings.from_hparams({"min_verdict_speakers": 0})
    got = EvaluationSettings.from_hparams({"n_boot": 200, "segment_attributes": "sex"})
    assert got.bootstrap.n_boot == 200 and got.segments.attributes == ("sex",)
    assert EvaluationSettings.keys() == {
        *hparams_keys(BootstrapSettings),
        *hparams_keys(SegmentSettings),
        "min_verdict_speakers",
    }


def test_the_keys_come_from_the_fields():
    """A field's hparams key is its name unless it names another; library-only and nested
    settings are no keys; the reader takes every key without a hand-kept list."""

    @dataclass(frozen=True)
    class Part:
        unit: str = bounded("a", key="part_unit", choices=("a", "b"))
        level: float = library_only(0.95)
        count: int = bounded(2, minimum=1)

    assert hparams_keys(Part) == {"part_unit": "unit", "count": "count"}
    assert read_fields(Part, {"part_unit": "b", "level": 0.5, "count": 3}) == {
        "unit": "b",
        "count": 3,
    }
    assert hparams_keys(BootstrapSettings) == {
        "n_boot": "n_boot",
        "seed": "seed",
        "bootstrap_unit": "unit",
        "bootstrap_method": "method",
        "bootstrap_bins": "bins",
    }
    assert "bootstrap" not in hparams_keys(EvaluationSettings)
    with pytest.raises(DataError, match="bootstrap_unit must be one of"):
        evaluation_settings(bootstrap_unit="utterance")
    with pytest.raises(TypeError, match="n_bot"):
        trial_settings(n_bot=3)
    assert (
        trial_settings().bootstrap.unit == "trial"
        and EvaluationSettings().bootstrap.unit == "two_way"
    )


def test_the_data_settings_refuse_bad_values_by_name():
    with pytest.raises(DataError, match="n_enroll must be >= 1, not -1"):
        DataSettings.from_hparams({"n_enroll": -1})
    with pytest.raises(DataError, match=r"eval_speaker_fraction must be in \[0.0, 1.0\]"):
        DataSettings.from_hparams({"eval_speaker_fraction": 1.5})
    with pytest.raises(DataError, match="max_per_speaker must be an int"):
        DataSettings.from_hparams({"max_per_speaker": "all"})
    assert DataSettings.from_hparams({"n_enroll": 5.0}).n_enroll == 5


def test_the_card_refuses_a_bad_threshold_by_name(tmp_path):
    from sparc_eval.hparams import load_hparams

    for key, value, message in (
        ("min_verdict_speakers", -3, "min_verdict_speakers must be >= 1"),
        ("max_ci_width", 2, r"max_ci_width must be in \[0.0, 1.0\]"),
        ("weak_attacker_eer", 0.7, r"weak_attacker_eer must be in \[0.0, 0.5\]"),
    ):
        hp = load_hparams(
            REPO / "hparams" / "evaluate.yaml",
            {"anonymizer": "mcadams", key: value, "output_folder": str(tmp_path)},
        )
        with pytest.raises(DataError, match=message):
            CardSettings.from_hparams(hp)


def _defaults() -> dict:
    """hparams key -> the default its field defines."""
    out = {}
    for cls in (BootstrapSettings, SegmentSettings):
        by_name, keys = {f.name: f.default for f in fields(cls)}, hparams_keys(cls)
        out.update({key: by_name[name] for key, name in keys.items()})
    card = {f.name: f.default for f in fields(CardSettings)}
    out["min_verdict_speakers"] = EvaluationSettings().min_verdict_speakers
    # plots, progress and num_threads: switches the shipped files set for their machines, not defaults
    chosen = ("plots", "progress", "num_threads")
    out.update({k: card[k] for k in CardSettings.plain_keys() if k not in chosen})
    out.update({f.name: f.default for f in fields(DataSettings) if has_range(f)})
    return out


def test_the_hparams_files_show_the_defaults_the_fields_define():
    """A file that writes an evaluation key without naming another value shows its default; the
    defaults are set once, on the fields, so the files must agree with them."""
    defaults, found = _defaults(), []
    for path in sorted((REPO / "hparams").rglob("*.yaml")):
        for key, text in HparamsFile(path).written.items():
            if key not in defaults or key == "seed" or not text or text.startswith("!"):
                continue
            value = yaml.safe_load(text)
            # a list (segment_attributes) is a choice the file makes, not a default it shows
            if value is not None and not isinstance(value, list) and value != defaults[key]:
                found.append(
                    f"{path.relative_to(REPO)}: {key}: {value!r} (default {defaults[key]!r})"
                )
    assert found == []


def test_a_large_integer_stays_exact_and_an_exclusive_bound_holds():
    assert DataSettings.from_hparams({"split_seed": 2**60 + 1}).split_seed == 2**60 + 1
    with pytest.raises(
        DataError, match=r"train_speaker_fraction must be > 0.0 and <= 1.0, not 0.0"
    ):
        DataSettings.from_hparams({"train_speaker_fraction": 0})
    assert DataSettings.from_hparams({"train_speaker_fraction": 0.5}).train_speaker_fraction == 0.5
