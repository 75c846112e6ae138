"""recipes/evaluate_text.py end to end: real EdAcc and LibriSpeech (small settings), a
SPARC-style export with metadata topic controls, and bad input."""

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def recipe():
    spec = importlib.util.spec_from_file_location(
        "evaluate_text", REPO / "recipes" / "evaluate_text.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(capsys, *args):
    code = recipe().main([str(REPO / "hparams" / "text" / "tfidf.yaml"), *map(str, args)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.mark.filterwarnings("ignore:.*loading as text-only")
def test_edacc_speaker_end_to_end(data_dir, tmp_path, capsys):
    out = tmp_path / "edacc"
    code, stdout, stderr = run(
        capsys,
        f"--data_folder={data_dir / 'edacc/spane_lists/edacc-test.txt'}",
        f"--output_folder={out}",
        "--tasks=[speaker]",
        "--P=[50]",
        "--L=[5]",
        "--n_boot=200",
        "--panel_ci=True",
    )
    assert code == 0, stderr
    assert stdout.strip().splitlines()[-1] == str(out / "results.json")
    doc = json.loads((out / "results.json").read_text())
    assert {"run", "overall", "tasks", "not_applicable", "shared_text"} <= set(doc)
    block = doc["tasks"]["speaker"]["P50_L5"]
    conds = block["conditions"]
    assert list(conds) == ["combined", "easy", "hard", "same_topic", "different_topic"]
    # EdAcc: every speaker in one conversation -> no hard positives
    assert conds["hard"] is None and conds["different_topic"] is None
    assert "no positive trials" in doc["not_applicable"]["tasks.speaker.P50_L5.conditions.hard"]
    comb = conds["combined"]
    assert set(comb) >= {
        "eer",
        "eer_threshold",
        "auc",
        "tpr_at_fpr",
        "min_dcf",
        "n_target",
        "n_nontarget",
        "ci95",
    }
    assert (
        0.2 < comb["eer"] < 0.55 and comb["ci95"]["eer"][0] <= comb["eer"] <= comb["ci95"]["eer"][1]
    )
    assert set(comb["tpr_at_fpr"]) == {"0.01", "0.001"}
    # the panel beyond EER, with CIs when asked (--panel_ci=True; text runs default to none)
    lo, hi = comb["ci95"]["min_cllr"]
    assert lo <= comb["min_cllr"] <= hi and comb["linkability_topn"] is None
    assert block["trials"]["n"] > 1000 and block["trials"]["by_type"]["hard_positive"] == 0
    assert doc["shared_text"]["n_removed"] == 177
    assert doc["overall"] == comb
    report = (out / "report.md").read_text()
    assert "## Task: speaker" in report and "177 of 9289 utterances" in report
    assert (out / "roc_speaker.png").stat().st_size > 1000
    assert (out / "trials" / "speaker_P50_L5.jsonl").is_file()
    line = (out / "scores" / "speaker_P50_L5.txt").read_text().splitlines()[0].split()
    assert len(line) == 4 and line[3] in ("target", "nontarget")


@pytest.mark.filterwarnings("ignore:.*loading as text-only")
def test_librispeech_speaker_and_unlabelled_tasks(data_dir, tmp_path, capsys):
    out = tmp_path / "libri"
    code, stdout, stderr = run(
        capsys,
        f"--data_folder={data_dir / 'librispeech/derived/LibriSpeech/test-clean'}",
        f"--output_folder={out}",
        "--tasks=[speaker, age]",
        "--P=[50]",
        "--L=[5]",
        "--n_boot=0",
        "--plots=False",
        "--save_trials=False",
    )
    assert code == 0, stderr
    doc = json.loads((out / "results.json").read_text())
    conds = doc["tasks"]["speaker"]["P50_L5"]["conditions"]
    # LibriSpeech: one reader per chapter -> no hard negatives, so hard and same_topic are n/a
    assert conds["same_topic"] is None and conds["hard"] is None
    assert conds["different_topic"]["eer"] is not None and conds["easy"]["eer"] is not None
    assert doc["tasks"]["age"]["P50_L5"] is None
    assert "age" in doc["not_applicable"]["tasks.age.P50_L5"]


def sparc_export(path: Path, with_gender=True):
    titles = {
        "e1": ("gardening tomatoes", "growing tomatoes", "Home"),
        "e2": ("stock markets", "investing", "Business"),
        "e3": ("football tactics", "offside", "Sports"),
        "e4": ("jazz history", "bebop", "Music"),
        "e5": ("cooking pasta", "sauces", "Home"),
        "e6": ("chess openings", "gambits", "Games"),
    }
    owner = {
        "e1": "host_a",
        "e2": "host_a",
        "e3": "host_b",
        "e4": "host_b",
        "e5": "host_c",
        "e6": "host_d",
    }
    rows = []
    for ep, (title, desc, cat) in titles.items():
        for i in range(8):
            row = {
                "speaker_id": owner[ep],
                "episode_id": ep,
                "text": f"{owner[ep]} style words {ep} number {i} and more filler words here",
                "title": title,
                "description": desc,
                "category": cat,
            }
            if with_gender:
                row["gender"] = "female" if owner[ep] in ("host_a", "host_c") else "male"
            rows.append(row)
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_sparc_export_with_topic_controls(tmp_path, capsys):
    data = sparc_export(tmp_path / "export.jsonl")
    out = tmp_path / "sparc"
    code, stdout, stderr = run(
        capsys,
        f"--data_folder={data}",
        f"--output_folder={out}",
        "--tasks=[speaker, sex]",
        "--settings=[[10, 3]]",
        "--n_boot=0",
        "--plots=False",
        "--tolerance=2",
    )
    assert code == 0, stderr
    doc = json.loads((out / "results.json").read_text())
    t = doc["tasks"]["speaker"]["P10_L3"]["trials"]
    assert t["topic_control"] is True and t["by_type"]["hard_positive"] > 0
    assert doc["run"]["trial_config"]["topic_max_similarity"] == 0.10


def test_column_mapping_naming_a_missing_column(tmp_path, capsys):
    data = sparc_export(tmp_path / "export.jsonl")
    code, _, err = run(
        capsys,
        f"--data_folder={data}",
        f"--output_folder={tmp_path / 'o'}",
        "--columns={sex: gender_typo}",
        "--settings=[[10, 3]]",
    )
    assert code == 2 and "gender_typo" in err
    code, _, err = run(
        capsys,
        f"--data_folder={data}",
        f"--output_folder={tmp_path / 'o'}",
        "--columns={speaker: host_name}",
        "--settings=[[10, 3]]",
    )
    assert code == 2 and "speaker" in err


def test_bad_override_and_missing_file(tmp_path, capsys):
    code, _, err = run(capsys, "--no_such_key=3", f"--output_folder={tmp_path}")
    assert code == 2 and "no_such_key" in err
    code = recipe().main([str(tmp_path / "missing.yaml")])
    assert code == 2
    assert "cannot read" in capsys.readouterr().err


def test_too_short_corpus_is_reported_not_crashed(tmp_path, capsys):
    rows = [{"speaker": f"s{k}", "episode": f"e{k}", "text": "too short"} for k in range(4)]
    data = tmp_path / "tiny.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code, stdout, stderr = run(
        capsys,
        f"--data_folder={data}",
        f"--output_folder={tmp_path / 'o'}",
        "--tasks=[speaker]",
        "--settings=[[50, 5]]",
        "--n_boot=0",
    )
    assert code == 0, stderr
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    block = doc["tasks"]["speaker"]["P50_L5"]
    assert block["trials"]["n"] == 0 and block["trials"]["appearances_too_short_for_P"] == 4
    assert all(v is None for v in block["conditions"].values())
    assert doc["overall"] is None and "overall" in doc["not_applicable"]


def test_cli_subcommand_module(tmp_path, capsys):
    """``sparc_eval.jobs.text.cli`` exposes register/run for a ``sparc-eval text`` subcommand."""
    import argparse

    from sparc_eval.jobs.text import cli

    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["text", str(tmp_path / "missing.yaml"), "--P=[50]"])
    assert args.func(args) == 2
    assert "sparc-eval text: error" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["tfidf", "stylometric", "embedding", "llm"])
