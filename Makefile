# Two commands matter: `make demo` (whole pipeline on the bundled sample traces) and `make test`.
# Both set up their own virtual environment from a fresh clone (only python3 >= 3.11 and make needed).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
MODLIST := $(VENV)/.modules
PKGDIRS := contracts cli traces mining checks repair ledger
DEMO   := .demo
CONTRACTS := $(BIN)/contracts

.PHONY: install test lint format demo bench sample clean FORCE

# The editable install is "strict" (a link tree mypy and IDEs see as a normal package), so it must be
# redone when a module is added or removed: $(MODLIST) changes only when the set of files changes.
$(MODLIST): FORCE
	@mkdir -p $(VENV)
	@find $(PKGDIRS) \( -name '*.py' -o -name '*.json' \) | sort > $@.new
	@cmp -s $@.new $@ || mv $@.new $@
	@rm -f $@.new

$(STAMP): pyproject.toml $(MODLIST)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]' --config-settings editable_mode=strict
	@touch $@

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -p no:cacheprovider

# mypy reads the strict editable link tree, where the folders are mapped into one `contracts` package.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	cd build/__editable__.contracts-*/ && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml -p contracts

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

sample: $(STAMP)
	$(BIN)/python sample_traces/generate.py --out sample_traces

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

demo: $(STAMP)
	@rm -rf $(DEMO) && mkdir -p $(DEMO)
	$(CONTRACTS) ingest sample_traces/clean -o $(DEMO)/corpus
	$(CONTRACTS) corpus info $(DEMO)/corpus

clean:
	rm -rf $(VENV) $(DEMO) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
