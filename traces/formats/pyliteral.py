"""Python-literal text as JSON, only when that reading is unambiguous.

Some frameworks record a tool's output as Python's `str()` of what it returned: the OpenAI Agents SDK
writes `str({'city': 'Paris', 'temp': 21.5})`, single quotes, `True`/`None`. Such text is not JSON, but it
is the tool's structured result. The rule, so that text that merely looks like a literal stays text:

1. Only text whose first non-blank character is `{` or `[` is tried, and JSON is tried first
   (`decode_result`).
2. Otherwise `ast.literal_eval` reads it (literals only: no names, calls or operators are evaluated), and
   the value is kept only when it **round-trips to JSON**: dicts with string keys, lists, strings,
   booleans, None, integers within int64 and finite floats, all the way down. A tuple, set, bytes,
   complex number, non-string key or huge integer has no faithful JSON form, so the text is kept.
3. Text over 1 MiB is not tried (literal parsing of deep nesting is slow and can exhaust the stack).
"""

from __future__ import annotations

import ast
import math
from typing import Any

from output_contracts.traces.formats.adapter import INT64_MAX, INT64_MIN, decode_result

MAX_LITERAL_CHARS = 1 << 20


def _json_like(v: Any) -> bool:
    if v is None or isinstance(v, bool | str):
        return True
    if isinstance(v, int):
        return INT64_MIN <= v <= INT64_MAX
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, list):
        return all(_json_like(x) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _json_like(x) for k, x in v.items())
    return False


def decode_literal(value: Any) -> Any:
    """A result decoded from JSON or, unambiguously, Python-literal text (see the module docstring)."""
    decoded = decode_result(value)
    if decoded is not value or not isinstance(value, str):
        return decoded
    s = value.strip()
    if s[:1] not in ("{", "[") or len(s) > MAX_LITERAL_CHARS:
        return value
    try:
        parsed = ast.literal_eval(s)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value
    return parsed if isinstance(parsed, dict | list) and _json_like(parsed) else value
