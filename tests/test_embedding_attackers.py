"""Scoring rules of embedding attackers (sparc_eval/attack/embedding_scoring.py) on hand-made
embeddings, and the shared base (attackers/embedding.py) on a fake encoder over tiny wav files."""

import json
import logging
import zlib

import numpy as np
import pytest
import soundfile as sf

from attackers.embedding import BACKEND_ADAPTATION_LABEL, EmbeddingAttacker
from sparc_eval.attack import run_attack
from sparc_eval.attack.embedding_scoring import fit_backend, score_embeddings
from sparc_eval.attack.evaluation import BootstrapSettings, EvaluationSettings
from sparc_eval.attack.scoring import score_pairs
from sparc_eval.data.manifest import AudioRef, Manifest, Utterance
from sparc_eval.data.plan import DataPlan
from sparc_eval.data.splits import Split
from sparc_eval.errors import DataError
from sparc_eval.metrics import eer

# --- scoring rules on hand-made embeddings -------------------------------------------------------

TAKES = {
    "a1": np.array([1.0, 0.0]),
    "a2": np.array([0.0, 1.0]),
    "b1": np.array([-1.0, 0.0]),
    "t": np.array([1.0, 0.0]),
}
ENROLL = {"A": ["a1", "a2"], "B": ["b1"]}
PAIRS = [("A", "t", True), ("B", "t", False)]


def test_cosine_is_todays_speaker_mean_rule():
    scores = score_embeddings(TAKES, ENROLL, PAIRS)
    np.testing.assert_allclose(scores, score_pairs(TAKES, ENROLL, PAIRS))
    np.testing.assert_allclose(
        scores, [np.sqrt(0.5), -1.0]
    )  # the mean of A's takes is 45 degrees off


def test_max_scores_the_closest_enrollment_take():
    scores = score_embeddings(TAKES, ENROLL, PAIRS, scoring="max")
    np.testing.assert_allclose(scores, [1.0, -1.0])  # a1 is the trial itself


def _nuisance_speakers(n_speakers: int, n_utts: int, seed: int, dim: int = 8) -> tuple:
    """Speakers differ along dims 0-4; each utterance varies a lot along dims 5-6 (a channel),
    which swamps cosine but which PLDA learns is within-speaker variation."""
    rng = np.random.default_rng(seed)
    means = np.zeros((n_speakers, dim))
    means[:, :5] = rng.normal(size=(n_speakers, 5))
    x, labels = [], []
    for s in range(n_speakers):
        noise = 0.2 * rng.normal(size=(n_utts, dim))
        noise[:, 5:7] += 5.0 * rng.normal(size=(n_utts, 2))
        x.append(means[s] + noise)
        labels += [f"s{seed}_{s}"] * n_utts
    return np.vstack(x), labels


def _eers(backend, x, labels, n_enroll: int = 3) -> tuple:
    ids = [f"u{i}" for i in range(len(x))]
    embeddings = dict(zip(ids, x))
    enroll, trials = {}, []
    for uid, spk in zip(ids, labels):
        (enroll.setdefault(spk, []) if len(enroll.get(spk, [])) < n_enroll else trials).append(uid)
    utt2spk = dict(zip(ids, labels))
    pairs = [(s, t, utt2spk[t] == s) for t in trials for s in sorted(enroll)]
    target = [p[2] for p in pairs]
    cosine = score_embeddings(embeddings, enroll, pairs)
    plda = score_embeddings(embeddings, enroll, pairs, scoring="plda", backend=backend)
    return eer(cosine, target).eer, eer(plda, target).eer


def test_plda_separates_speakers_where_cosine_is_swamped_by_a_nuisance():
    backend = fit_backend(*_nuisance_speakers(12, 20, seed=0))
    assert backend.lda_dim == 8 and backend.notes == []  # min(dim 8, 12 speakers - 1)
    cosine_eer, plda_eer = _eers(backend, *_nuisance_speakers(8, 8, seed=1))
    assert cosine_eer > 0.25  # the nuisance dominates the angle
    assert plda_eer < 0.05 and plda_eer < cosine_eer / 5


