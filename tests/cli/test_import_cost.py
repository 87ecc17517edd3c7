"""Start-up cost: the CLI imports a library only in the command that uses it.

Importing jsonschema registers its format checkers, and `rfc3987_syntax` (the `iri` checker) compiles a
grammar at import: about a second on every start. `output_contracts/schemas.py` imports jsonschema lazily and
defers that grammar until an `iri` format is checked; these tests hold both, in fresh interpreters.

Every `contracts` process builds the options of every command (Typer), so a command module imports its
library inside the command, and the choices its options show come from `output_contracts.choices`:
`contracts --help` must not load polars, pyarrow, numpy or the audit pipeline (about 0.8 CPU-s a process
when it did, paid by each of the docs' executed examples and every other subprocess in the suite).
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys

HEAVY = ("jsonschema", "rfc3987_syntax", "lark")
#: What the command libraries pull in: none of it may load to print help.
LIBRARIES = ("numpy", "polars", "pyarrow", "dask")
PIPELINES = (
    "output_contracts.audit.pipeline",
    "output_contracts.checks.checker",
    "output_contracts.mining.miner",
    "output_contracts.traces.ingest",
    "output_contracts.traces.corpus",
    "output_contracts.repair.loop",
)


def _run(code: str) -> object:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_cli_does_not_import_jsonschema() -> None:
    loaded = _run(
        "import json, sys\n"
        "import output_contracts.cli.app\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))\n"
    )
    assert loaded == []


@functools.cache
def _modules_after_help() -> list[str]:
    """Every module a fresh interpreter holds after `contracts --help` (one subprocess for the tests)."""
    loaded = _run(
        "import contextlib, io, json, sys\n"
        "from output_contracts.cli.app import app\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    app(['--help'])\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    assert isinstance(loaded, list)
    return loaded


def test_help_does_not_import_jsonschema() -> None:
    assert [m for m in _modules_after_help() if m.split(".")[0] in HEAVY] == []


def test_help_does_not_import_the_command_libraries() -> None:
    """`--help` builds every command's options but runs none: no polars, pyarrow, numpy, no pipeline."""
    loaded = _modules_after_help()
    assert "output_contracts.cli.audit_cmd" in loaded  # the commands were registered...
    assert [m for m in loaded if m.split(".")[0] in LIBRARIES or m in PIPELINES] == []  # ...lightly


def test_a_command_imports_its_library_when_it_runs() -> None:
    """The other side: the libraries load inside the command, so running one still works (and loads
    what it needs), while a sibling command's library stays out."""
    loaded = _run(
        "import contextlib, io, json, sys\n"
        "from output_contracts.cli.app import app\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    app(['ledger', 'verify', '--help'])\n"
        "with contextlib.suppress(SystemExit):\n"
        "    app(['codes', '--json'])\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('output_contracts.'))))\n"
    )
    assert isinstance(loaded, list)
    assert "output_contracts.checks.outputs" in loaded  # `codes` ran: it imported its table
    assert [m for m in loaded if m in PIPELINES] == []


def test_validation_defers_the_iri_grammar_and_still_checks_formats() -> None:
    result = _run(
        "import json, sys\n"
        "from output_contracts.schemas import jsonschema_module, schema_errors\n"
        "js = jsonschema_module()\n"
        "after_import = 'rfc3987_syntax' in sys.modules\n"
        "V = js.Draft202012Validator\n"
        "def bad(fmt, value):\n"
        "    v = V({'format': fmt}, format_checker=V.FORMAT_CHECKER)\n"
        "    return [e.message for e in v.iter_errors(value)]\n"
        "out = {\n"
        "    'after_import': after_import,\n"
        "    'date_time_bad': bad('date-time', 'tomorrow'),\n"
        "    'date_time_ok': bad('date-time', '2026-03-01T10:00:02Z'),\n"
        "    'uri_bad': bad('uri', 'no scheme'),\n"
        "    'uri_ok': bad('uri', 'https://example.org/a'),\n"
        "    'iri_bad': bad('iri', 'http://ex ample'),\n"
        "    'iri_ok': bad('iri', 'http://\\u4f8b\\u3048.jp/a'),\n"
        "    'real_module': hasattr(sys.modules.get('rfc3987_syntax'), '__file__'),\n"
        "    'measured_at': [e for e in schema_errors({'measured_at': 'tomorrow'}, 'bench-results')\n"
        "                    if e.startswith('/measured_at')],\n"
        "}\n"
        "print(json.dumps(out))\n"
    )
    assert result == {
        "after_import": False,
        "date_time_bad": ["'tomorrow' is not a 'date-time'"],
        "date_time_ok": [],
        "uri_bad": ["'no scheme' is not a 'uri'"],
        "uri_ok": [],
        "iri_bad": ["'http://ex ample' is not a 'iri'"],
        "iri_ok": [],
        "real_module": True,
        "measured_at": ["/measured_at: 'tomorrow' is not a 'date-time'"],
    }
