"""The emotion utility (sparc_eval/utility/emotion.py) on a tiny random audio-classification
snapshot this file builds: UAR and Cohen's kappa by their definitions on hand-made cases, the
agreement path without labels, the prediction cache, clean errors, and the card end to end.
Random weights: this checks the plumbing, never an emotion model's quality."""

import json
import logging
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from sparc_eval.data.manifest import AudioRef, Manifest, Utterance
from sparc_eval.errors import DataError
from sparc_eval.utility.emotion import (
    AGREEMENT_MEASURE,
    UAR_MEASURE,
    EmotionUtility,
    cohens_kappa,
    confusion_matrix,
    raw_agreement,
    unweighted_average_recall,
)
from sparc_eval.utility.metrics import UtilityInput

REPO = Path(__file__).resolve().parents[1]
LABELS = ["neutral", "happy", "angry", "sad"]


def build_snapshot(folder: Path, *, head: bool = True) -> Path:
    """A tiny random Wav2Vec2 audio classifier (or, ``head=False``, the bare encoder) saved as a
    Hugging Face snapshot with its feature extractor."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.Wav2Vec2Config(
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        conv_dim=(16, 16),
        conv_stride=(16, 20),  # 50 frames a second, as real wav2vec 2.0: short sequences
        conv_kernel=(16, 20),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        classifier_proj_size=8,
        vocab_size=8,
        feat_extract_norm="layer",
        do_stable_layer_norm=True,
        initializer_range=0.5,  # wide enough that random weights predict more than one class
        id2label=dict(enumerate(LABELS)),
        label2id={name: i for i, name in enumerate(LABELS)},
    )
    torch.manual_seed(1)
    kind = transformers.Wav2Vec2ForSequenceClassification if head else transformers.Wav2Vec2Model
    kind(config).save_pretrained(folder)
    transformers.Wav2Vec2FeatureExtractor(
        sampling_rate=16000, return_attention_mask=True, do_normalize=True
    ).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    return build_snapshot(tmp_path_factory.mktemp("tiny_ser"))


def _manifest(rows, folder=None) -> Manifest:
    """rows: (id, speaker, label or None); audio at ``folder/<id>.wav`` when given."""
    return Manifest(
        [
            Utterance(
                i,
                spk,
                "a b",
                f"{spk}-ep",
                audio=AudioRef(str(folder / f"{i}.wav")) if folder else AudioRef(f"/nowhere/{i}"),
                extra={} if label is None else {"emotion": label},
            )
            for i, spk, label in rows
        ]
    )


def _predicting(monkeypatch, table: dict) -> None:
    """Predictions looked up by (side, id): the side is the audio folder's name."""

    def predictions(self, utterances, pair):
        return {u.id: table[(Path(u.audio.path).parent.name, u.id)] for u in utterances}

    monkeypatch.setattr(EmotionUtility, "predictions", predictions)


# --- definitions ---------------------------------------------------------------------------------


def test_uar_and_kappa_by_hand():
    # references a a b b c, predictions a b b b a: recalls 1/2, 1, 0 -> UAR 0.5 (accuracy 0.6)
    confusion = confusion_matrix([0, 0, 1, 1, 2], [0, 1, 1, 1, 0], 4)
    assert confusion.tolist()[:3] == [[1, 1, 0, 0], [0, 2, 0, 0], [1, 0, 0, 0]]
    assert unweighted_average_recall(confusion) == pytest.approx(0.5)
    # a class only predicted, never a reference, is not averaged over
    assert unweighted_average_recall(confusion_matrix([0, 0], [0, 3], 4)) == pytest.approx(0.5)
    # original 0 0 1 1, anonymized 0 1 1 1: p_o = 3/4, p_e = 1/2 * 1/4 + 1/2 * 3/4 = 1/2
    agree = confusion_matrix([0, 0, 1, 1], [0, 1, 1, 1], 2)
    assert raw_agreement(agree) == pytest.approx(0.75)
    assert cohens_kappa(agree) == pytest.approx(0.5)
    assert cohens_kappa(confusion_matrix([0, 1, 1], [0, 1, 1], 2)) == pytest.approx(1.0)
    assert cohens_kappa(confusion_matrix([0, 1], [1, 0], 2)) == pytest.approx(-1.0)
    assert np.isnan(cohens_kappa(confusion_matrix([2, 2], [2, 2], 4)))  # p_e = 1: undefined


