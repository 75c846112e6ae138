"""Score/speaker file readers, the ``sparc-eval metrics`` command, and a real VoicePrivacy score file."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sparc_eval.cli import main
from sparc_eval.errors import DataError
from sparc_eval.metrics import read_scores, read_speakers, read_utt2spk, write_scores
from sparc_eval.metrics.panel import PANEL_KEYS
from sparc_eval.metrics.settings import BootstrapSettings

REPO = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG\r\n\x1a\n"
RUN_KEYS = {"dataset", "features", "anonymizer", "scenario", "hparams", "seed", "timings_s"}
OVERALL_KEYS = {
    "eer",
    "eer_threshold",
    "auc",
    "tpr_at_fpr",
    "min_dcf",
    "n_target",
    "n_nontarget",
    "ci95",
    "small_evaluation",
    *PANEL_KEYS,
    "mean_speaker_eer",
    "worst_speakers",
}
PANEL_CI = {"min_cllr", "dece", "linkability", "mean_speaker_eer"}


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def strict_json(path):
    def no_constants(x):
        raise AssertionError(f"non-JSON constant {x} in {path}")

    return json.loads(Path(path).read_text(), parse_constant=no_constants)


def check_schema(doc):
    assert set(doc) == {"run", "overall", "per_speaker", "segments", "not_applicable"}
    assert RUN_KEYS <= set(doc["run"])
    assert set(doc["overall"]) == OVERALL_KEYS
    assert set(doc["overall"]["tpr_at_fpr"]) == {"0.01", "0.001"}
    if doc["overall"]["ci95"] is not None:
        assert set(doc["overall"]["ci95"]) == {"eer", "auc", "tpr_at_fpr", "min_dcf"} | PANEL_CI
        assert set(doc["overall"]["ci95"]["tpr_at_fpr"]) == {"0.01", "0.001"}
    for v in (doc["per_speaker"] or {}).values():
        assert set(v) == {"eer", "n_target", "n_nontarget"}
    for values in doc["segments"].values():
        for v in values.values():
            assert set(v) == {"intra_eer", "inter_eer", "n_speakers"}
    for key in ("eer", "auc", "min_dcf"):
        x = doc["overall"][key]
        assert x is None or 0.0 <= x <= 1.0


# ----------------------------------------------------------------------------- readers


GOOD = "spk1 u1 0.9 target\nspk2 u1 0.1 nontarget\n\nspk1 u2 -0.5 nontarget\nspk2 u2 2 target\n"


def test_read_and_write_scores_roundtrip(tmp_path):
    t = read_scores(write(tmp_path, "s.txt", GOOD))
    assert len(t) == 4 and t.lines.tolist() == [1, 2, 4, 5]  # the blank line is skipped
    assert t.labels.tolist() == [True, False, False, True]
    write_scores(tmp_path / "o.txt", t.enroll, t.test, t.scores + 1e-17, t.labels)
    back = read_scores(tmp_path / "o.txt")
    np.testing.assert_array_equal(back.scores, t.scores + 1e-17)
    assert back.enroll.tolist() == t.enroll.tolist()


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("a u1 0.5 target\na u2 0.1\n", r"line 2: expected 4 fields"),
        ("a u1 0.5 target\na u2 x0.1 nontarget\n", r"line 2: score 'x0.1' is not a number"),
        ("a u1 nan target\na u2 0.1 nontarget\n", r"line 1: score 'nan' is not finite"),
        ("a u1 0.5 target\na u2 -inf nontarget\n", r"line 2: score '-inf' is not finite"),
        ("a u1 0.5 target\na u2 0.1 impostor\n", r"line 2: unknown label 'impostor'"),
        (
            "a u1 0.5 target\nb u1 0.1 nontarget\na u1 0.7 target\n",
            r"line 3: duplicate trial a u1: also on line 1",
        ),
        ("\n\n", r"no trials"),
    ],
)
def test_bad_score_files(tmp_path, text, pattern):
    with pytest.raises(DataError, match=pattern):
        read_scores(write(tmp_path, "bad.txt", text))


def test_read_utt2spk_and_speakers(tmp_path):
    assert read_utt2spk(write(tmp_path, "u", "u1 a\nu2 b\n")) == {"u1": "a", "u2": "b"}
    with pytest.raises(DataError, match="line 2: utterance u1 is listed twice"):
        read_utt2spk(write(tmp_path, "u", "u1 a\nu1 b\n"))
    jl = write(
        tmp_path,
        "s.jsonl",
        '{"speaker": "a", "gender": "female", "age": NaN, "accent": "Irish"}\n'
        '{"speaker": 7, "sex": "m", "age": 33}\n',
    )
    assert read_speakers(jl) == {
        "a": {"sex": "F", "age": None, "accent": "Irish"},
        "7": {"sex": "M", "age": 33},
    }
    csv = write(tmp_path, "s.csv", "speaker,sex,age,accent\na,f,NaN,Irish\nb,Male,41,\n")
    assert read_speakers(csv) == {
        "a": {"sex": "F", "age": None, "accent": "Irish"},
        "b": {"sex": "M", "age": 41.0, "accent": None},
    }
    with pytest.raises(DataError, match="no 'speaker' column"):
        read_speakers(write(tmp_path, "x.csv", "id,sex\na,f\n"))
    with pytest.raises(DataError, match="line 3: speaker a is listed twice"):
        read_speakers(write(tmp_path, "d.csv", "speaker,sex\na,f\na,m\n"))
    with pytest.raises(DataError, match="line 2: not a JSON object"):
        read_speakers(write(tmp_path, "b.jsonl", '{"speaker": "a"}\n{oops\n'))


# ----------------------------------------------------------------------------- the command


def synthetic(tmp_path, n_spk=8, utts=5, seed=0):
    rng = np.random.default_rng(seed)
    spk = [f"spk{i}" for i in range(n_spk)]
    lines, u2s = [], []
    for s in spk:
        for u in range(utts):
            utt = f"{s}_{u}"
            u2s.append(f"{utt} {s}")
            for e in spk:
                lines.append(
                    f"{e} {utt} {rng.normal(1.5 if e == s else 0, 1):.6f} {'target' if e == s else 'nontarget'}"
                )
    scores = write(tmp_path, "scores.txt", "\n".join(lines) + "\n")
    utt2spk = write(tmp_path, "utt2spk", "\n".join(u2s) + "\n")
    rows = [
        json.dumps(
            {
                "speaker": s,
                "sex": "F" if i % 2 else "M",
                "accent": ["Irish", "Scottish"][i < 3],
                "age": 20 + 7 * i,
            }
        )
        for i, s in enumerate(spk)
    ]
    speakers = write(tmp_path, "speakers.jsonl", "\n".join(rows) + "\n")
    return scores, utt2spk, speakers


def test_cli_in_process(tmp_path, capsys):
    scores, utt2spk, speakers = synthetic(tmp_path)
    out = tmp_path / "out"
    rc = main(
        [
            "metrics",
            "--scores",
            str(scores),
            "--utt2spk",
            str(utt2spk),
            "--speakers",
            str(speakers),
            "--out",
            str(out),
            "--n-boot",
            "200",
            "--dataset",
            "toy",
        ]
    )
    assert rc == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(out / "results.json")
    doc = strict_json(out / "results.json")
    check_schema(doc)
    assert doc["run"]["dataset"] == "toy" and doc["run"]["seed"] == 0
    assert doc["overall"]["n_target"] == 40 and doc["overall"]["n_nontarget"] == 280
    assert len(doc["per_speaker"]) == 8
    assert set(doc["segments"]) == {"sex", "accent_group", "age_group"}
    assert doc["segments"]["accent_group"]["Scottish"]["n_speakers"] == 3
    for name in ("roc.png", "det.png", "per_speaker_eer.png", "segments.png"):
        assert (out / name).read_bytes()[:8] == PNG
    report = (out / "report.md").read_text()
    assert "## Per-speaker EER" in report and "intra-EER" in report


def test_cli_without_utt2spk_and_one_class(tmp_path, capsys):
    scores, _, speakers = synthetic(tmp_path)
    out = tmp_path / "plain"
    assert main(["metrics", "--scores", str(scores), "--out", str(out), "--n-boot", "0"]) == 0
    doc = strict_json(out / "results.json")
    check_schema(doc)
    assert doc["per_speaker"] is None and doc["segments"] == {}
    assert {"per_speaker", "segments", "overall.ci95"} <= set(doc["not_applicable"])
    assert (out / "roc.png").exists() and not (out / "per_speaker_eer.png").exists()
    only_non = write(tmp_path, "non.txt", "a u1 0.3 nontarget\nb u1 0.2 nontarget\n")
    out2 = tmp_path / "one"
    assert main(["metrics", "--scores", str(only_non), "--out", str(out2)]) == 0
    assert "only one class" in capsys.readouterr().err
    doc = strict_json(out2 / "results.json")
    check_schema(doc)
    assert doc["overall"]["eer"] is None and "only one class" in doc["not_applicable"]["overall"]
    assert not (out2 / "roc.png").exists() and "plots.roc" in doc["not_applicable"]


def test_cli_bad_input_exit_code(tmp_path, capsys):
    bad = write(tmp_path, "bad.txt", "a u1 0.5 target\na u1 0.7 nontarget\n")
    assert main(["metrics", "--scores", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and "duplicate" in err and "line 1" in err
    scores, utt2spk, _ = synthetic(tmp_path)
    partial = write(tmp_path, "u2s", "\n".join(utt2spk.read_text().splitlines()[1:]) + "\n")
    assert (
        main(
            [
                "metrics",
                "--scores",
                str(scores),
                "--utt2spk",
                str(partial),
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "spk0_0" in capsys.readouterr().err
    assert (
        main(["metrics", "--scores", str(scores), "--fpr", "2", "--out", str(tmp_path / "o")]) == 2
    )
    assert "fpr_targets" in capsys.readouterr().err


@pytest.mark.slow("three fresh interpreters: about 4 s")
def test_metrics_command_imports_no_torch(tmp_path):
    scores, utt2spk, speakers = synthetic(tmp_path)
    code = (
        "import sys\n"
        "from sparc_eval.cli import main\n"
        f"rc = main(['metrics', '--scores', {str(scores)!r}, '--utt2spk', {str(utt2spk)!r},"
        f" '--speakers', {str(speakers)!r}, '--out', {str(tmp_path / 'sub')!r}, '--n-boot', '20'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'speechbrain', 'torchaudio'))\n"
        "print('HEAVY', heavy)\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, sparc_eval.metrics, sparc_eval.metrics.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'speechbrain', 'matplotlib', 'scipy', 'sklearn')))",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


# ----------------------------------------------------------------------------- real data


def vpc_text_scores(vpc: Path, out: Path):
    """A real score file: TF-IDF cosine between each enrollment speaker's concatenated
    enrollment transcripts and the trial utterance's transcript (VoicePrivacy test, female)."""
    text_mod = pytest.importorskip("sklearn.feature_extraction.text")

    def kv(p):
        return dict(line.split(maxsplit=1) for line in p.read_text().splitlines() if line.strip())

    enr_text, enr_u2s = (
        kv(vpc / "libri_test_enrolls" / "text"),
        kv(vpc / "libri_test_enrolls" / "utt2spk"),
    )
    trial_text = kv(vpc / "libri_test_trials_f" / "text")
    docs = {}
    for utt, words in enr_text.items():
        docs.setdefault(enr_u2s[utt].strip(), []).append(words)
    trials = [
        line.split() for line in (vpc / "libri_test_trials_f" / "trials").read_text().splitlines()
    ]
    spks, utts = sorted(docs), sorted(trial_text)
    vec = text_mod.TfidfVectorizer(sublinear_tf=True)
    vec.fit([" ".join(docs[s]) for s in spks] + [trial_text[u] for u in utts])
    sim = (
        vec.transform([" ".join(docs[s]) for s in spks])
        @ vec.transform([trial_text[u] for u in utts]).T
    ).toarray()
    si, ui = {s: i for i, s in enumerate(spks)}, {u: i for i, u in enumerate(utts)}
    enroll = [t[0] for t in trials]
    test = [t[1] for t in trials]
    scores = sim[[si[e] for e in enroll], [ui[t] for t in test]]
    write_scores(out, enroll, test, scores, np.array([t[2] for t in trials]))
    return out


