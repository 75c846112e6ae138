"""No stale number (issue 62): every input that changes a number is in its key, and going back to
an earlier setting finds its audio and cells again. Each test counts what a card re-run
recomputed (scores made, models trained, utterances anonymized), never how long it took.

Tiny checkpoints in the real formats (random weights): the plumbing, never a privacy figure."""

import json
import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from pretrained_fixtures import write_speechbrain_folder, write_ssl_snapshot

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CARD = """
seed: 0
anonymizer: identity
anonymizer_options: {{}}
output_folder: !PLACEHOLDER
cache_folder: !PLACEHOLDER
progress: False
plots: False
num_threads: 1
data_folder: !PLACEHOLDER
scenarios: [lazy-informed]
attackers:
    speechbrain_folder:
        hparams: {repo}/hparams/pretrained.yaml
        overrides: {{source: {speechbrain}}}
    tfidf_utterances:
        hparams: {repo}/hparams/tfidf_utterances.yaml
    ssl_ecapa:
        kind: ecapa
        hparams: {repo}/hparams/ssl_ecapa.yaml
        overrides:
            ssl_source: {wavlm}
            model_size: custom
            channels: [16, 16, 16, 16, 48]
            attention_channels: 8
            emb_dim: 16
            number_of_epochs: 1
            batch_size: 16
            eval_batch_size: 16
            chunk_seconds: 1.0
            lr_step_size: 5
attackers_enabled: [speechbrain_folder, tfidf_utterances]
content_attacker: null
learning_curve: False
utility: {{}}
n_boot: 50
"""


class Counted:
    """What a card run recomputed: scores made per attacker, reused scores evaluated again,
    models trained (fits that ran a batch), utterances anonymized."""

    def __init__(self, monkeypatch):
        import attackers.ecapa_attacker as ecapa
        import sparc_eval.anonymization.runner as runner
        import sparc_eval.attack.cell_results as cell_results
        import sparc_eval.attack.cells as cells
        from attackers.ecapa import AttackerBrain

        self.scored, self.evaluated, self.fits, self.anonymized = Counter(), 0, 0, 0
        self.batches = 0
        fit_batch = AttackerBrain.fit_batch
        run_attack, evaluate_attack = cells.run_attack, cell_results.evaluate_attack
        fit, process = ecapa.EcapaAttacker.fit, runner.process_batch

        def counted_run(attacker, *a, **kw):
            self.scored[attacker.name] += 1
            return run_attack(attacker, *a, **kw)

        def counted_evaluation(*a, **kw):
            self.evaluated += 1
            return evaluate_attack(*a, **kw)

        def counted_fit(obj, train):  # a fit that resumes a finished model trains no batch
            before = self.batches
            result = fit(obj, train)
            self.fits += self.batches > before
            return result

        def counted_batch_step(brain, batch):
            self.batches += 1
            return fit_batch(brain, batch)

        def counted_batch(anonymizer, batch, out_dir):
            self.anonymized += len(batch)
            return process(anonymizer, batch, out_dir)

        monkeypatch.setattr(cells, "run_attack", counted_run)
        monkeypatch.setattr(cell_results, "evaluate_attack", counted_evaluation)
        monkeypatch.setattr(ecapa.EcapaAttacker, "fit", counted_fit)
        monkeypatch.setattr(runner, "process_batch", counted_batch)
        monkeypatch.setattr(AttackerBrain, "fit_batch", counted_batch_step)

    def reset(self):
        self.scored, self.evaluated, self.fits, self.anonymized = Counter(), 0, 0, 0


def _card(recipe, root: Path, corpus: Path, out: str, *extra) -> dict:
    hparams = root / "card.yaml"
    hparams.write_text(CARD.format(repo=REPO, speechbrain=root / "spkrec", wavlm=root / "wavlm"))
    args = [
        str(hparams),
        f"--data_folder={corpus}",
        f"--output_folder={root / out}",
        f"--cache_folder={root / 'cache'}",
        "--n_enroll=2",
        *extra,
    ]
    assert recipe("evaluate_anonymizer").main(args) == 0
    return json.loads((root / out / "results.json").read_text())


def _numbers(doc: dict) -> dict:
    return {
        (where, attacker, scenario): cell.get("overall")
        for where, by in doc["cells"].items()
        for attacker, by_scenario in by.items()
        for scenario, cell in by_scenario.items()
    }


@pytest.fixture
def folders(tmp_path):
    write_speechbrain_folder(tmp_path / "spkrec", seed=0)
    return tmp_path


@pytest.mark.slow("three cards with a tiny pretrained SpeechBrain model: about 15 s")
def test_weights_rewritten_at_the_same_source_are_scored_again(
    recipe, tiny_demo, folders, monkeypatch
):
    count = Counted(monkeypatch)
    only = "--attackers_enabled=[speechbrain_folder]"
    first = _card(recipe, folders, tiny_demo, "out", only)
    write_speechbrain_folder(folders / "spkrec", seed=1)  # other weights, same path and names
    count.reset()
    rerun = _card(recipe, folders, tiny_demo, "out", only)
    assert count.scored["pretrained"] == 2  # the original-speech cell and the anonymized one
    fresh = _card(recipe, folders, tiny_demo, "fresh", only)
    assert _numbers(rerun) == _numbers(fresh) != _numbers(first)


