"""A bag-of-phones attacker: how often a speaker says each phone, compared by cosine. No training.

The attacker guide's example of a new attacker (:doc:`/plugins/attacker`): one class (the
contract of sparc_eval/attack/) and one hparams file (hparams/bag_of_phones.yaml), run by the
attacker recipe and the leakage comparison.
"""

from sparc_eval.attack import AttackerBase, Needs
from sparc_eval.attack.scoring import score_pairs
from sparc_eval.attack.trials import Trials
from sparc_eval.data.words import reference_text_deviation
from sparc_eval.phones.features import PhoneFeatures


class BagOfPhones(AttackerBase):
    name = "bag_of_phones"
    needs = Needs(words=True, training=False)
    languages = ("en",)  # g2p_en's ARPAbet phones

    def __init__(self, cache_folder: str = "results/cache", phone_text: str = "spoken"):
        self.phones = PhoneFeatures(
            source="transcript", text=phone_text, cache_dir=f"{cache_folder}/features"
        )

    def fit(self, train) -> None:
        """Nothing to learn."""

    def score(self, plan) -> Trials:
        one_hot = self.phones.corpus(
            [*plan.enroll_utterances(), *plan.trial_utterances()], progress=False
        )
        bags = {
            u: m.sum(axis=0) / max(len(m), 1) for u, m in one_hot.items()
        }  # relative phone frequencies
        utt2spk = plan.eval_original.utt2spk()
        pairs = plan.split.trial_pairs(utt2spk)
        return Trials.from_pairs(pairs, score_pairs(bags, plan.split.enroll, pairs), utt2spk)

    def describe(self) -> dict:
        return {"features": "bag_of_phones", "phone_text": self.phones.text}

    def deviations(self, plan) -> dict:
        return reference_text_deviation(plan.utterances(), self.phones.text)