def test_hparams_files_load(name, tmp_path):
    from sparc_eval.jobs.text.cli import load_hparams
    from sparc_eval.jobs.text.evaluate import parse_settings, trial_config_from_hparams

    hp = load_hparams(REPO / "hparams" / "text" / f"{name}.yaml", {"output_folder": str(tmp_path)})
    assert hp["scorer"].name
    assert parse_settings(hp["P"], hp["L"], hp["settings"]) == [
        (200, 20),
        (200, 5),
        (50, 20),
        (50, 5),
    ]
    cfg = trial_config_from_hparams(hp)
    # rule 8: shared-text removal only for corpora marked as having read passages, threshold scaling
    assert (
        cfg.shared_text.min_speakers == "auto"
        and cfg.shared_text.enabled == "auto"
        and cfg.max_probes == 10
    )


def test_llm_recipe_without_key_fails_before_work(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SPARC_NO_SUCH_KEY", raising=False)
    code = recipe().main(
        [
            str(REPO / "hparams" / "text" / "llm.yaml"),
            f"--output_folder={tmp_path / 'o'}",
            "--api_key_env=SPARC_NO_SUCH_KEY",
            f"--data_folder={tmp_path / 'not-there'}",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "SPARC_NO_SUCH_KEY" in err and "not-there" not in err  # the key check comes first
    assert not (tmp_path / "o").exists()


@pytest.mark.filterwarnings("ignore:.*loading as text-only")
def test_naturalvoices_preset_on_edacc(data_dir, tmp_path, capsys):
    """The paper's protocol on EdAcc: one probe per (speaker, conversation), one partner per trial
    type, no shared-text removal; the only departure named is the cut probes."""
    out = tmp_path / "nv"
    code = recipe().main(
        [
            str(REPO / "hparams" / "text" / "naturalvoices.yaml"),
            f"--data_folder={data_dir / 'edacc/spane_lists/edacc-test.txt'}",
            f"--output_folder={out}",
            "--tasks=[speaker]",
            "--settings=[[200, 20]]",
            "--n_boot=50",
            "--plots=False",
        ]
    )
    assert code == 0, capsys.readouterr().err
    doc = json.loads((out / "results.json").read_text())
    t = doc["tasks"]["speaker"]["P200_L20"]["trials"]
    assert t["probes"] == 60 and t["by_type"] == {
        "easy_positive": 60,
        "hard_positive": 0,
        "easy_negative": 60,
        "hard_negative": 60,
    }
    assert doc["shared_text"]["n_removed"] == 0 and doc["run"]["protocol"] == "naturalvoices"
    assert (
        set(doc["run"]["deviations"]) == {"probes_cut"}
        and doc["run"]["bootstrap_unit"] == "two_way"
    )


def test_text_run_settings_read_the_hparams_once(tmp_path):
    """The hparams dict stops at the recipe: TextRunSettings.from_hparams reads every key, absent
    keys take the field defaults, and the trial keys and seed land in the TrialConfig."""
    from sparc_eval.jobs.text.cli import load_hparams
    from sparc_eval.jobs.text.settings import TextRunSettings

    hp = load_hparams(
        REPO / "hparams" / "text" / "tfidf.yaml", {"output_folder": str(tmp_path), "seed": 3}
    )
    s = TextRunSettings.from_hparams(hp)
    assert (
        s.output_folder == tmp_path
        and s.scorers[0] is hp["scorer"]
        and s.seed == 3 == s.trial_config.seed
    )
    assert s.pl_settings == ((200, 20), (200, 5), (50, 20), (50, 5))
    assert (
        s.tasks == ("speaker", "sex", "age", "accent")
        and s.options.n_boot == 1000
        and s.words == "spoken"
    )
    assert s.trial_config.max_probes == 10 and s.trial_config.shared_text.enabled == "auto"
    assert (
        s.dataset_name == str(hp["data_folder"]) and s.hparams_sha256 and s.overrides["seed"] == 3
    )
    bare = TextRunSettings.from_hparams(
        {
            "data_folder": "x",
            "output_folder": str(tmp_path),
            "scorer": hp["scorer"],
            "tasks": [],
            "words": None,
            "n_boot": None,
        }
    )
    assert (
        bare.tasks == ("speaker",)
        and bare.words == "spoken"
        and bare.options.n_boot == 1000
        and bare.seed == 0
    )
    assert (
        bare.pl_settings == ((200, 20),)
        and bare.options.protocol == "naturalvoices"
        and bare.options.plots is True
    )


@pytest.mark.parametrize(
    "key, value",
    [
        ("n_boot", -1),
        ("n_boot", "many"),
        ("seed", 1.5),
        ("plots", "maybe"),
        ("bootstrap_unit", "episode"),
        ("protocol", "nope"),
        ("words", "typed"),
        ("tasks", [1]),
        ("P", ["x"]),
        ("P", [3]),
    ],
)
def test_text_run_settings_name_the_bad_key(key, value, tmp_path):
    from attackers.text.tfidf import TfidfScorer
    from sparc_eval.errors import DataError
    from sparc_eval.jobs.text.settings import TextRunSettings

    hp = {"data_folder": "x", "output_folder": str(tmp_path), "scorer": TfidfScorer(), key: value}
    with pytest.raises(DataError, match=key):
        TextRunSettings.from_hparams(hp)
    with pytest.raises(DataError, match="output_folder"):
        TextRunSettings.from_hparams({"data_folder": "x", "scorer": TfidfScorer()})


def test_cli_reads_the_settings_once_and_the_library_takes_them(tmp_path, capsys, monkeypatch):
    from sparc_eval.jobs.text import evaluate as text_evaluate
    from sparc_eval.jobs.text import settings as text_settings

    calls, taken = [], []
    real = text_settings.TextRunSettings.from_hparams.__func__

    def counting(cls, hp):
        calls.append(hp)
        return real(cls, hp)

    monkeypatch.setattr(text_settings.TextRunSettings, "from_hparams", classmethod(counting))
    monkeypatch.setattr(
        text_evaluate,
        "evaluate_from_settings",
        lambda settings: taken.append(settings) or settings.output_folder / "results.json",
    )
    data = sparc_export(tmp_path / "export.jsonl")
    code, stdout, _ = run(
        capsys, f"--data_folder={data}", f"--output_folder={tmp_path / 'o'}", "--n_boot=0"
    )
    assert code == 0 and len(calls) == 1 and len(taken) == 1
    assert isinstance(taken[0], text_settings.TextRunSettings) and taken[0].options.n_boot == 0
    assert stdout.strip().splitlines()[-1] == str(tmp_path / "o" / "results.json")


def test_evaluate_from_settings_without_an_hparams_dict(tmp_path):
    from attackers.text.tfidf import TfidfScorer
    from sparc_eval.jobs.text import CONDITIONS, TRIAL_CONDITIONS, TextRunSettings, TrialConfig
    from sparc_eval.jobs.text.evaluate import evaluate_from_settings
    from sparc_eval.jobs.text.settings import TextEvaluationOptions

    assert CONDITIONS is TRIAL_CONDITIONS
    data = sparc_export(tmp_path / "export.jsonl")
    s = TextRunSettings(
        data_folder=data,
        output_folder=tmp_path / "o",
        scorers=(TfidfScorer(),),
        trial_config=TrialConfig(tolerance=2),
        pl_settings=((10, 3),),
        options=TextEvaluationOptions(n_boot=0, plots=False),
    )
    doc = json.loads(evaluate_from_settings(s).read_text())
    assert list(doc["tasks"]["speaker"]["P10_L3"]["conditions"]) == list(TRIAL_CONDITIONS)
    assert doc["run"]["dataset"] == str(data) and doc["run"]["hparams_sha256"] is None
