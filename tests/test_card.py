"""The anonymizer card end to end on a small demo corpus: anonymize what the scenarios need,
attack, read against the words, utility, pairwise comparison, card.md, and the rules behind them."""

import json
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


SMALL_CARD = """
seed: 0
anonymizer: !PLACEHOLDER
anonymizer_options: {{}}
output_folder: !PLACEHOLDER
cache_folder: !PLACEHOLDER
progress: False
plots: True
num_threads: 1
pseudonymise: False
data_folder: !PLACEHOLDER
scenarios: [ignorant, lazy-informed]
attackers:
    resemblyzer:
        hparams: {repo}/hparams/resemblyzer.yaml
    bag:
        hparams: {repo}/hparams/bag_of_phones.yaml
    tfidf:
        kind: text
        P: 20
        L: 2
        max_probes: 2
        scorer: !new:attackers.text.tfidf.TfidfScorer {{}}
content_attacker: bag
utility:
    rho_f0: !new:sparc_eval.utility.metrics.PitchCorrelation
        max_utterances: 6
    gvd: !new:sparc_eval.utility.metrics.VoiceDistinctiveness
        encoder: !new:attackers.resemblyzer_attacker.ResemblyzerAttacker
            cache_folder: !ref <cache_folder>
n_boot: 100
"""


def _args(small_demo, out, *extra):
    hparams = out.parent / f"{out.name}_card.yaml"
    hparams.write_text(SMALL_CARD.format(repo=REPO))
    return [
        str(hparams),
        f"--data_folder={small_demo}",
        f"--output_folder={out}",
        f"--cache_folder={out / 'cache'}",
        "--n_enroll=3",
        *extra,
    ]


# of the card fixture's run: hparams file reads, plans, settings read from the card's hparams
RUN_COUNTS = {"hparams_reads": Counter(), "plans": 0, "card_settings": Counter()}


@contextmanager
def counting_reads_and_plans():
    """Counts, while the card runs, each hparams file's reads and plan_data's runs."""
    from sparc_eval.data import plan as plan_module
    from sparc_eval.hparams import HparamsFile

    read, plan_data = HparamsFile.__init__, plan_module.plan_data

    def counted_read(self, path):
        RUN_COUNTS["hparams_reads"][Path(path).name] += 1
        read(self, path)

    def counted_plan(data):
        RUN_COUNTS["plans"] += 1
        return plan_data(data)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(HparamsFile, "__init__", counted_read)
        mp.setattr(plan_module, "plan_data", counted_plan)
        _count_settings_reads(mp)
        yield


def _count_settings_reads(mp) -> None:
    """Counts each settings type read from the card's own hparams (they name the anonymizer)."""
    from sparc_eval.data.plan import DataSettings
    from sparc_eval.metrics.settings import EvaluationSettings

    for cls in (DataSettings, EvaluationSettings):

        def counted(klass, hp, _read=cls.from_hparams.__func__):
            if "anonymizer" in hp:
                RUN_COUNTS["card_settings"][klass.__name__] += 1
            return _read(klass, hp)

        mp.setattr(cls, "from_hparams", classmethod(counted))


@pytest.fixture(scope="module")
def card(small_demo, tmp_path_factory, recipe):
    pytest.importorskip("resemblyzer")
    out = tmp_path_factory.mktemp("card")
    with counting_reads_and_plans():
        code = recipe("evaluate_anonymizer").main(
            _args(small_demo, out, "--anonymizer=[identity,mcadams]")
        )
    assert code == 0
    return out, json.loads((out / "results.json").read_text())


@pytest.mark.slow("reads the McAdams card with Resemblyzer and utility (about 15 s)")
def test_each_hparams_file_is_read_once_and_each_scenario_planned_once(card):
    """Typed settings flow down (issue 27): the card reads its own and each attacker's hparams
    file once, and plans the original corpus and each (anonymizer, scenario) once for every cell."""
    _, doc = card
    reads = RUN_COUNTS["hparams_reads"]
    assert [n for n in reads if n.endswith("_card.yaml")] and all(
        count == 1 for n, count in reads.items() if n.endswith("_card.yaml")
    )
    assert reads["resemblyzer.yaml"] == 1 and reads["bag_of_phones.yaml"] == 1
    assert RUN_COUNTS["plans"] == 1 + len(doc["run"]["anonymizers"]) * 2  # 2 scenarios
    # the card's hparams are read into typed settings once, at the entry point; below it, every
    # module takes those settings (issue 64): no settings rebuilt from the card's raw hparams
    assert RUN_COUNTS["card_settings"] == {"DataSettings": 1, "EvaluationSettings": 1}


