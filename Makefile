# Two commands matter: `make demo` (whole pipeline on the bundled sample traces) and `make test`.
# Both set up their own virtual environment from a fresh clone (only python3 >= 3.11 and make needed).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The package's folders: output_contracts/ and every top-level folder it links to (the one package rule,
# docs/design.md): output_contracts/F -> ../F makes folder F the subpackage output_contracts.F.
PKGDIRS := output_contracts $(sort $(notdir $(shell find output_contracts -maxdepth 1 -type l)))
DEMO   := .demo
CONTRACTS := $(BIN)/contracts

.PHONY: install bytecode test test-wheel lint format demo bench sample clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@# the distribution was called `contracts` before 0.2 (it clashed with PyPI's and PyContracts' `contracts`)
	@$(BIN)/python -m pip uninstall -q -y contracts >/dev/null 2>&1 || true
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

install: $(STAMP)

# Bytecode compiled once, as pip does for an installed wheel: where the environment sets
# PYTHONDONTWRITEBYTECODE (this project's machines do), every process would otherwise compile the modules
# it imports again (`contracts mine`: 88 modules, 0.2 CPU-s), and the suite starts many such processes.
# A module imported as output_contracts/F/m.py keeps its compiled file in output_contracts/F/__pycache__,
# which is F/__pycache__ itself (the link is to the folder). Python still reads a compiled file only while
# it matches its source, so an edit is never missed.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q $(PKGDIRS) tests bench sample_traces > /dev/null

# `make test` is the suite (13:51 on 2 cores from a fresh clone, over its 10-minute target; CHANGELOG.md);
# `make test-wheel` builds the wheel and installs it into a fresh venv beside PyContracts (about 2 minutes,
# needs PyPI): .ci/run runs both. `--dist worksteal`:
# tests/conftest.py puts each worker's share of the slowest files at the head of its slice of the list, and
# an idle worker takes half of what the other has left, so the run does not end on one long test.
test: $(STAMP) bytecode
	$(BIN)/python -m pytest -n 2 --dist worksteal -p no:cacheprovider -m 'not wheel'

test-wheel: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider -m wheel

VULTURE_DIRS := $(PKGDIRS) tests bench sample_traces vulture_allowlist.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/vulture $(VULTURE_DIRS) --min-confidence 60
	$(BIN)/mypy -p output_contracts

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

sample: $(STAMP)
	$(BIN)/python sample_traces/generate.py --out sample_traces

# 100,000 calls, each stage beside its peer (a few minutes on 2 cores); the targets' size:
# make bench BENCH_ARGS='--calls 1000000'
bench: $(STAMP) bytecode
	$(BIN)/python bench/run_all.py $(BENCH_ARGS)