def test_lda_dimension_is_clamped_to_speakers_minus_one_with_a_note():
    x, labels = _nuisance_speakers(4, 10, seed=2)
    assert fit_backend(x, labels).lda_dim == 3
    clamped = fit_backend(x, labels, lda_dim=10)
    assert clamped.lda_dim == 3 and "lda_dim 10 clamped to 3" in clamped.notes[0]
    assert fit_backend(x, labels, lda_dim=2).lda_dim == 2
    assert clamped.transform(x).shape == (40, 3)


def test_scoring_errors_name_what_to_do():
    with pytest.raises(DataError, match="unknown scoring 'euclid'.*one of cosine, max, plda"):
        score_embeddings(TAKES, ENROLL, PAIRS, scoring="euclid")
    with pytest.raises(DataError, match="plda scoring needs a fitted back-end"):
        score_embeddings(TAKES, ENROLL, PAIRS, scoring="plda")
    with pytest.raises(DataError, match="at least 2 training speakers"):
        fit_backend(np.ones((5, 3)), ["s"] * 5)
    with pytest.raises(DataError, match="one with two or more utterances"):
        fit_backend(np.eye(3), ["a", "b", "c"])
    with pytest.raises(DataError, match="unknown scoring"):
        FakeEncoder(scoring="cos")


# --- the base class on a fake encoder ------------------------------------------------------------

FILE_RATE = 16000  # the fake encoder works at 8 kHz: every file is resampled


class FakeEncoder(EmbeddingAttacker):
    """Band energies of the spectrum: tones of different pitch are different 'voices'."""

    name = "fake"
    sample_rate = 8000
    n_loads = 0

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.batches, self._model = [], None

    def _load(self):
        if self._model is None:
            FakeEncoder.n_loads += 1
            self._model = np.linspace(0, 1, 17)

    def encoder_settings(self):
        return {"encoder": "fake", "version": "1", "weights": "none"}

    def _embed_waves(self, waves):
        self.batches.append(len(waves))
        assert all(w.dtype == np.float32 and w.ndim == 1 for w in waves)
        spectra = [np.abs(np.fft.rfft(w, n=512))[:256] for w in waves]
        return np.stack([s.reshape(16, 16).sum(axis=1) for s in spectra])


def _utterance(folder, utt_id: str, speaker: str, pitch: float, seed: int) -> Utterance:
    rng = np.random.default_rng(seed)
    t = np.arange(int(0.1 * FILE_RATE)) / FILE_RATE
    wave = 0.5 * np.sin(2 * np.pi * pitch * t) + 0.05 * rng.normal(size=t.size)
    path = folder / f"{utt_id}.wav"
    sf.write(path, wave.astype(np.float32), FILE_RATE)
    return Utterance(utt_id, speaker, audio=AudioRef(str(path)), duration=0.1)


def _corpus(folder, speakers: dict, n_utts: int, tag: str) -> Manifest:
    folder.mkdir(exist_ok=True)
    utts = [
        _utterance(
            folder,
            f"{tag}{spk}-{i}",
            spk,
            pitch * (1 + 0.01 * i),
            seed=zlib.crc32(f"{tag}/{spk}/{i}".encode()) % 1000,
        )
        for spk, pitch in speakers.items()
        for i in range(n_utts)
    ]
    return Manifest(utts, name=tag)


@pytest.fixture
def plan(tmp_path) -> DataPlan:
    train = _corpus(tmp_path / "train", {"t1": 300, "t2": 700, "t3": 1100, "t4": 1500}, 4, "tr")
    evaluation = _corpus(tmp_path / "eval", {"e1": 500, "e2": 900, "e3": 1300}, 4, "ev")
    by_speaker = {}
    for u in evaluation:
        by_speaker.setdefault(u.speaker, []).append(u.id)
    enroll = {s: ids[:2] for s, ids in by_speaker.items()}
    trial_ids = [i for ids in by_speaker.values() for i in ids[2:]]
    split = Split(enroll, trial_ids, source="hand-made")
    return DataPlan(train, evaluation, evaluation, split, evaluation)


