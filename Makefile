# Two entry points for a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The demo needs only the core; the tests add the dev extra (linters, browser driver,
# framework adapters), so a newcomer's first `make demo` stays quick.
CORE := $(VENV)/.core-installed
DEV := $(VENV)/.dev-installed

.PHONY: demo test lint format bench clean

$(CORE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

$(DEV): $(CORE)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: $(CORE)
	$(BIN)/proctor run examples/clinical --agent examples/clinical/agents.py:scripted \
		--trials 5 --seed 7 --store .proctor/demo.db --json .proctor/demo-summary.json
	$(BIN)/proctor report latest --store .proctor/demo.db --tasks examples/clinical \
		--rules examples/clinical/gates.yaml \
		--html .proctor/demo-report.html --md .proctor/demo-report.md
	@echo "open .proctor/demo-report.html in a browser; .proctor/demo-report.md is the one-pager"

test: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest

format: $(DEV)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(CORE)
	$(BIN)/python benchmarks/overhead.py

clean:
	rm -rf $(VENV) .proctor .pytest_cache .ruff_cache .mypy_cache
