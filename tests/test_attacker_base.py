"""The attacker base class: the contract's optional members have defaults, and the engine reads
them as plain members (through ``optional`` for attackers that do not subclass the base)."""

from types import SimpleNamespace

import pytest

from sparc_eval.attack import Attacker, AttackerBase, Needs, attack, check_attacker
from sparc_eval.attack import run as attack_run
from sparc_eval.attack.cells import model_files_digest
from sparc_eval.attack.contract import OPTIONAL, optional
from sparc_eval.attack.evaluation import EvaluationSettings
from sparc_eval.attack.trials import Trials
from sparc_eval.errors import DataError


class Minimal(AttackerBase):
    name = "minimal"
    needs = Needs(training=False)

    def fit(self, train):
        raise AssertionError("not called by these tests")

    score = fit

    def describe(self):
        return {}

    def deviations(self, plan):
        return {}


class Refuses(Minimal):
    name = "refuses"

    def refusal(self, plan):
        return f"the refuses attacker does not serve {plan.scenario}"


class Llr(Minimal):
    scores_are_llrs = True


class DuckTyped:
    """A third-party attacker that follows the contract without the base class."""

    name, needs = "duck", Needs(training=False)

    def fit(self, train):
        """Nothing to learn."""

    def score(self, plan):
        raise AssertionError("not called by these tests")

    def describe(self):
        return {}

    def deviations(self, plan):
        return {}


PLAN = SimpleNamespace(
    scenario="ignorant", split=object(), lists=None, eval_original=SimpleNamespace(language="en")
)


def test_every_optional_member_has_a_default():
    a = Minimal()
    assert isinstance(a, Attacker) and check_attacker(a) is a
    assert a.timings_s == {} and a.notes == {} and a.scores_are_llrs is False
    assert a.show_progress is True
    assert a.prepare(PLAN) is None and a.refusal(PLAN) is None and a.scenario_label(PLAN) is None
    assert a.model_files() == [] and a.embeddings(PLAN) is None
    assert Minimal.derived_hparams({}, PLAN) == {} and a.derived_hparams({}, PLAN) == {}
    assert Minimal.declared_needs(lambda key: None) is Minimal.needs
    assert all(hasattr(a, name) for name in OPTIONAL)


def test_mutable_defaults_belong_to_each_instance():
    a, b = Minimal(), Minimal()
    a.timings_s["features"] = 1.0
    a.notes["backend"] = {"eer": 0.1}
    assert b.timings_s == {} and b.notes == {}
    assert Minimal().timings_s == {} and "timings_s" not in vars(Minimal)
    a.timings_s = {"scoring": 2.0}  # an attacker may also set its own
    assert a.timings_s == {"scoring": 2.0} and b.timings_s == {}


def test_progress_wraps_in_a_bar_on_stderr_only_when_asked(capsys):
    a = Minimal()
    items = [1, 2, 3]
    a.show_progress = False
    assert a.progress(items, desc="quiet") is items
    assert capsys.readouterr().err == ""
    a.show_progress = True
    assert list(a.progress(iter(items), desc="loud", total=3)) == items
    out = capsys.readouterr()
    assert "loud" in out.err and out.out == ""


def test_duck_typed_attackers_get_the_defaults_through_optional():
    duck = check_attacker(DuckTyped())
    assert not isinstance(duck, AttackerBase) and isinstance(duck, Attacker)
    assert optional(duck, "timings_s") == {} and optional(duck, "notes") == {}
    assert optional(duck, "scores_are_llrs") is False
    assert optional(duck, "refusal")(PLAN) is None and optional(duck, "embeddings")(PLAN) is None
    assert optional(duck, "model_files")() == [] and optional(duck, "prepare")(PLAN) is None
    assert optional(DuckTyped, "derived_hparams")({}, PLAN) == {}
    assert optional(DuckTyped, "declared_needs")(lambda key: None) is DuckTyped.needs
    assert not hasattr(duck, "timings_s")  # nothing written onto a foreign object
    with pytest.raises(ValueError, match="not an optional attacker member"):
        optional(duck, "fit")
    with pytest.raises(DataError, match="is not an attacker"):
        check_attacker(SimpleNamespace(name="x"))


def test_a_refusal_is_reported_not_applicable_before_any_work():
    assert attack_run.not_applicable(Minimal(), PLAN) is None
    assert attack_run.not_applicable(DuckTyped(), PLAN) is None
    why = attack_run.not_applicable(Refuses(), PLAN)
    assert why == "the refuses attacker does not serve ignorant"
    with pytest.raises(DataError, match="does not serve ignorant"):
        attack(Refuses(), PLAN, EvaluationSettings())  # fit() would fail: nothing ran