def test_embeddings_are_batched_cached_and_resampling_is_said_once(plan, tmp_path, caplog):
    attacker = FakeEncoder(cache_folder=tmp_path / "cache", batch_size=4)
    with caplog.at_level(logging.INFO, logger="sparc_eval.attackers.embedding"):
        vectors = attacker.embeddings(plan)
    assert len(vectors) == 12 and attacker.n_embedded == 12 and attacker.batches == [4, 4, 4]
    said = [r.getMessage() for r in caplog.records if "resampling" in r.getMessage()]
    assert len(said) == 1 and "16000 Hz to the encoder's 8000 Hz" in said[0]
    assert (tmp_path / "cache" / "fake").is_dir() and "embeddings" in attacker.timings_s
    again = FakeEncoder(cache_folder=tmp_path / "cache", batch_size=4)
    cached = again.embeddings(plan)
    assert again.n_embedded == 0 and again.batches == []
    assert all(np.array_equal(cached[k], vectors[k]) for k in vectors)


def test_cosine_and_max_need_no_training_and_tell_the_voices_apart(plan, tmp_path):
    for scoring in ("cosine", "max"):
        attacker = FakeEncoder(cache_folder=tmp_path / "cache", scoring=scoring)
        assert attacker.needs.training is False and attacker.needs.audio
        attacker.prepare(plan)
        trials = attacker.score(plan)
        assert len(trials) == 6 * 3 and eer(trials.score, trials.label).eer == 0.0
        assert attacker.notes == {} and attacker.scenario_label(plan) == "original"
    assert "max_similarity_scoring" in attacker.deviations(plan)
    assert attacker.describe()["scoring"] == "max"


def test_semi_informed_is_refused_unless_plda_adapts_the_back_end(plan, tmp_path):
    plan.scenario = "semi-informed"
    cosine = FakeEncoder(cache_folder=tmp_path / "cache")
    why = cosine.refusal(plan)
    assert "cannot run the semi-informed scenario" in why and "never trained" in why
    with pytest.raises(DataError, match="cannot run the semi-informed scenario"):
        cosine.prepare(plan)
    assert not (tmp_path / "cache").exists()
    plda = FakeEncoder(cache_folder=tmp_path / "cache", scoring="plda")
    assert plda.refusal(plan) is None and plda.needs.training
    assert plda.scenario_label(plan) == BACKEND_ADAPTATION_LABEL == "semi-informed (back-end)"
    assert {"plda_scoring", "backend_adaptation"} <= set(plda.deviations(plan))


def test_plda_run_records_its_back_end_against_cosine(plan, tmp_path):
    attacker = FakeEncoder(cache_folder=tmp_path / "cache", scoring="plda", lda_dim=8)
    attacker.prepare(plan)  # embeds the training speakers too
    assert attacker.n_embedded == 16 + 12
    settings = EvaluationSettings(bootstrap=BootstrapSettings(n_boot=20))
    result = run_attack(attacker, plan, tmp_path / "out", settings=settings, plots=False)
    run = json.loads(result.results_path.read_text())["run"]
    backend = run["attacker_notes"]["backend"]
    assert backend["lda_dim"] == 3 and "lda_dim 8 clamped to 3" in backend["notes"][0]
    assert backend["beats_cosine"] == (backend["plda_eer"] < backend["cosine_eer"])
    if not backend["beats_cosine"]:
        assert "does not beat cosine" in backend["notes"][-1]
    assert run["scenario_label"] == "original" and run["scoring"] == "plda"
    assert "backend" in run["timings_s"] and attacker.n_embedded == 16 + 12  # all cached by prepare