@pytest.mark.slow("reads the McAdams card (about 15 s)")
def test_card_runs_every_attacker_in_every_scenario(card, monkeypatch):
    out, doc = card
    assert doc["run"]["anonymizers"] == ["identity", "mcadams"]
    assert doc["run"]["scenarios"] == ["original", "ignorant", "lazy-informed"]
    for name in ("identity", "mcadams"):
        assert (out / "anonymized" / name / "eval" / "manifest.jsonl").is_file()
        assert not (
            out / "anonymized" / name / "train"
        ).exists()  # no semi-informed: training data untouched
        assert not (
            out / "anonymized" / name / "attacker"
        ).exists()  # deterministic: the attacker reads eval
        assert doc["anonymizers"][name]["draws"]["mode"] == "deterministic"
        for attacker in ("resemblyzer", "bag"):
            for sc in ("ignorant", "lazy-informed"):
                assert doc["cells"][name][attacker][sc]["status"] == "ok", doc["cells"][name][
                    attacker
                ][sc]
        assert doc["cells"][name]["tfidf"]["lazy-informed"]["status"] == "ok"
        assert doc["cells"][name]["tfidf"]["ignorant"]["status"] == "not_applicable"
    # only the split's utterances were anonymized
    anonymized = (
        (out / "anonymized" / "identity" / "eval" / "manifest.jsonl").read_text().splitlines()
    )
    assert len(anonymized) == doc["run"]["n_evaluated_utterances"] < 96 // 2 + 1
    for f in ("card.md", "eer_by_attacker.png", "det.png", "per_speaker.png"):
        assert (out / f).is_file(), f


@pytest.mark.slow("reads the McAdams card (about 15 s)")
def test_identity_leaves_what_the_original_speech_gives(card):
    """The identity anonymizer changes nothing: every attacker scores as on original speech, its
    content row equals the content bound, G_VD is 0 dB and rho_F0 is 1."""
    _, doc = card
    bound = doc["content"]["bound"]["eer"]
    assert doc["content"]["left"]["identity"]["lazy-informed"]["eer"] == pytest.approx(bound)
    assert doc["content"]["left"]["mcadams"]["ignorant"]["eer"] == pytest.approx(
        bound
    )  # McAdams keeps the words
    original = doc["cells"]["original"]["resemblyzer"]["original"]["overall"]["eer"]
    assert doc["cells"]["identity"]["resemblyzer"]["lazy-informed"]["overall"][
        "eer"
    ] == pytest.approx(original, abs=0.02)
    assert doc["utility"]["identity"]["gvd"]["value"] == pytest.approx(0.0, abs=0.05)
    assert doc["utility"]["identity"]["rho_f0"]["value"] > 0.95
    assert doc["utility"]["mcadams"]["gvd"]["value"] < doc["utility"]["identity"]["gvd"]["value"]


def _verdicts_at(out, doc, min_speakers: int) -> list:
    from types import SimpleNamespace

    from sparc_eval.jobs.card.verdicts import CellTrials, voice_beyond_content
    from sparc_eval.metrics.settings import BootstrapSettings, EvaluationSettings

    s = SimpleNamespace(
        content_attacker="bag",
        evaluation=EvaluationSettings(
            bootstrap=BootstrapSettings(n_boot=100), min_verdict_speakers=min_speakers
        ),
    )
    return voice_beyond_content(s, doc["cells"], CellTrials(out, doc["cells"]))


@pytest.mark.slow("reads the McAdams card (about 15 s)")
def test_voice_beyond_content_headline_and_comparisons(card):
    out, doc = card
    rows = {(r["anonymizer"], r["attacker"], r["scenario"]): r for r in doc["voice_beyond_content"]}
    assert set(rows) == {
        (a, "resemblyzer", sc)
        for a in ("identity", "mcadams")
        for sc in ("ignorant", "lazy-informed")
    }
    identity = rows[("identity", "resemblyzer", "lazy-informed")]
    assert identity["paired"] == "trials" and identity["diff"] == pytest.approx(
        identity["eer"] - identity["content_eer"]
    )
    # 6 test speakers: no verdict rests on so few (issue 34), and the card says so with the bound
    assert identity["verdict"].startswith(
        "no verdict: too few speakers for a verdict (6 test speakers"
    )
    assert any(
        w.startswith("too few speakers for any verdict: 6 test speakers")
        for w in doc["strength"]["resemblyzer"]["warnings"]
    )
    assert "(small: 6 speakers, bound" in (out / "card.md").read_text()
    # with the rule at 3 speakers, the same trials give the paired verdict
    again = {
        (r["anonymizer"], r["scenario"]): r
        for r in _verdicts_at(out, doc, min_speakers=3)
        if r["attacker"] == "resemblyzer"
    }
    # the voice of unchanged speech identifies speakers beyond every words-only attacker (bag here)
    assert again[("identity", "lazy-informed")]["verdict"].startswith(
        "finds more than every words-only attacker"
    )
    for name, head in doc["headline"].items():
        eers = [
            c["overall"]["eer"]
            for by in doc["cells"][name].values()
            for c in by.values()
            if c["status"] == "ok" and c["needs"]["split"]
        ]  # the utterance trials; P-word probes apart
        assert head["eer"] == pytest.approx(min(eers)) and head["content_bound"] == pytest.approx(
            doc["content"]["bound"]["eer"]
        )
        assert head["n_cells"] == len(eers) and head["probe_level"]["attacker"] == "tfidf"
    (pair,) = doc["comparisons"]
    assert (pair["a"], pair["b"]) == ("identity", "mcadams")
    assert {(e["attacker"], e["scenario"]) for e in pair["eer"]} >= {
        ("resemblyzer", "ignorant"),
        ("bag", "ignorant"),
    }
    assert "gvd" in pair["utility"] and pair["utility"]["gvd"]["ci95"] is None
    assert set(doc["strength"]) == {"resemblyzer", "bag", "tfidf"}


