"""Start-up cost: the CLI does not import jsonschema until something is validated.

Importing jsonschema registers its format checkers, and `rfc3987_syntax` (the `iri` checker) compiles a
grammar at import: about a second on every start. `output_contracts/schemas.py` imports jsonschema lazily and
defers that grammar until an `iri` format is checked; these tests hold both, in fresh interpreters.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("jsonschema", "rfc3987_syntax", "lark")


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


def test_help_does_not_import_jsonschema() -> None:
    loaded = _run(
        "import contextlib, io, json, sys\n"
        "from output_contracts.cli.app import app\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    app(['--help'])\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))\n"
    )
    assert loaded == []


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
