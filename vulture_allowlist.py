"""Names vulture (`make lint`) reports as unused but that are used in ways it cannot see.

Typer commands registered by decorator, StrEnum members chosen on the command line, protocol and dunder
parameters, pytest hooks and fixtures found by name, and bench methods dispatched with getattr. Regenerate
the candidates with `vulture <folders> --make-whitelist` and keep only such names here; dead code is
deleted, not listed.
"""

# ruff: noqa
# mypy: ignore-errors
popitem  # unused variable (bench/tau_tools.py)
_.do_cancel  # unused method (bench/tau_tools.py)
_.do_address  # unused method (bench/tau_tools.py)
_.do_payment  # unused method (bench/tau_tools.py)
_.do_exchange  # unused method (bench/tau_tools.py)
_.do_return  # unused method (bench/tau_tools.py)
_.do_cancel  # unused method (bench/tau_tools.py)
_.do_baggage  # unused method (bench/tau_tools.py)
_.do_flights  # unused method (bench/tau_tools.py)
_.do_passengers  # unused method (bench/tau_tools.py)
_.do_certificate  # unused method (bench/tau_tools.py)
v1  # unused variable (checks/receipts.py:39)
EXIT_OK  # unused variable (cli/common.py)
openai_chat  # unused variable (cli/ingest_cmd.py)
otel  # unused variable (cli/ingest_cmd.py)
tau_bench  # unused variable (cli/ingest_cmd.py)
pointer_only  # StrEnum member chosen by --feedback (repair/state.py)
code_only  # StrEnum member chosen by --feedback (repair/state.py)
context_only  # StrEnum member chosen by --feedback (repair/state.py)
verify_command  # unused function (cli/ledger_cmd.py)
show_command  # unused function (cli/ledger_cmd.py)
head_command  # unused function (cli/ledger_cmd.py)
prove_command  # unused function (cli/ledger_cmd.py)
verify_proof_command  # unused function (cli/ledger_cmd.py)
repair_command  # unused function (cli/ledger_cmd.py)
registry_infer  # unused function (cli/plan_cmd.py)
registry_check  # unused function (cli/plan_cmd.py)
tools_export  # unused function (cli/plan_cmd.py)
precomputed  # unused variable (cli/repair_cmd.py)
heuristic  # unused variable (cli/repair_cmd.py)
exc_type  # unused variable (ledger/writer.py)
CLS_ARR  # unused variable (mining/data.py)
pytest_addoption  # unused function (tests/conftest.py)
pytest_terminal_summary  # unused function (tests/conftest.py)
temporal_registry  # unused function (tests/plan/conftest.py)
__getattr__  # unused function (module __getattr__, PEP 562: lazy re-exports of checks, rules, registry, repair)
pytestmark  # pytest reads a module-level mark by this name (tests/cli/test_full_disk.py)