@pytest.mark.slow("three cards with two attackers: about 12 s")
def test_a_code_change_rescores_only_its_attacker_and_metrics_are_always_current(
    recipe, tiny_demo, folders, monkeypatch
):
    import sparc_eval.attack.code as code

    count = Counted(monkeypatch)
    first = _card(recipe, folders, tiny_demo, "out")
    count.reset()
    again = _card(recipe, folders, tiny_demo, "out", "--n_boot=60")  # a metric setting only
    assert not count.scored and count.evaluated == 4  # every cell evaluated again, none rescored
    assert _numbers(again) != _numbers(first)  # its CIs are those of 60 resamples
    module_digest = code.module_digest

    def upgraded(name):  # a simulated upgrade of the words-only attacker's module
        return "new" if name == "attackers.text_utterances" else module_digest(name)

    monkeypatch.setattr(code, "module_digest", upgraded)
    count.reset()
    doc = _card(recipe, folders, tiny_demo, "out", "--n_boot=60")
    assert count.scored == {"tfidf_utterances": 2}
    assert count.evaluated == 2  # the reused cells' scores evaluated again, the new ones with them
    cells = [c for by in doc["cells"].values() for sc in by.values() for c in sc.values()]
    codes = {c["attacker"]: c["scores_code"] for c in cells}
    assert len(set(codes.values())) == 2  # recorded per cell


@pytest.mark.slow("four cards training a tiny ECAPA on a tiny WavLM: about 30 s")
def test_a_replaced_upstream_retrains_and_going_back_finds_the_old_model(
    recipe, tiny_demo, folders, monkeypatch
):
    count = Counted(monkeypatch)
    only = "--attackers_enabled=[ssl_ecapa]"
    write_ssl_snapshot(folders / "wavlm")
    first = _card(recipe, folders, tiny_demo, "out", only)
    assert count.fits == 1
    kept_snapshot = folders / "wavlm_first"
    os.rename(folders / "wavlm", kept_snapshot)
    import torch

    torch.manual_seed(7)
    write_ssl_snapshot(folders / "wavlm")  # another upstream under the same ssl_source
    count.reset()
    _card(recipe, folders, tiny_demo, "out", only)
    assert count.fits == 1 and count.scored["ssl"] == 2  # retrained, both cells rescored
    # the first upstream back: its model is found again (nothing trains); the first cell to reach
    # it puts its checkpoints back while it scores, the next finds its cell
    import shutil

    shutil.rmtree(folders / "wavlm")
    os.rename(kept_snapshot, folders / "wavlm")
    count.reset()
    back = _card(recipe, folders, tiny_demo, "out", only)
    assert count.fits == 0 and count.scored["ssl"] == 1
    assert _numbers(back) == _numbers(first)


@pytest.mark.slow("two cards training a tiny ECAPA on a tiny WavLM: about 15 s")
def test_an_audio_file_replaced_in_place_recomputes_its_cells_and_models(
    recipe, tmp_path_factory, monkeypatch
):
    from sparc_eval.demo import build_demo_corpus

    root = tmp_path_factory.mktemp("replaced")
    write_speechbrain_folder(root / "spkrec", seed=0)
    write_ssl_snapshot(root / "wavlm")
    data = root / "corpus"  # its own: the module's corpus is left as it is
    build_demo_corpus(data, mode="reading", n_speakers=12, utts_per_speaker=6, progress=False)
    count = Counted(monkeypatch)
    enabled = "--attackers_enabled=[ssl_ecapa,tfidf_utterances]"
    _card(recipe, root, data, "out", enabled)
    firsts = {}
    for wav in sorted(data.rglob("*.wav")):  # each speaker's first file: trained on and tested
        firsts.setdefault(wav.parent, wav)
    for one in firsts.values():
        st = one.stat()
        wave, rate = sf.read(one, dtype="int16")
        sf.write(one, np.roll(wave, 800), rate, subtype="PCM_16")  # same size, other bytes
        os.utime(one, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same modification time
        assert (one.stat().st_size, one.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    count.reset()
    _card(recipe, root, data, "out", enabled)
    assert count.fits == 1  # the model trained on the original speech
    assert count.scored == {"ssl": 2, "tfidf_utterances": 2}  # every cell of that evaluation set
    assert 0 < count.anonymized < len(firsts)  # the tested speakers' replaced files, no other


@pytest.mark.slow("three McAdams cards with a tiny pretrained model: about 15 s")
def test_going_back_to_a_setting_is_free(recipe, tiny_demo, folders, monkeypatch):
    count = Counted(monkeypatch)
    mcadams = ("--anonymizer=mcadams",)
    first = _card(
        recipe, folders, tiny_demo, "out", *mcadams, "--anonymizer_options={mcadams: {alpha: 0.8}}"
    )
    _card(
        recipe, folders, tiny_demo, "out", *mcadams, "--anonymizer_options={mcadams: {alpha: 0.6}}"
    )
    count.reset()
    back = _card(
        recipe, folders, tiny_demo, "out", *mcadams, "--anonymizer_options={mcadams: {alpha: 0.8}}"
    )
    assert count.anonymized == 0 and not count.scored  # audio and cells found again
    assert _numbers(back) == _numbers(first)
    assert count.evaluated == 4  # evaluated again all the same: metrics are always current
