"""Every voice attacker of issue 29 in one card run on a small demo corpus, from tiny checkpoints
the tests build in the real formats (random weights: the plumbing, never a privacy figure):
Resemblyzer scored by cosine, max-similarity and PLDA, a SpeechBrain folder and a WavLM x-vector
snapshot as pretrained attackers, and ECAPA on a tiny WavLM's layers (VoicePrivacy 2026's kind)."""

import json
import sys
from pathlib import Path

import pytest
from pretrained_fixtures import write_speechbrain_folder, write_ssl_snapshot, write_xvector_folder

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CARD = """
seed: 0
anonymizer: !PLACEHOLDER
anonymizer_options: {{}}
output_folder: !PLACEHOLDER
cache_folder: !PLACEHOLDER
progress: False
plots: False
num_threads: 1
data_folder: !PLACEHOLDER
scenarios: [semi-informed]
attackers:
    resemblyzer:
        hparams: {repo}/hparams/resemblyzer.yaml
    resemblyzer_max:
        hparams: {repo}/hparams/resemblyzer.yaml
        overrides: {{scoring: max}}
    resemblyzer_plda:
        hparams: {repo}/hparams/resemblyzer.yaml
        overrides: {{scoring: plda}}
    speechbrain_folder:
        hparams: {repo}/hparams/pretrained.yaml
        overrides: {{source: {speechbrain}}}
    wavlm_xvector:
        hparams: {repo}/hparams/pretrained.yaml
        overrides: {{source: {wavlm_sv}, scoring: plda}}
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
content_attacker: null
utility_enabled: []
n_boot: 50
"""


@pytest.fixture(scope="module")
def card(tmp_path_factory, recipe):
    pytest.importorskip("resemblyzer")
    from sparc_eval.demo import build_demo_corpus

    root = tmp_path_factory.mktemp("card_attackers")
    demo = root / "demo"
    build_demo_corpus(demo, mode="reading", n_speakers=12, utts_per_speaker=20, progress=False)
    hparams = root / "card.yaml"
    hparams.write_text(
        CARD.format(
            repo=REPO,
            speechbrain=write_speechbrain_folder(root / "spkrec-tiny"),
            wavlm_sv=write_xvector_folder(root / "wavlm-sv-tiny", "WavLMForXVector"),
            wavlm=write_ssl_snapshot(root / "wavlm-tiny"),
        )
    )
    out = root / "out"
    args = [str(hparams), f"--data_folder={demo}", f"--output_folder={out}"]
    code = recipe("evaluate_anonymizer").main(
        [*args, f"--cache_folder={root / 'cache'}", "--anonymizer=identity", "--n_enroll=3"]
    )
    assert code == 0
    return out, json.loads((out / "results.json").read_text())


def _cell(doc, attacker, speech="identity", scenario="semi-informed"):
    return doc["cells"][speech][attacker][scenario]


@pytest.mark.slow("the card with six embedding attackers (about 20 s)")
def test_every_new_attacker_runs_in_one_card(card):
    _, doc = card
    for attacker in ("resemblyzer", "resemblyzer_max", "resemblyzer_plda", "speechbrain_folder"):
        assert doc["cells"]["original"][attacker]["original"]["status"] == "ok", attacker
    for attacker in ("resemblyzer_plda", "wavlm_xvector", "ssl_ecapa"):
        cell = _cell(doc, attacker)
        assert cell["status"] == "ok", (attacker, cell.get("reason"))
        assert 0.0 <= cell["overall"]["eer"] <= 1.0


@pytest.mark.slow("reads the card with six embedding attackers (about 20 s)")
def test_back_end_adaptation_is_named_and_never_plain_semi_informed(card):
    out, doc = card
    plda = _cell(doc, "resemblyzer_plda")
    assert plda["scenario_label"] == "semi-informed (back-end)"
    assert "backend_adaptation" in plda["deviations"]
    backend = plda["attacker_notes"]["backend"]
    assert {"cosine_eer", "plda_eer", "beats_cosine"} <= set(backend)
    # ssl_ecapa trains on anonymized speech: plain semi-informed, never the back-end label
    assert _cell(doc, "ssl_ecapa").get("scenario_label", "semi-informed") == "semi-informed"
    # cosine and max scoring cannot adapt to anonymized speech: refused, with the reason
    assert _cell(doc, "resemblyzer")["status"] == "not_applicable"
    assert "plda" in _cell(doc, "resemblyzer_max")["reason"]
    card_md = (out / "card.md").read_text()
    assert "(back-end)" in card_md and "back-end adaptation" in card_md


@pytest.mark.slow("reads the card with six embedding attackers (about 20 s)")
def test_embedding_attackers_report_singling_out(card):
    out, doc = card
    blocks = {
        a: doc["cells"]["original"][a]["original"]["singling_out"]
        for a in ("resemblyzer", "speechbrain_folder", "ssl_ecapa")
    }
    for attacker, block in blocks.items():
        assert 0.0 <= block["rate"] <= 1.0 and block["N"] >= 2, (attacker, block)
    assert "## Singling out" in (out / "card.md").read_text()


def test_an_attacker_without_embeddings_says_why_singling_out_is_missing():
    from types import SimpleNamespace

    from sparc_eval.attack.run import singling_out

    block = singling_out(SimpleNamespace(name="bag"), SimpleNamespace(split=object()))
    assert "gives no embeddings" in block["not_applicable"]


@pytest.mark.slow("reads the card with six embedding attackers (about 20 s)")
def test_ssl_ecapa_names_its_departures_from_voiceprivacy_2026(card):
    _, doc = card
    deviations = _cell(doc, "ssl_ecapa")["deviations"]
    assert "vpc2026_architecture" in deviations
    assert any(k.startswith("vpc2026_") and k != "vpc2026_architecture" for k in deviations)