@pytest.mark.slow("reruns the McAdams card (about 15 s)")
def test_card_md_is_one_screen_and_rerun_reuses_everything(card, small_demo, capsys, recipe):
    out, doc = card
    text = (out / "card.md").read_text()
    for part in (
        "## Headline",
        "## Privacy",
        "## What the words give away",
        "## Voice leakage beyond content",
        "## Attacker strength",
        "## Utility",
        "## Anonymizers compared",
    ):
        assert part in text
    assert "Content bound" in text and "pretrained_resemblyzer_attacker" in text
    capsys.readouterr()
    args = _args(small_demo, out, "--anonymizer=[identity,mcadams]", "--pseudonymise=True")
    assert recipe("evaluate_anonymizer").main(args) == 0
    err = capsys.readouterr().err
    assert "running" not in err and err.count("reused") >= 10
    again = json.loads((out / "results.json").read_text())
    assert again["headline"] == doc["headline"]
    text = (out / "card.md").read_text()
    assert "S0" in text and "spk" not in text.split("## Speakers")[1].split("##")[0]


@pytest.mark.slow("reads the McAdams card (about 15 s)")
def test_timings_keep_the_stages_and_profile_cells_and_metrics(card):
    _, doc = card
    run = doc["run"]
    assert list(run["timings_s"]) == ["anonymization", "attacks", "utility", "comparisons", "total"]
    detail = run["timings_s_detail"]
    assert set(detail["anonymization"]) == {"plan data", "identity", "mcadams"}
    assert sum(detail["anonymization"].values()) <= run["timings_s"]["anonymization"] + 0.01
    cells = [k for k in detail["attacks"] if k != "read speech"]
    assert "original/resemblyzer/original" in cells and "mcadams/bag/lazy-informed" in cells
    assert sum(detail["attacks"].values()) <= run["timings_s"]["attacks"] + 0.01
    assert set(detail["utility"]) == {
        f"{a}/{m}" for a in ("identity", "mcadams") for m in ("rho_f0", "gvd")
    }
    assert all(isinstance(v, float) for part in detail.values() for v in part.values())


def test_bad_card_settings_fail_before_any_work(small_demo, tmp_path, capsys, recipe):
    main = recipe("evaluate_anonymizer").main
    assert main(_args(small_demo, tmp_path, "--anonymizer=[identity,identity]")) == 2
    assert "listed twice" in capsys.readouterr().err
    assert main(_args(small_demo, tmp_path, "--anonymizer=identity", "--scenarios=[original]")) == 2
    assert "scenarios" in capsys.readouterr().err
    assert main(_args(small_demo, tmp_path, "--anonymizer=identity", "--content_attacker=mel")) == 2
    assert "content_attacker" in capsys.readouterr().err
    assert not (tmp_path / "anonymized").exists()


def test_training_shares_are_nested_and_seeded(tmp_path):
    from sparc_eval.data.manifest import Manifest, Utterance
    from sparc_eval.data.plan import _training_share

    train = Manifest([Utterance(f"s{i}-0", f"s{i}", "words", "e") for i in range(20)])
    quarter, half = (set(_training_share(train, f, seed=3).speakers()) for f in (0.25, 0.5))
    assert len(quarter) == 5 and len(half) == 10 and quarter < half
    assert set(_training_share(train, 0.25, seed=3).speakers()) == quarter
    assert (
        len(_training_share(train, 0.01, seed=3).speakers()) == 2
    )  # never fewer than two speakers


