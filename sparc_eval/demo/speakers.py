"""A demo speaker: an espeak-ng voice (language voice, variant, pitch, pitch range, rate) with the
sex, age and accent attributes the demo corpora give it."""

from __future__ import annotations

from dataclasses import dataclass

from ..data.attributes import age_group

FEMALE_VARIANTS = ("f1", "f2", "f3", "f4", "f5")
MALE_VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8")
AGE_RANGES = {"<30": (18, 29), "30-60": (30, 59), "60+": (60, 75)}


@dataclass(frozen=True)
class Speaker:
    id: str
    sex: str
    age: int
    accent: str
    voice: str
    variant: str
    rate: int
    pitch: int
    pitch_range: int

    def synth(self):
        from ..speech.espeak import EspeakSynth

        return EspeakSynth(
            voice=self.voice,
            variant=self.variant,
            rate=self.rate,
            pitch=self.pitch,
            pitch_range=self.pitch_range,
        )

    @property
    def voice_name(self) -> str:
        return f"{self.voice}+{self.variant}"

    @property
    def age_group(self) -> str:
        return age_group(self.age)