@pytest.mark.slow("scores the real VoicePrivacy lists with TF-IDF: about 3 s")
def test_cli_on_voiceprivacy_text_scores(data_dir, tmp_path, capsys):
    vpc = data_dir / "vpc_librispeech"
    if not (vpc / "libri_test_trials_f" / "trials").exists():
        pytest.skip("VoicePrivacy lists not found")
    scores = vpc_text_scores(vpc, tmp_path / "scores.txt")
    speakers = tmp_path / "speakers.csv"
    rows = {}
    for d in ("libri_test_enrolls", "libri_test_trials_f"):
        for line in (vpc / d / "spk2gender").read_text().split("\n"):
            if line.strip():
                spk, sex = line.split()
                rows[spk] = sex
    speakers.write_text("speaker,sex\n" + "".join(f"{k},{v}\n" for k, v in sorted(rows.items())))
    utt2spk = vpc / "libri_test_trials_f" / "utt2spk"
    out = tmp_path / "in_process"
    assert (
        main(
            [
                "metrics",
                "--scores",
                str(scores),
                "--utt2spk",
                str(utt2spk),
                "--speakers",
                str(speakers),
                "--out",
                str(out),
                "--dataset",
                "vpc libri_test_trials_f",
                "--features",
                "text tf-idf",
            ]
        )
        == 0
    )
    doc = strict_json(out / "results.json")
    check_schema(doc)
    ov = doc["overall"]
    assert ov["n_target"] == 548 and ov["n_nontarget"] == 11196
    assert 0.0 <= ov["eer"] <= 0.5 and ov["ci95"]["eer"][0] <= ov["eer"] <= ov["ci95"]["eer"][1]
    assert len(doc["per_speaker"]) == 20
    no_target = [s for s, v in doc["per_speaker"].items() if v["n_target"] == 0]
    assert no_target and all(doc["per_speaker"][s]["eer"] is None for s in no_target)
    assert doc["segments"]["sex"]["F"]["n_speakers"] == 20
    for name in ("roc.png", "det.png", "per_speaker_eer.png", "segments.png"):
        data = (out / name).read_bytes()
        assert data[:8] == PNG and len(data) > 1000
    capsys.readouterr()
    print(
        f"VPC libri_test_trials_f, TF-IDF text scorer: EER {100 * ov['eer']:.2f}%, AUC {ov['auc']:.3f}"
    )

    sub = tmp_path / "subprocess"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sparc_eval.cli",
            "metrics",
            "--scores",
            str(scores),
            "--utt2spk",
            str(utt2spk),
            "--out",
            str(sub),
            "--n-boot",
            "100",
            "--no-plots",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(sub / "results.json")
    doc2 = strict_json(sub / "results.json")
    assert doc2["overall"]["eer"] == ov["eer"] and doc2["overall"]["auc"] == ov["auc"]


