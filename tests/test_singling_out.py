"""Singling out (Vauquier et al., Interspeech 2025): the same outcomes as their reference package
``voice-anonymization-legal-eval`` on the same embeddings and seed, and hand-made cases that pin
the isolation rule and the not-applicable reasons."""

from dataclasses import replace

import numpy as np
import pytest

from sparc_eval.metrics.singling_out import (
    SinglingOutSettings,
    chance_rate,
    isolation_outcomes,
    min_units,
    paper_speaker_counts,
    prepare,
    singling_out_block,
)

FAST = SinglingOutSettings(n_folds=3, n_boot=200)


def unit(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def corpus(n_speakers=30, n_test=12, n_enroll=3, dim=16, spread=1.0, seed=0):
    """(embeddings, utt2spk, enroll): speaker sNN has n_enroll enrollment and n_test other
    utterances, each its speaker's direction plus noise (``spread``: how much noise)."""
    rng = np.random.default_rng(seed)
    embeddings, utt2spk, enroll = {}, {}, {}
    for i in range(n_speakers):
        spk, centre = f"s{i:02d}", rng.normal(size=dim)
        for j in range(n_enroll + n_test):
            utt = f"{spk}-u{j:02d}"
            embeddings[utt] = unit(centre + spread * rng.normal(size=dim))
            utt2spk[utt] = spk
        enroll[spk] = [f"{spk}-u{j:02d}" for j in range(n_enroll)]
    return embeddings, utt2spk, enroll


def legal_eval_sweep(embeddings, enroll, test_spk2utt, s, counts):
    """The reference package's sweep on the same material, speakers in sorted order."""
    from legal_eval.embeddings import build_speaker_embeddings
    from legal_eval.sweeps import singling_out_sweep

    predicates = build_speaker_embeddings({k: enroll[k] for k in sorted(enroll)}, embeddings)
    return singling_out_sweep(
        predicates,
        {k: test_spk2utt[k] for k in sorted(test_spk2utt)},
        embeddings,
        conversation_length=s.conversation_length,
        speaker_counts=counts,
        n_runs=s.n_runs,
        n_folds=s.n_folds,
        max_calibration=s.n_calibration,
        seed=s.seed,
        vary_folds=s.vary_folds,
    )


def assert_same_as_legal_eval(block, outcomes, reference, counts):
    for n in counts:
        mine = outcomes[n].mean(axis=2).ravel()  # fold-major, speakers in enrollment order
        assert mine.tolist() == reference.values[n], n
        assert block["per_N"][str(n)]["rate"] == pytest.approx(reference.mean()[n], abs=1e-12)
        assert block["per_N"][str(n)]["std"] == pytest.approx(reference.std()[n], abs=1e-12)


# --- agreement with the reference package ---------------------------------------------------------


@pytest.mark.parametrize(
    "length, vary_folds, seed", [(1, True, 0), (3, True, 7), (1, False, 3)], ids=str
)
def test_same_outcomes_as_legal_eval(length, vary_folds, seed):
    embeddings, utt2spk, enroll = corpus(n_speakers=32, spread=1.2, seed=seed)
    # a speaker with too few utterances (left out), one only enrolled, one never enrolled
    for utt in [u for u in embeddings if u.startswith("s00-") and u >= "s00-u08"]:
        del embeddings[utt], utt2spk[utt]
    embeddings.update({"s99-u00": unit(np.ones(16)), "s99-u01": unit(np.arange(16.0))})
    utt2spk.update({"s99-u00": "s99", "s99-u01": "s99"})
    enroll["s99"] = ["s99-u00", "s99-u01"]
    del enroll["s31"]
    s = SinglingOutSettings(conversation_length=length, vary_folds=vary_folds, seed=seed, n_folds=4)
    counts = [2, 10, 30]
    s = replace(s, speaker_counts=tuple(counts))

    block = singling_out_block(embeddings, utt2spk, enroll=enroll, settings=s)
    data = prepare(embeddings, utt2spk, enroll, None, s)
    held = {u for ids in enroll.values() for u in ids}
    spk2utt = {}
    for utt in sorted(embeddings):
        if utt not in held:
            spk2utt.setdefault(utt2spk[utt], []).append(utt)
    eligible = {k: v for k, v in spk2utt.items() if k != "s00"}
    reference = legal_eval_sweep(embeddings, enroll, eligible, s, counts)

    assert block["n_dataset_speakers"] == 31 and block["n_excluded_speakers"] == 1
    assert block["n_speakers"] == 30  # s31 is not enrolled; s99 and s00 have no test material
    assert_same_as_legal_eval(block, isolation_outcomes(data, counts, s), reference, counts)


def test_episodes_as_conversation_units_agree_with_legal_eval_on_episode_means():
    embeddings, utt2spk, enroll = corpus(n_speakers=20, n_test=24, spread=1.5, seed=5)
    held = {u for ids in enroll.values() for u in ids}
    episode = {u: f"{u[:3]}-e{int(u[-2:]) // 2}" for u in embeddings if u not in held}
    s = replace(FAST, speaker_counts=(5, 20))
    block = singling_out_block(
        embeddings, utt2spk, enroll=enroll, conversation_of=episode, settings=s
    )

    # the reference, given one "utterance" per episode: the mean of its two utterances
    means, spk2utt = dict(embeddings), {}
    for ep in sorted(set(episode.values())):
        means[ep] = unit(np.mean([embeddings[u] for u in episode if episode[u] == ep], axis=0))
        spk2utt.setdefault(ep[:3], []).append(ep)
    reference = legal_eval_sweep(means, enroll, spk2utt, s, [5, 20])
    data = prepare(embeddings, utt2spk, enroll, episode, s)
    assert block["conversation_unit"] == "episode" and block["n_dataset_speakers"] == 20
    assert_same_as_legal_eval(block, isolation_outcomes(data, [5, 20], s), reference, [5, 20])


def test_the_paper_grid_is_legal_eval_grid_and_chance_tends_to_exp_minus_one():
    from legal_eval.sweeps import geometric_speaker_counts

    for n in (30, 40, 100, 101, 3443, 22015):
        assert paper_speaker_counts(n) == geometric_speaker_counts(n), n
    assert paper_speaker_counts(22015)[-3:] == [6400, 12800, 22015]  # the paper's Figure 1
    assert paper_speaker_counts(12) == [12]
    assert chance_rate(2) == 0.5 and abs(chance_rate(10**6) - np.exp(-1)) < 1e-6
    assert (min_units(1, 9), min_units(3, 9), min_units(30, 9)) == (10, 8, 61)


# --- hand-made cases --------------------------------------------------------------------------------


def one_hot_corpus(n_speakers, n_test=10, same=False):
    """Every utterance of speaker i is the basis vector e_i (all e_0 when ``same``)."""
    embeddings, utt2spk, enroll = {}, {}, {}
    for i in range(n_speakers):
        vector = np.eye(n_speakers)[0 if same else i]
        spk = f"s{i:02d}"
        for j in range(n_test + 1):
            embeddings[f"{spk}-{j:02d}"], utt2spk[f"{spk}-{j:02d}"] = vector, spk
        enroll[spk] = [f"{spk}-00"]
    return embeddings, utt2spk, enroll


def test_perfectly_separable_speakers_are_always_singled_out():
    # own calibration scores 1, the others 0: the threshold is 0.5 and only the own test fires
    embeddings, utt2spk, enroll = one_hot_corpus(12)
    block = singling_out_block(embeddings, utt2spk, enroll=enroll, settings=FAST)
    assert block["N"] == 12 and block["rate"] == 1.0 and block["std"] == 0.0
    assert block["ci95"] == [1.0, 1.0] and block["n_speakers"] == 12
    assert block["chance"] == pytest.approx((11 / 12) ** 11)


def test_identical_speakers_are_never_singled_out():
    # every score ties: the threshold equals them, and "above the threshold" is strict
    embeddings, utt2spk, enroll = one_hot_corpus(12, same=True)
    s = replace(FAST, speaker_counts=(2, 5, 12))
    block = singling_out_block(embeddings, utt2spk, enroll=enroll, settings=s)
    assert {n: v["rate"] for n, v in block["per_N"].items()} == {"2": 0.0, "5": 0.0, "12": 0.0}


def test_an_uninformative_attacker_isolates_near_chance():
    embeddings, utt2spk, enroll = corpus(n_speakers=60, spread=1e6, seed=11)
    block = singling_out_block(embeddings, utt2spk, enroll=enroll, settings=FAST)
    assert block["N"] == 60 and abs(block["rate"] - block["chance"]) < 0.06


def test_deterministic_for_a_seed_and_the_input_order():
    embeddings, utt2spk, enroll = corpus(n_speakers=20, seed=2)
    first = singling_out_block(embeddings, utt2spk, enroll=enroll, settings=FAST)
    shuffled = dict(reversed(list(embeddings.items())))
    again = singling_out_block(
        shuffled, utt2spk, enroll=dict(reversed(enroll.items())), settings=FAST
    )
    assert first == again and first["seed"] == 0 and first["folds"] == 3
    assert (first["L"], first["M"], first["runs"]) == (1, 9, 5)


def test_not_applicable_says_what_is_missing():
    block = lambda *data, **kw: singling_out_block(
        data[0], data[1], enroll=data[2], settings=replace(FAST, **kw)
    )
    one = block(*corpus(n_speakers=1))
    assert "needs 2 or more speakers with at least 10 utterances" in one["not_applicable"]
    assert "1 of 1 have them" in one["not_applicable"]
    short = block(*corpus(n_speakers=5, n_test=9))  # 1 test + 8 calibration < M = 9
    assert "0 of 5 have them" in short["not_applicable"]
    assert "1 test and 9 calibration conversations of L=1" in short["not_applicable"]
    longer = block(*corpus(n_speakers=5, n_test=9), conversation_length=3)  # C(6, 3) >= 9
    assert longer["N"] == 5
    embeddings, utt2spk, enroll = corpus(n_speakers=6)
    strangers = {f"x{i}": [f"x{i}-0"] for i in range(3)}
    embeddings.update({u[0]: unit(np.ones(16)) for u in strangers.values()})
    none_enrolled = block(embeddings, utt2spk, strangers)
    assert "no enrollment speaker (3) is among the 6 speakers" in none_enrolled["not_applicable"]
    too_big = block(*corpus(n_speakers=6), speaker_counts=(1, 7))
    assert too_big == {"not_applicable": "no N in [1, 7] lies in [2, 6]"}
