# Two entry points for a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The demo needs only the core; the tests add the dev extra (linters, browser driver,
# framework adapters), so a newcomer's first `make demo` stays quick.
CORE := $(VENV)/.core-installed
DEV := $(VENV)/.dev-installed

.PHONY: demo readme-figures bench-figures test lint format bench clean real-model

$(CORE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

$(DEV): $(CORE)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# The demo: the clinical example's `perfect` agent stands for the accepted release (the
# baseline); the candidate, `scripted`, skips a lookup 10% of the time and makes a forbidden
# call 2% of the time. The gate, the HTML report and the one-pager judge the candidate
# against the baseline and give one recommendation. A failed gate exits 1, which is a
# result here, not an error. `make readme-figures` replays these commands for the README.
DEMO_RUN := examples/clinical --trials 5 --seed 7
DEMO_GATE := --rules examples/clinical/gates.yaml --baseline .proctor/demo-baseline.jsonl

demo: $(CORE)
	$(BIN)/proctor run $(DEMO_RUN) --agent examples/clinical/agents.py:perfect --quiet
	$(BIN)/proctor export latest --out .proctor/demo-baseline.jsonl
	$(BIN)/proctor run $(DEMO_RUN) --agent examples/clinical/agents.py:scripted \
		--json .proctor/demo-summary.json
	$(BIN)/proctor gate latest $(DEMO_GATE) || [ $$? -eq 1 ]
	$(BIN)/proctor report latest $(DEMO_GATE) --tasks examples/clinical \
		--html .proctor/demo-report.html --md .proctor/demo-report.md
	@echo
	@echo "open .proctor/demo-report.html in a browser; .proctor/demo-report.md is the one-pager."
	@echo "Next (or first '. $(BIN)/activate', then drop '$(BIN)/'):"
	@echo "  $(BIN)/proctor show latest --all-checks"
	@echo "  $(BIN)/proctor review-queue latest"
	@echo "  $(BIN)/proctor gate latest $(DEMO_GATE)"

readme-figures: $(DEV)
	$(BIN)/python benchmarks/intervals.py --runs 2000 --json benchmarks/intervals.json > /dev/null
	$(BIN)/python examples/figures.py

# Benchmark figures, every one in benchmarks/README.md and the README: proctor's own
# (overhead, regrade, validate, start-up, memory) and against peers (Inspect AI, AgentDojo),
# interleaved in one process tree, ratios of the same run; then the limits and long runs
# (benchmarks/limits.py, ~15 minutes on 2 cores). Min/median, load and commit printed; a
# peer or limit that cannot run here keeps its block. proctor's bytecode is compiled first,
# as `pip install` compiles a package (the peers' is): where PYTHONDONTWRITEBYTECODE is set,
# every process would compile the proctor modules it imports again (`proctor --help`: 77-78
# ms without, 58-59 with; a run's graders, imported as it starts: 13.8 ms without, 3.9 with).
bench-figures: $(DEV)
	$(BIN)/python -m compileall -q src/proctor
	$(BIN)/python benchmarks/peers.py --json benchmarks/peers.json
	$(BIN)/python benchmarks/limits.py --json benchmarks/limits.json
	$(BIN)/python examples/figures.py

# One pytest worker per core, each taking whole test files: the tests that share
# something (the Ray cluster, AgentDojo's side of the conformance test) share a module.
# (Not --dist loadgroup: pytest-xdist 3.8 cannot group tests under pytest 9.2.)
test: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest -n auto --dist loadfile --durations=10

format: $(DEV)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(CORE)
	$(BIN)/python benchmarks/overhead.py

clean:
	rm -rf $(VENV) .proctor .pytest_cache .ruff_cache .mypy_cache

# A real open model on this machine's CPU (Gemma 3 270M from PyPI, served by node-llama-cpp
# on 127.0.0.1) as the support suite's agent, the KYC rubric's judge, in `proctor
# calibrate` and as the simulated user of the scenario tasks: README "Local models". Not
# part of `make test` (a ~250 MB download, minutes). REAL_MODEL picks steps and sizes:
# make real-model REAL_MODEL='--only user --user-trials 15'. Each step's figures and time
# go to benchmarks/real_model/figures.json, then into the README's blocks.
REAL_MODEL ?=
real-model: $(CORE)
	$(BIN)/pip install --quiet -e '.[openai]'
	$(BIN)/python benchmarks/real_model/run.py $(REAL_MODEL)
	$(BIN)/python examples/figures.py
