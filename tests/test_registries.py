"""Corpus loaders and utility metrics register like anonymizers and attackers: by name, in
entry-point groups (``sparc_eval.corpus_loaders``, ``sparc_eval.utility_metrics``). The built-ins
are registered in pyproject.toml; a plug-in is one class plus one registration line, which these
tests stand in for by adding an entry point to what ``sparc_eval.plugins.entry_points`` reads."""

from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from hyperpyyaml import load_hyperpyyaml

from sparc_eval import plugins
from sparc_eval.data.corpora import CORPUS_LOADER_GROUP, detect_layout, load_corpus
from sparc_eval.data.manifest import Manifest, Utterance
from sparc_eval.errors import DataError
from sparc_eval.jobs.card.settings import utility_metrics
from sparc_eval.utility.metrics import (
    UTILITY_METRIC_GROUP,
    PitchCorrelation,
    UtilityInput,
    VoiceDistinctiveness,
    WordErrorRate,
    utility_metric_class,
)

REPO = Path(__file__).resolve().parents[1]
BUILT_IN_LAYOUTS = ("manifest", "kaldi", "edacc", "librispeech", "spane", "audio_folder", "sparc")


def register(monkeypatch, group: str, name: str, obj) -> None:
    """What an installed package's ``name = "module:Class"`` line in ``group`` does, for this test."""
    real = plugins.entry_points
    entry = EntryPoint(name, f"{__name__}:{obj.__name__}", group)
    monkeypatch.setattr(
        plugins, "entry_points", lambda g: {**real(g), name: entry} if g == group else real(g)
    )


def pyproject_group(group: str) -> dict:
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return project["entry-points"][group]


# --- corpus loaders ------------------------------------------------------------------------------


class SpeakersTsvLoader:
    """A made-up layout: a folder holding ``speakers.tsv`` (``id <tab> speaker <tab> text``)."""

    name = "speakers_tsv"
    priority = 45  # after the built-in folder layouts: a Kaldi dir with a speakers.tsv stays Kaldi

    def detects(self, path: Path) -> bool:
        return path.is_dir() and (path / "speakers.tsv").is_file()

    def load(self, path, **_unused) -> Manifest:
        rows = (Path(path) / "speakers.tsv").read_text().splitlines()
        utterances = [
            Utterance(id=i, speaker=s, text=t, episode=s)
            for i, s, t in (row.split("\t") for row in rows if row.strip())
        ]
        return Manifest(utterances, name=str(path)).validate()


class EarlySpeakersTsvLoader(SpeakersTsvLoader):
    priority = 15  # before Kaldi (20): a folder with both is read from speakers.tsv


class MisnamedLoader(SpeakersTsvLoader):
    name = "something_else"


@pytest.fixture
def speakers_tsv(tmp_path) -> Path:
    rows = ["u1\talice\thello there", "u2\talice\tgood morning", "u3\tbob\tsee you"]
    (tmp_path / "speakers.tsv").write_text("\n".join(rows) + "\n")
    return tmp_path


def test_the_built_in_loaders_are_registered_in_detection_order():
    from sparc_eval.data.corpora import LAYOUTS, corpus_loaders

    declared = pyproject_group(CORPUS_LOADER_GROUP)
    installed = {n: e.value for n, e in plugins.entry_points(CORPUS_LOADER_GROUP).items()}
    assert set(declared) == set(BUILT_IN_LAYOUTS)
    assert {n: installed.get(n) for n in declared} == declared  # the metadata is up to date
    assert LAYOUTS == BUILT_IN_LAYOUTS
    assert [loader.priority for loader in corpus_loaders()] == [10, 20, 30, 40, 50, 55, 60]


def test_a_registered_loader_is_detected_and_loaded(monkeypatch, speakers_tsv):
    with pytest.raises(DataError, match="unknown corpus layout"):
        detect_layout(speakers_tsv)
    register(monkeypatch, CORPUS_LOADER_GROUP, "speakers_tsv", SpeakersTsvLoader)
    from sparc_eval.data.corpora import LAYOUTS

    assert LAYOUTS == (
        "manifest",
        "kaldi",
        "edacc",
        "librispeech",
        "speakers_tsv",
        "spane",
        "audio_folder",
        "sparc",
    )
    assert detect_layout(speakers_tsv) == "speakers_tsv"
    corpus = load_corpus(speakers_tsv)
    assert corpus.speakers() == ["alice", "bob"] and corpus.get("u3").text == "see you"
    assert len(load_corpus(speakers_tsv, layout="speakers_tsv", skip_missing=True)) == 3


@pytest.mark.parametrize(
    "loader, found", [(SpeakersTsvLoader, "kaldi"), (EarlySpeakersTsvLoader, "speakers_tsv")]
)
def test_priority_puts_a_loader_before_or_after_the_built_ins(
    monkeypatch, speakers_tsv, loader, found
):
    (speakers_tsv / "utt2spk").write_text("u1 alice\n")
    register(monkeypatch, CORPUS_LOADER_GROUP, "speakers_tsv", loader)
    assert detect_layout(speakers_tsv) == found


def test_an_unknown_layout_names_the_registered_ones(tmp_path):
    with pytest.raises(DataError, match="unknown layout 'tsv'.*one of manifest, kaldi, edacc"):
        load_corpus(tmp_path, layout="tsv")