# --- UAR and agreement through the plug-in -------------------------------------------------------


def test_uar_on_labelled_speech_with_known_predictions(snapshot, monkeypatch):
    rows = [
        ("u1", "A", "Neutral"),  # case-insensitive
        ("u2", "A", "neutral"),
        ("u3", "B", "HAPPY"),
        ("u4", "B", "happy"),
        ("u5", "C", "ang"),  # mapped by label_map
        ("u6", "C", "Frustrated"),  # unmapped: counted, left out
        ("u7", "D", None),  # unlabelled
        ("u8", "D", "sad"),
    ]
    original, anonymized = _manifest(rows, Path("/o")), _manifest(rows, Path("/a"))
    guess_o = dict(u1=0, u2=0, u3=1, u4=1, u5=2, u6=0, u7=0, u8=3)  # all right: UAR 1
    guess_a = dict(
        u1=0, u2=1, u3=1, u4=0, u5=0, u6=0, u7=0, u8=3
    )  # neutral 1/2, happy 1/2, angry 0, sad 1
    table = {("o", i): c for i, c in guess_o.items()} | {("a", i): c for i, c in guess_a.items()}
    _predicting(monkeypatch, table)
    metric = EmotionUtility(str(snapshot), label_map={"ang": "angry"})
    found = metric.compute(UtilityInput("x", original, anonymized, n_boot=200))
    assert found["measure"] == UAR_MEASURE and found["higher_is_better"] is True
    assert found["original"]["value"] == pytest.approx(1.0)
    assert found["value"] == pytest.approx((0.5 + 0.5 + 0 + 1) / 4)
    assert found["difference"]["value"] == pytest.approx(0.5 - 1.0)
    assert found["labels"]["unmapped"] == {"Frustrated": 1} and found["labels"]["unlabelled"] == 1
    assert found["labels"]["mapped"] == 6 and found["utterances"] == 6
    lo, hi = found["ci95"]
    assert 0 <= lo <= hi <= 1 and found["difference"]["ci95"][0] <= 0
    assert -1 <= found["agreement"]["value"] <= 1  # the agreement rides along
    # per class: neutral 1/2, happy 1/2, angry 0, sad 1 on anonymized speech; all 1 on original
    assert found["per_class_recall"]["original"] == dict.fromkeys(LABELS, 1.0)
    assert found["per_class_recall"]["anonymized"] == {
        "neutral": 0.5,
        "happy": 0.5,
        "angry": 0.0,
        "sad": 1.0,
    }
    assert found["confusion"]["anonymized"] == [
        [1, 1, 0, 0],
        [1, 1, 0, 0],
        [1, 0, 0, 0],
        [0, 0, 0, 1],
    ]
    assert found["confusion"]["original"] == np.diag([2, 2, 1, 1]).tolist()
    # predicted shares 2/6 -> 3/6 for neutral, the one that grows most
    assert found["pushed_toward"] == {
        "label": "neutral",
        "original_share": pytest.approx(2 / 6),
        "anonymized_share": 0.5,
    }


