# `make demo` (the main job on the built-in demo corpus), `make test`, and `make card` (the anonymizer card).
# Each creates or reuses .venv and installs what it needs from the package registries only.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# A CPU build of torch; pip takes it from a local wheel cache where one exists.
# GPU users: make TORCH_SPEC='torch==2.13.0' PIP_TORCH_ARGS='--index-url ...'
TORCH_SPEC ?= torch==2.13.0
PIP_TORCH_ARGS ?=
# voice (Resemblyzer) pins setuptools<81 in the venv: its webrtcvad imports pkg_resources at run time.
EXTRAS ?= test,anon,ray,text,voice
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml Makefile | cksum | cut -d' ' -f1)
DEMO_OUT ?= results/demo

.PHONY: install test demo card bench clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q $(PIP_TORCH_ARGS) "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	@# pip pairs CPU torch with a CUDA torchaudio that cannot load; libraries that probe for
	@# torchaudio (transformers) then crash. Remove it: SpeechBrain runs on sparc_eval's stand-in.
	@$(PY) -c "import torchaudio" 2>/dev/null || { echo "removing a torchaudio that does not load beside this torch"; $(PY) -m pip uninstall -y -q torchaudio; }
	@rm -f $(VENV)/.installed-*
	@touch $@

test: $(STAMP)
	$(PY) -m pytest -q -ra

# The main job on the built-in demo corpus (reading mode): a phone-only ECAPA attacker trained on
# 24 synthetic speakers and evaluated on 24 others. The last line printed is results.json's path.
demo: $(STAMP)
	$(PY) recipes/train_attacker.py hparams/phones.yaml --data_folder=demo:reading \
		--output_folder=$(DEMO_OUT)/phones --cache_folder=$(DEMO_OUT)/cache

# The anonymizer card on the demo corpus: make card ANONYMIZER=stt_tts, or a list:
# make card ANONYMIZER=[mcadams,stt_tts]. card.md and results.json land in $(CARD_OUT).
ANONYMIZER ?= mcadams
CARD_OUT ?= results/card
card: $(STAMP)
	$(PY) recipes/evaluate_anonymizer.py hparams/evaluate.yaml --anonymizer=$(ANONYMIZER) --output_folder=$(CARD_OUT)

bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) results .pytest_cache