def test_align_trials_for_paired_bootstrap(tmp_path):
    from sparc_eval.metrics import align_trials, paired_bootstrap

    a = read_scores(write(tmp_path, "a.txt", GOOD))
    shuffled = (
        "spk2 u2 1.5 target\nspk1 u2 -0.1 nontarget\nspk1 u1 0.4 target\nspk2 u1 0.3 nontarget\n"
    )
    b = read_scores(write(tmp_path, "b.txt", shuffled))
    sa, sb, y = align_trials(a, b)
    assert sb.tolist() == [0.4, 0.3, -0.1, 1.5] and y.tolist() == a.labels.tolist()
    assert paired_bootstrap(sa, sb, y, boot=BootstrapSettings(unit="trial", n_boot=20)).n_boot == 20
    c = read_scores(
        write(tmp_path, "c.txt", shuffled.replace("spk1 u1 0.4 target", "spk1 u1 0.4 nontarget"))
    )
    with pytest.raises(DataError, match="different labels"):
        align_trials(a, c)
    d = read_scores(write(tmp_path, "d.txt", shuffled.replace("spk2 u2", "spk3 u2")))
    with pytest.raises(DataError, match="spk2 u2 is not in"):
        align_trials(a, d)


def _metrics(scores, out, *extra) -> str:
    """Runs ``sparc-eval metrics`` (100 resamples, no plots); returns what it said on stderr."""
    import io
    from contextlib import redirect_stderr

    args = ["metrics", "--scores", scores, "--out", out, "--n-boot", 100, "--no-plots", *extra]
    err = io.StringIO()
    with redirect_stderr(err):
        assert main([str(a) for a in args]) == 0
    return err.getvalue()