def test_learning_curve_warns_when_more_data_still_helps():
    """The warning rule: the EER falls from 50% to 100% of the training speakers by more than the
    half-width of that paired difference's CI."""
    from types import SimpleNamespace

    from sparc_eval.jobs.card.learning import learning_curves

    s = SimpleNamespace()
    cells = {
        "mcadams": {
            "mel": {"ignorant": {"status": "ok", "overall": {"eer": 0.20}, "folder": "full"}}
        }
    }
    extra = {
        ("mcadams", "mel", "ignorant"): {
            0.25: {"status": "ok", "overall": {"eer": 0.35}, "folder": "q"},
            0.5: {"status": "ok", "overall": {"eer": 0.28}, "folder": "h"},
        }
    }

    class Reader:
        def __init__(self, ci):
            self.ci = ci

        def compare_folders(self, a, b, s):
            assert (a, b) == ("h", "full")
            return {"eer_diff": -0.08, "eer_diff_ci95": self.ci}

    (row,) = learning_curves(s, cells, extra, Reader([-0.12, -0.04]))  # half-width 0.04 < 0.08
    assert (
        row["eer"] == {"0.25": 0.35, "0.5": 0.28, "1.0": 0.20}
        and "more training data" in row["warning"]
    )
    (row,) = learning_curves(s, cells, extra, Reader([-0.30, 0.10]))  # half-width 0.20: noise
    assert row["warning"] is None


@pytest.mark.slow("a card with a failing anonymizer and three attackers: about 10 s")
def test_anonymizer_failures_are_listed_left_out_of_every_attacker_and_counted(
    card, small_demo, tmp_path, recipe
):
    out, _ = card
    ids = [
        json.loads(line)["id"]
        for line in (out / "anonymized/identity/eval/manifest.jsonl").read_text().splitlines()
    ]
    crash, empty = ids[3], ids[-2]
    args = _args(
        small_demo,
        tmp_path,
        "--anonymizer=[identity,card_fixtures.Flaky]",
        f"--anonymizer_options={{Flaky: {{fail_ids: [{crash}], empty_ids: [{empty}]}}}}",
    )
    assert recipe("evaluate_anonymizer").main(args) == 0
    doc = json.loads((tmp_path / "results.json").read_text())
    # named by its declared name, the dotted path beside it (options may still name the class)
    assert doc["run"]["anonymizers"] == ["identity", "flaky"]
    assert doc["anonymizers"]["flaky"]["source"] == "card_fixtures.Flaky"
    failures = doc["anonymizers"]["flaky"]["failures"]
    assert set(failures) == {crash, empty}
    assert (
        "crashed" in failures[crash] and empty in failures[empty] and "no audio" in failures[empty]
    )
    assert doc["run"]["n_left_out"] == 2 and doc["run"]["n_evaluated_utterances"] == len(ids) - 2
    for where, by in doc["cells"].items():  # original and identity too: every attacker alike
        for attacker, by_sc in by.items():
            for sc, cell in by_sc.items():
                if cell["status"] != "ok":
                    continue
                scored = (tmp_path / cell["folder"] / "scores.txt").read_text()
                assert crash not in scored and empty not in scored, (where, attacker, sc)
    assert "2 left out of every attacker alike" in (tmp_path / "card.md").read_text()


@pytest.mark.slow("runs the default card with Resemblyzer on three scenarios (about 8 s)")
def test_asking_for_semi_informed_with_resemblyzer_alone_keeps_the_departure(
    small_demo, tmp_path, recipe
):
    """Issue 61, item 1: Resemblyzer refuses the semi-informed scenario, so asking for it is not
    running it: the default card keeps "no semi-informed attacker" and the headline says so."""
    pytest.importorskip("resemblyzer")
    out = tmp_path / "card"
    code = recipe("evaluate_anonymizer").main(
        [
            str(REPO / "hparams" / "evaluate.yaml"),
            f"--data_folder={small_demo}",
            f"--output_folder={out}",
            f"--cache_folder={tmp_path / 'cache'}",
            "--anonymizer=mcadams",
            "--attackers_enabled=[resemblyzer]",
            "--content_attacker=null",
            "--utility_enabled=[]",
            "--scenarios=[ignorant,lazy-informed,semi-informed]",
            "--n_enroll=3",
            "--n_boot=50",
            "--plots=False",
            "--progress=False",
        ]
    )
    assert code == 0
    doc = json.loads((out / "results.json").read_text())
    semi = doc["cells"]["mcadams"]["resemblyzer"]["semi-informed"]
    assert semi["status"] != "ok"  # refused
    departure = doc["run"]["deviations"]["scenarios: no semi-informed"]
    assert "the scenario was asked for, but no attacker that trains on the anonymized audio" in (
        departure
    )
    assert doc["headline"]["mcadams"]["semi_informed"] is False
    card_md = (out / "card.md").read_text()
    assert "no semi-informed attack among them" in card_md
    assert "`scenarios: no semi-informed`" in card_md