def test_prepare_runs_only_where_the_attacker_applies():
    ran = []

    class Prepares(Minimal):
        def prepare(self, plan):
            ran.append(plan)

    class RefusesAndPrepares(Refuses, Prepares):
        pass

    attack_run.prepare_attack(Prepares(), PLAN)
    attack_run.prepare_attack(RefusesAndPrepares(), PLAN)
    attack_run.prepare_attack(DuckTyped(), PLAN)  # no prepare: nothing to do
    assert ran == [PLAN]


@pytest.mark.parametrize("attacker, llr", [(Llr(), True), (Minimal(), False), (DuckTyped(), False)])
def test_scores_are_evaluated_as_llrs_when_the_attacker_says_so(monkeypatch, attacker, llr):
    seen = []

    def fake_evaluate(trials, table, settings, llr):
        seen.append(llr)
        return {"not_applicable": {}}

    monkeypatch.setattr(attack_run, "evaluate", fake_evaluate)
    trials = Trials(["a"], ["u1"], [0.5], [True])
    plan = SimpleNamespace(split=None, lists=None)
    attack_run.evaluate_attack(attacker, trials, plan, EvaluationSettings(), speakers={})
    assert seen == [llr]


def test_the_record_and_singling_out_read_the_members(monkeypatch):
    class Labelled(Minimal):
        def scenario_label(self, plan):
            return "semi-informed (back-end)"

        def embeddings(self, plan):
            return {"u1": [1.0]}

    a = Labelled()
    assert attack_run.attacker_record(Minimal(), PLAN) == {}
    assert attack_run.attacker_record(DuckTyped(), PLAN) == {}
    a.notes["backend"] = {"beats_cosine": True}
    assert attack_run.attacker_record(a, PLAN) == {
        "scenario_label": "semi-informed (back-end)",
        "attacker_notes": {"backend": {"beats_cosine": True}},
    }
    for fake in (Minimal(), DuckTyped()):
        block = attack_run.singling_out(fake, PLAN)
        assert "gives no embeddings" in block["not_applicable"]
    import sparc_eval.metrics.singling_out as so

    monkeypatch.setattr(so, "singling_out_block", lambda emb, utt2spk, enroll: {"embedded": emb})
    plan = SimpleNamespace(
        split=SimpleNamespace(enroll={}), eval_original=SimpleNamespace(utt2spk=lambda: {})
    )
    assert attack_run.singling_out(a, plan) == {"embedded": {"u1": [1.0]}}
    own = attack_run.singling_out(a, SimpleNamespace(split=None))
    assert "own protocol" in own["not_applicable"]


def test_model_files_default_to_none_to_key():
    assert model_files_digest(Minimal(), ctx=None) is None
    assert model_files_digest(DuckTyped(), ctx=None) is None


def test_every_attacker_in_attackers_subclasses_the_base():
    from attackers.bag_of_phones import BagOfPhones
    from attackers.ecapa_attacker import EcapaAttacker
    from attackers.embedding import EmbeddingAttacker
    from attackers.pretrained.attacker import PretrainedAttacker
    from attackers.resemblyzer_attacker import ResemblyzerAttacker
    from attackers.text.attacker import TextAttacker
    from attackers.text_utterances import UtteranceText

    for cls in (
        BagOfPhones,
        EcapaAttacker,
        EmbeddingAttacker,
        PretrainedAttacker,
        ResemblyzerAttacker,
        TextAttacker,
        UtteranceText,
    ):
        assert issubclass(cls, AttackerBase), cls
    assert BagOfPhones.declared_needs(lambda key: None) == Needs(words=True, training=False)
    assert EmbeddingAttacker.declared_needs(lambda key: None) is None  # the instance decides
    embedding = ResemblyzerAttacker(progress=False)
    assert embedding.show_progress is False and embedding.timings_s == {}


def test_an_embeddings_method_set_on_the_instance_is_seen():
    from sparc_eval.attack.contract import AttackerBase, provides

    class Plain(AttackerBase):
        name = "plain"

    one, other = Plain(), Plain()
    one.embeddings = lambda plan: {"u": [1.0]}
    assert provides(one, "embeddings") and not provides(other, "embeddings")


def test_a_scenario_label_the_attacker_defines_is_recorded_even_when_null():
    from sparc_eval.attack.contract import AttackerBase
    from sparc_eval.attack.run import attacker_record

    class Labelled(AttackerBase):
        name = "labelled"

        def scenario_label(self, plan):
            return None

    class Plain(AttackerBase):
        name = "plain"

    assert attacker_record(Labelled(), PLAN) == {"scenario_label": None}
    assert attacker_record(Plain(), PLAN) == {}