def test_cli_bootstrap_unit_follows_what_the_files_say(tmp_path):
    """Enrolled speakers known (enrollment ids that are speakers of --utt2spk, or --enroll2spk):
    two-way; --utt2spk alone with enrollment ids it does not know: test speakers, the enrolled
    side held fixed, said on stderr, in the report and in run.bootstrap; no --utt2spk: trials."""
    scores, utt2spk, _ = synthetic(tmp_path)
    said = _metrics(scores, tmp_path / "two_way", "--utt2spk", utt2spk)
    assert "speakers on both sides" in said
    two_way = strict_json(tmp_path / "two_way/results.json")
    assert two_way["run"]["bootstrap_unit"] == "two_way" and two_way["run"]["deviations"] == {}
    assert two_way["run"]["bootstrap"]["sides"] == "one draw"
    report = (tmp_path / "two_way/report.md").read_text()
    assert "resamples of the speakers on both sides of the trials, enrolled and tested" in report

    # the same trials with enrollment models named otherwise ("model-spk0"): unknown to utt2spk
    renamed = tmp_path / "renamed.txt"
    renamed.write_text(
        "".join(f"model-{line}" for line in scores.read_text().splitlines(keepends=True))
    )
    said = _metrics(renamed, tmp_path / "fixed", "--utt2spk", utt2spk)
    assert "test speakers; the enrolled side is held fixed" in said
    fixed = strict_json(tmp_path / "fixed/results.json")
    assert fixed["run"]["bootstrap_unit"] == "speaker"
    assert fixed["run"]["bootstrap"]["enrollment_side"].startswith("held fixed")
    assert "bootstrap_unit_speaker" in fixed["run"]["deviations"]
    assert "the enrolled side is held fixed" in (tmp_path / "fixed/report.md").read_text()
    assert fixed["overall"]["eer"] == two_way["overall"]["eer"]

    enroll2spk = tmp_path / "enroll2spk"
    enroll2spk.write_text("".join(f"model-spk{i} spk{i}\n" for i in range(8)))
    _metrics(renamed, tmp_path / "mapped", "--utt2spk", utt2spk, "--enroll2spk", enroll2spk)
    mapped = strict_json(tmp_path / "mapped/results.json")
    assert mapped["run"]["bootstrap_unit"] == "two_way"
    assert mapped["overall"]["ci95"] == two_way["overall"]["ci95"]  # the same draws, the same CIs

    said = _metrics(scores, tmp_path / "trial")
    assert "too narrow" in said
    trial = strict_json(tmp_path / "trial/results.json")
    assert trial["run"]["bootstrap_unit"] == "trial"
    assert "bootstrap_unit_trial" in trial["run"]["deviations"]
    assert "resamples of trials" in (tmp_path / "trial/report.md").read_text()
    # 8 speakers, each enrolled and tested: resampling both sides widens the interval
    width = lambda doc: doc["overall"]["ci95"]["eer"][1] - doc["overall"]["ci95"]["eer"][0]
    assert width(two_way) > width(fixed)


def test_enroll2spk_needs_utt2spk(tmp_path, capsys):
    scores, utt2spk, _ = synthetic(tmp_path)
    args = ["metrics", "--scores", str(scores), "--out", str(tmp_path / "o")]
    assert main([*args, "--enroll2spk", str(utt2spk)]) == 2
    assert "--enroll2spk needs --utt2spk" in capsys.readouterr().err
