"""One-hot phone features (paper equation 1), relative phone frequencies and distinctiveness."""

import numpy as np
import pytest

from sparc_eval.errors import DataError
from sparc_eval.phones.frequencies import (
    correlate,
    distinctiveness,
    phone_counts,
    relative_frequencies,
)
from sparc_eval.phones.onehot import one_hot, pad_batch
from sparc_eval.phones.phoneset import CMU_PHONES, PHONE_INDEX, PHONES


def test_phone_inventory():
    assert (
        len(CMU_PHONES) == 39
        and PHONES[-1] == "SIL"
        and PHONE_INDEX["AA"] == 0
        and PHONE_INDEX["ZH"] == 38
    )


def test_one_hot_with_durations_matches_equation_1():
    segments = [
        ("SIL", 0.0, 0.2),
        ("S", 0.2, 0.3),
        ("P", 0.3, 0.35),
        ("IY", 0.35, 0.5),
        ("CH", 0.5, 0.6),
    ]
    matrix = one_hot(segments, durations=True, silence=True)
    assert matrix.shape == (5, 40)
    expected = np.zeros((5, 40), dtype=np.float32)
    for t, (phone, start, end) in enumerate(segments):
        expected[t, PHONE_INDEX[phone]] = end - start
    np.testing.assert_allclose(matrix, expected, atol=1e-7)
    # each row has exactly one non-zero entry, in the phone's column, equal to its duration
    assert (np.count_nonzero(matrix, axis=1) == 1).all()
    no_silence = one_hot(segments, durations=True, silence=False)
    assert no_silence.shape == (4, 39) and no_silence[0, PHONE_INDEX["S"]] == pytest.approx(0.1)


def test_phone_only_sets_durations_to_one():
    matrix = one_hot(["S", "P", "IY", "CH"], durations=False)
    assert matrix.shape == (4, 39) and matrix.sum() == 4
    assert [int(np.argmax(r)) for r in matrix] == [PHONE_INDEX[p] for p in ["S", "P", "IY", "CH"]]
    timed = one_hot([("S", 0.0, 0.5), ("IY", 0.5, 0.6)], durations=False)
    assert timed.sum() == 2


def test_bad_phone_sequences():
    with pytest.raises(DataError, match="unknown phone 'AH0'"):
        one_hot(["AH0"], durations=False, utt_id="u1")
    with pytest.raises(DataError, match="durations requested"):
        one_hot(["S"], durations=True)
    assert one_hot([], durations=False).shape == (0, 39)


def test_pad_batch_shapes_and_relative_lengths():
    batch, lengths = pad_batch(
        [np.ones((3, 39), np.float32), np.ones((6, 39), np.float32)], min_length=8
    )
    assert batch.shape == (2, 8, 39)
    np.testing.assert_allclose(lengths, [3 / 8, 6 / 8])
    assert batch[0, 3:].sum() == 0


def test_relative_frequencies_and_distinctiveness_by_hand():
    speakers, freqs = relative_frequencies(
        {
            "a": [["AA", "AA"], ["B"]],  # AA 2/3, B 1/3
            "b": [["AA", "B", "SIL"]],  # AA 1/2, B 1/2 (silence ignored)
            "c": [["Z"]],  # Z only: orthogonal to both
        }
    )
    assert speakers == ["a", "b", "c"]
    np.testing.assert_allclose(freqs.sum(axis=1), 1.0)
    assert freqs[0, PHONE_INDEX["AA"]] == pytest.approx(2 / 3)
    d = distinctiveness(freqs)
    cos_ab = (2 / 3 * 1 / 2 + 1 / 3 * 1 / 2) / (np.hypot(2 / 3, 1 / 3) * np.hypot(1 / 2, 1 / 2))
    np.testing.assert_allclose(d, [((1 - cos_ab) + 1) / 2, ((1 - cos_ab) + 1) / 2, 1.0])
    assert phone_counts([["SIL", "AA"]]).sum() == 1


def test_correlation_is_signed_and_skips_null_eers():
    values = {"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.4, "e": 0.5}
    eers = {"a": 0.40, "b": 0.35, "c": 0.2, "d": 0.1, "e": None}
    result = correlate(values, eers)
    assert (
        result["n"] == 4
        and result["pearson_r"] < -0.9
        and result["spearman_rho"] == pytest.approx(-1.0)
    )
    assert 0 <= result["pearson_p"] < 0.1
    assert correlate({"a": 1, "b": 2}, {"a": 0.1, "b": 0.2})["pearson_r"] is None


def test_distinctiveness_on_librispeech_test_clean(data_dir, tmp_path, capsys):
    """The paper's section 4.1 analysis, computed: its most distinctive speaker 3570 is at the top
    (with the CMU dictionary, 908 follows within 0.5%)."""
    import json

    from sparc_eval.cli import main

    out = tmp_path / "distinct.json"
    code = main(
        [
            "phones",
            "distinctiveness",
            str(data_dir / "librispeech/derived/LibriSpeech/test-clean"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--out",
            str(out),
            "--top",
            "3",
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and lines[0] == "speakers: 40"
    result = json.loads(out.read_text())
    top = result["ranked"][:2]
    assert set(top) == {"3570", "908"}
    assert lines[1].startswith("most distinctive:  " + top[0])
    values = [v["distinctiveness"] for v in result["speakers"].values()]
    assert 0 < min(values) < max(values) < 1
