"""An example semantic executor for `repair-score --executor` (standard library only, no network).

It "executes" nothing: it judges whether the repaired call means what the target call means, where
syntactic M_object is stricter — numbers by value (`5` and `5.0`), strings without case and surrounding
space, arrays of scalars as sets when the target's are unique (an unordered list of tags). A real
executor would run the tool in a sandbox and compare effects; the protocol is the same:

    stdin  {"protocol": 1, "case_id", "tool", "family", "final", "target"}
    stdout {"success": true|false, "detail": "..."}
"""

from __future__ import annotations

import json
import sys


def norm(v):
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        return v.strip().casefold()
    if isinstance(v, list):
        items = [norm(x) for x in v]
        if all(not isinstance(x, (dict, list)) for x in items) and len(set(map(repr, items))) == len(items):
            return sorted(items, key=repr)
        return items
    if isinstance(v, dict):
        return {k: norm(x) for k, x in sorted(v.items())}
    return v


def main():
    req = json.load(sys.stdin)
    ok = norm(req["final"]) == norm(req["target"])
    print(json.dumps({"success": ok, "detail": "same meaning" if ok else "differs"}))


if __name__ == "__main__":
    main()