def test_agreement_without_labels_is_kappa_not_uar(snapshot, monkeypatch):
    rows = [(f"{s}{k}", s, None) for s in "ABCD" for k in range(2)]
    original, anonymized = _manifest(rows, Path("/o")), _manifest(rows, Path("/a"))
    # original 0 0 1 1 0 0 1 1, anonymized 0 1 1 1 0 1 1 1: p_o 3/4, p_e 1/2 -> kappa 1/2
    first = dict(zip([r[0] for r in rows], [0, 0, 1, 1, 0, 0, 1, 1]))
    second = dict(zip([r[0] for r in rows], [0, 1, 1, 1, 0, 1, 1, 1]))
    table = {("o", i): c for i, c in first.items()} | {("a", i): c for i, c in second.items()}
    _predicting(monkeypatch, table)
    found = EmotionUtility(str(snapshot)).compute(UtilityInput("x", original, anonymized))
    assert found["measure"] == AGREEMENT_MEASURE and "not UAR" in found["measure"]
    assert found["value"] == pytest.approx(0.5) and found["raw_agreement"] == pytest.approx(0.75)
    lo, hi = found["ci95"]
    assert -1 <= lo <= found["value"] <= hi <= 1
    assert "original" not in found and "Cohen's kappa" in found["definition"]
    counts = found["agreement_matrix"]["counts"]  # rows: original predictions, columns: anonymized
    assert [row[:2] for row in counts[:2]] == [[2, 2], [0, 4]] and np.sum(counts) == 8
    assert found["pushed_toward"] == {
        "label": LABELS[1],
        "original_share": 0.5,
        "anonymized_share": 0.75,
    }


def test_the_card_says_where_emotion_is_pushed_and_each_class_recall():
    from sparc_eval.jobs.card.utility_report import _emotion_lines

    labelled = {
        "pushed_toward": {"label": "neutral", "original_share": 1 / 3, "anonymized_share": 0.5},
        "per_class_recall": {
            "original": {"neutral": 1.0, "sad": 1.0},
            "anonymized": {"neutral": 0.5, "sad": 1.0},
        },
    }
    lines = _emotion_lines("mcadams", labelled)
    assert (
        "predicted neutral more often (33% of the original utterances, 50% anonymized)" in lines[0]
    )
    assert lines[1].endswith("neutral 1.00 -> 0.50, sad 1.00 -> 1.00")
    unlabelled = {"agreement": {"pushed_toward": None}}  # no class grows: nothing to say
    assert _emotion_lines("mcadams", unlabelled) == []


# --- real predictions: batching, resampling, the cache -------------------------------------------


def _tones(folder: Path, ids, rate: int = 16000) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for k, i in enumerate(ids):
        n = rate * (1 + k % 3) // 2
        t = np.arange(n) / rate
        wav = 0.3 * np.sin(2 * np.pi * (100 + 40 * k) * t) + 0.02 * rng.normal(size=n)
        sf.write(folder / f"{i}.wav", wav.astype(np.float32), rate)


def test_predictions_are_batched_cached_and_resampled_once(snapshot, tmp_path, caplog):
    rows = [(f"{s}{k}", s, None) for s in "ABC" for k in range(3)]
    ids = [r[0] for r in rows]
    _tones(tmp_path / "o", ids)
    _tones(tmp_path / "a", ids, rate=8000)  # the anonymized speech at another rate
    original, anonymized = _manifest(rows, tmp_path / "o"), _manifest(rows, tmp_path / "a")
    pair = UtilityInput("x", original, anonymized, cache_folder=str(tmp_path / "cache"))
    metric = EmotionUtility(str(snapshot), batch_size=4)
    with caplog.at_level(logging.INFO, logger="sparc_eval.utility.emotion"):
        first = metric.compute(pair)
    assert first["predicted_now"] == 18 and first["measure"] == AGREEMENT_MEASURE
    assert sum("resampling audio from 8000 Hz" in r.message for r in caplog.records) == 1
    one_by_one = EmotionUtility(str(snapshot), batch_size=1)
    single = one_by_one.predictions(list(original), UtilityInput("x", original, original))
    batched = metric.predictions(list(original), pair)
    assert single == batched  # padding with a mask does not change a prediction
    again = EmotionUtility(str(snapshot)).compute(pair)
    assert again["predicted_now"] == 0  # every prediction came from the cache
    assert {k: again[k] for k in ("value", "raw_agreement")} == {
        k: first[k] for k in ("value", "raw_agreement")
    }
    assert first["model"]["labels"] == LABELS and len(first["model"]["digest"]) == 16


# --- errors and registration ---------------------------------------------------------------------