# The whole pipeline on the bundled sample world: ingest -> mine -> check -> audit -> ledger ->
# repair-replay -> plan-check. Commands that report findings on purpose (exit 1) are marked `; test $$? -eq 1`.
demo: $(STAMP) bytecode
	@rm -rf $(DEMO) && mkdir -p $(DEMO)
	@echo "== sample world is up to date"
	$(BIN)/python sample_traces/generate.py --check
	@echo "== ingest (every format; the second run shows ingest is idempotent)"
	$(CONTRACTS) ingest sample_traces/clean sample_traces/faulty sample_traces/formats -o $(DEMO)/corpus --registry sample_traces/tools.json
	$(CONTRACTS) ingest sample_traces/clean -o $(DEMO)/corpus
	$(CONTRACTS) corpus info $(DEMO)/corpus
	@echo "== mine 5 fold checkers from the clean traces"
	$(CONTRACTS) ingest sample_traces/clean -o $(DEMO)/clean --registry sample_traces/tools.json -q
	$(CONTRACTS) mine $(DEMO)/clean --folds 5 --seed 13 --verify -o $(DEMO)/contracts.json --json > $(DEMO)/mine.json
	$(CONTRACTS) rules $(DEMO)/contracts.json --tool get_order --code RELATION --code DATE_ORDER
	@echo "== the same mining on Dask workers: the same bytes"
	$(CONTRACTS) mine $(DEMO)/clean --folds 5 --seed 13 --engine dask --workers 2 -o $(DEMO)/contracts-dask.json -q
	cmp $(DEMO)/contracts.json $(DEMO)/contracts-dask.json && echo "dask engine: byte-identical contract set"
	@echo "== check the faulty traces (exit 1: violations found)"
	$(CONTRACTS) check --contracts $(DEMO)/contracts.json sample_traces/faulty -o $(DEMO)/receipts.jsonl; test $$? -eq 1
	head -n 2 $(DEMO)/receipts.jsonl
	@echo "== audit: cross-fitted replay, fire events frozen in a ledger before labels are joined"
	$(CONTRACTS) audit sample_traces/ --folds 5 --registry sample_traces/tools.json --ledger $(DEMO)/audit-ledger -o $(DEMO)/audit.json --markdown $(DEMO)/audit.md --max-fire-rate 0.02 --min-detection 0.8
	$(CONTRACTS) inject sample_traces/clean -o $(DEMO)/injected.jsonl --kinds all --rate 0.1 --seed 13
	$(CONTRACTS) audit-score $(DEMO)/audit-ledger --corpus $(DEMO)/audit-ledger.corpus/corpus --max-fire-rate 0.02 --max-spurious-per-100 5 -q
	@echo "== ledger: verify, anchor, prove one entry"
	$(CONTRACTS) ledger verify $(DEMO)/audit-ledger --require-frozen
	$(CONTRACTS) ledger show $(DEMO)/audit-ledger --kind audit.end
	$(CONTRACTS) ledger prove $(DEMO)/audit-ledger 1 > $(DEMO)/proof.json
	$(CONTRACTS) ledger verify-proof $(DEMO)/proof.json --root $$($(CONTRACTS) ledger head $(DEMO)/audit-ledger --json | $(BIN)/python -c 'import json,sys; print(json.load(sys.stdin)["root"])')
	@echo "== repair-replay: contract-constrained repair of malformed calls, ledgered and scored"
	$(CONTRACTS) repair-cases $(DEMO)/clean --registry sample_traces/tools.json -o $(DEMO)/repair-cases.jsonl --targets $(DEMO)/repair-targets.jsonl --kinds all --per-kind 8 --seed 13
	$(CONTRACTS) repair-replay $(DEMO)/repair-cases.jsonl --policy heuristic --ledger $(DEMO)/repair-ledger --seed 13
	$(CONTRACTS) ledger verify $(DEMO)/repair-ledger --require-frozen
	cd $(DEMO)/repair-ledger && sha256sum -c --quiet manifest-sha256.txt && echo "sha256sum -c: OK"
	$(CONTRACTS) repair-score $(DEMO)/repair-ledger --targets $(DEMO)/repair-targets.jsonl --markdown $(DEMO)/repair-score.md -o $(DEMO)/repair-score.json
	@echo "== report: one static HTML page of the audit, the contract set, the repair score, the receipts and a drift"
	$(CONTRACTS) mine sample_traces/clean/part-1.jsonl.gz --registry sample_traces/tools.json --folds 1 -o $(DEMO)/contracts-part-1.json -q
	$(CONTRACTS) diff $(DEMO)/contracts-part-1.json $(DEMO)/contracts.json --json > $(DEMO)/diff.json
	$(CONTRACTS) ledger head $(DEMO)/repair-ledger --json > $(DEMO)/repair-head.json
	$(CONTRACTS) report $(DEMO)/audit.json $(DEMO)/mine.json $(DEMO)/contracts.json $(DEMO)/repair-score.json \
	  $(DEMO)/repair-head.json $(DEMO)/diff.json $(DEMO)/receipts.jsonl -o $(DEMO)/report.html
	@echo "== plan-check and the registry as the one source of tool definitions"
	$(CONTRACTS) registry infer $(DEMO)/clean --contracts $(DEMO)/contracts.json -o $(DEMO)/inferred-tools.json
	$(CONTRACTS) registry check sample_traces/tools.json $(DEMO)/clean
	$(CONTRACTS) tools export --registry sample_traces/tools.json --target openai -o $(DEMO)/openai-tools.json
	$(CONTRACTS) plan-check docs/examples/plan-world/pass-basic.json docs/examples/plan-world/pass-steps.jsonl --registry docs/examples/plan-world/tools.json
	$(CONTRACTS) plan-check docs/examples/plan-world/fail-many.json --registry docs/examples/plan-world/tools.json; test $$? -eq 1
	@echo "== a configured repository: no path arguments (sample_traces/contracts.toml)"
	cd sample_traces && rm -rf .contracts && ../$(CONTRACTS) config && ../$(CONTRACTS) ingest -q \
	  && ../$(CONTRACTS) mine -q && ../$(CONTRACTS) audit -q > /dev/null \
	  && ../$(CONTRACTS) repair-cases && ../$(CONTRACTS) repair-replay && ../$(CONTRACTS) ledger verify .contracts/repair-ledger
	@echo "demo finished: artifacts in $(DEMO)/; to run contracts yourself: source $(VENV)/bin/activate (or prefix commands with $(BIN)/)"

clean:
	rm -rf $(VENV) $(DEMO) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