def test_a_loader_registered_under_another_name_is_refused(monkeypatch, speakers_tsv):
    register(monkeypatch, CORPUS_LOADER_GROUP, "speakers_tsv", MisnamedLoader)
    with pytest.raises(DataError, match="named 'something_else' but registered as 'speakers_tsv'"):
        detect_layout(speakers_tsv)


# --- utility metrics -----------------------------------------------------------------------------


class PairCount:
    """A made-up utility metric: how many utterance pairs were compared, times ``scale``."""

    name = "pair_count"

    def __init__(self, scale: int = 1):
        self.scale = scale

    def compute(self, pair: UtilityInput) -> dict:
        n = self.scale * len(pair.pairs())
        return {"value": n, "ci95": None, "higher_is_better": None, "definition": "pairs"}


class StubEncoder:
    def embeddings(self, utterances):
        return {}


def test_the_built_in_metrics_are_registered():
    declared = pyproject_group(UTILITY_METRIC_GROUP)
    installed = {n: e.value for n, e in plugins.entry_points(UTILITY_METRIC_GROUP).items()}
    assert {n: installed.get(n) for n in declared} == declared
    assert utility_metric_class("wer") is WordErrorRate
    assert utility_metric_class("rho_f0") is PitchCorrelation
    assert utility_metric_class("gvd") is VoiceDistinctiveness


def test_an_unknown_metric_kind_names_the_registered_ones():
    with pytest.raises(DataError, match="unknown utility metric 'mos'.*gvd, rho_f0, wer"):
        utility_metrics({"utility": {"naturalness": {"kind": "mos"}}})
    with pytest.raises(DataError, match="utility.naturalness names no metric"):
        utility_metrics({"utility": {"naturalness": {"model": "x"}}})
    with pytest.raises(DataError, match="utility.f0: bad options \\['max_pairs'\\]"):
        utility_metrics({"utility": {"f0": {"kind": "rho_f0", "max_pairs": 3}}})


def test_a_metric_named_by_kind_is_the_one_new_builds():
    hp = load_hyperpyyaml(
        """
utility:
    wer_new: !new:sparc_eval.utility.metrics.WordErrorRate
        asr: faster-whisper
    wer_kind: {kind: wer, asr: faster-whisper}
    f0_new: !new:sparc_eval.utility.metrics.PitchCorrelation
        max_utterances: 50
        lowpass_hz: null
    f0_kind:
        kind: rho_f0
        max_utterances: 50
        lowpass_hz: null
"""
    )
    metrics = utility_metrics(hp)
    for new, kind in (("wer_new", "wer_kind"), ("f0_new", "f0_kind")):
        assert type(metrics[new]) is type(metrics[kind])
        assert vars(metrics[new]) == vars(metrics[kind])
    encoder = StubEncoder()
    gvd = utility_metrics({"utility": {"gvd": {"kind": "gvd", "encoder": encoder}}})["gvd"]
    assert isinstance(gvd, VoiceDistinctiveness) and gvd.encoder is encoder


def test_only_enabled_metrics_are_built():
    hp = {"utility": {"f0": {"kind": "rho_f0"}, "later": {"kind": "mos"}}, "utility_enabled": "f0"}
    assert list(utility_metrics(hp)) == ["f0"]


def test_a_registered_metric_is_found_by_kind(monkeypatch):
    with pytest.raises(DataError, match="'pair_count'"):
        utility_metric_class("pair_count")
    register(monkeypatch, UTILITY_METRIC_GROUP, "pair_count", PairCount)
    metric = utility_metrics({"utility": {"pairs": {"kind": "pair_count", "scale": 2}}})["pairs"]
    corpus = Manifest([Utterance("u1", "alice", "hi", "e1"), Utterance("u2", "bob", "yo", "e2")])
    assert isinstance(metric, PairCount)
    assert metric.compute(UtilityInput("identity", corpus, corpus))["value"] == 4


def test_one_lookup_serves_every_registry():
    """Anonymizers, attackers, corpus loaders, utility metrics and phone recognizers are found
    by one function (issue 64, item 3), with one error naming the registered ones."""
    from sparc_eval.plugins import lookup

    found = {
        group: lookup(f"sparc_eval.{group}", name, what=group).__name__
        for group, name in (
            ("anonymizers", "mcadams"),
            ("attackers", "bag_of_phones"),
            ("corpus_loaders", "kaldi"),
            ("utility_metrics", "wer"),
            ("phone_recognizers", "align"),
        )
    }
    assert found == {
        "anonymizers": "McAdams",
        "attackers": "BagOfPhones",
        "corpus_loaders": "KaldiLoader",
        "utility_metrics": "WordErrorRate",
        "phone_recognizers": "AlignmentPhoneRecognizer",
    }
    path = "anonymizers.identity.Identity"
    assert (
        lookup("sparc_eval.anonymizers", path, what="anonymizer", dotted=True).__name__
        == "Identity"
    )
    with pytest.raises(DataError, match="unknown attacker 'nope'; registered: .*bag_of_phones"):
        lookup("sparc_eval.attackers", "nope", what="attacker", hint=lambda: "a hint")
    from sparc_eval.data.corpora.registry import corpus_loader

    assert corpus_loader("audio-folder").name == "audio_folder"  # a dash for an underscore
    with pytest.raises(DataError, match="unknown attacker 'a.b.C'"):
        lookup("sparc_eval.attackers", "a.b.C", what="attacker")  # a path only where allowed