def test_a_hub_id_or_a_folder_of_another_kind_is_a_clean_error(tmp_path):
    with pytest.raises(DataError, match="hub id.*never downloads.*download it elsewhere"):
        EmotionUtility("superb/wav2vec2-base-superb-er").model()
    with pytest.raises(DataError, match="is not a folder"):
        EmotionUtility(str(tmp_path / "missing")).model()
    encoder = build_snapshot(tmp_path / "encoder_only", head=False)
    with pytest.raises(DataError, match=r"encoder_only.*no classification head.*ForSequence"):
        EmotionUtility(str(encoder)).model()
    (tmp_path / "sb").mkdir()
    (tmp_path / "sb" / "hyperparams.yaml").write_text("modules: {}\n")
    with pytest.raises(DataError, match=r"sb: not a Hugging Face .*SpeechBrain"):
        EmotionUtility(str(tmp_path / "sb")).model()


def test_registered_as_emotion_by_kind(snapshot, monkeypatch):
    from sparc_eval import plugins
    from sparc_eval.jobs.card.settings import utility_metrics
    from sparc_eval.utility.metrics import UTILITY_METRIC_GROUP

    real = plugins.entry_points  # what pyproject's `emotion = ...` line does once installed
    entry = EntryPoint("emotion", "sparc_eval.utility.emotion:EmotionUtility", UTILITY_METRIC_GROUP)
    monkeypatch.setattr(
        plugins,
        "entry_points",
        lambda g: {**real(g), "emotion": entry} if g == UTILITY_METRIC_GROUP else real(g),
    )
    spec = {"kind": "emotion", "source": str(snapshot), "batch_size": 2}
    built = utility_metrics({"utility": {"emotion": spec}})["emotion"]
    assert isinstance(built, EmotionUtility) and built.batch_size == 2


# --- the card end to end -------------------------------------------------------------------------

EMOTION_CARD = """
seed: 0
anonymizer: !PLACEHOLDER
anonymizer_options: {{}}
output_folder: !PLACEHOLDER
cache_folder: !PLACEHOLDER
progress: False
plots: False
num_threads: 1
pseudonymise: False
data_folder: !PLACEHOLDER
scenarios: [ignorant]
attackers:
    bag:
        hparams: {repo}/hparams/bag_of_phones.yaml
content_attacker: bag
utility:
    emotion: !new:sparc_eval.utility.emotion.EmotionUtility
        source: {source}
utility_enabled: [emotion]
n_boot: 100
"""


@pytest.mark.slow("the card with a transformers classifier: about 7 s")
def test_the_card_runs_with_the_emotion_plug_in_on_the_demo_corpus(snapshot, tmp_path, recipe):
    from sparc_eval.demo import build_demo_corpus

    sys.path.insert(0, str(REPO))
    corpus = tmp_path / "demo"
    build_demo_corpus(corpus, mode="reading", n_speakers=8, utts_per_speaker=6, progress=False)
    out = tmp_path / "card"
    hparams = tmp_path / "card.yaml"
    hparams.write_text(EMOTION_CARD.format(repo=REPO, source=snapshot))
    argv = [str(hparams), f"--data_folder={corpus}", f"--output_folder={out}"]
    argv += [f"--cache_folder={tmp_path / 'cache'}", "--n_enroll=2", "--anonymizer=identity"]
    assert recipe("evaluate_anonymizer").main(argv) == 0
    found = json.loads((out / "results.json").read_text())["utility"]["identity"]["emotion"]
    assert found["measure"] == AGREEMENT_MEASURE  # the demo corpus has no emotion labels
    assert found["raw_agreement"] == 1.0  # identity: the same audio, the same predictions
    assert found["value"] in (1.0, None) and found["utterances"] > 0
    card = (out / "card.md").read_text()
    utility = card[card.index("## Utility") :].splitlines()
    assert utility[2] == "| anonymizer | emotion |"
    row = utility[4]
    assert row.startswith("| identity | 1.000") or "n/a" in row
    assert f"- emotion is the {AGREEMENT_MEASURE}" in card  # named for what it is
