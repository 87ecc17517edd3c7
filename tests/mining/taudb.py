"""Build a corpus of *real* tool outputs from the τ-bench retail and airline databases.

τ-bench's read tools return a database record verbatim (`get_order_details(order_id)` returns
`orders[order_id]` as JSON, likewise `get_product_details`, `get_user_details` and the airline's
`get_user_details` and `get_reservation_details`). Calling every read tool once per record gives a
corpus of real outputs whose invariants are known by construction: the id argument is echoed, prices
are positive, an order's status is one of the statuses the database holds. Arguments follow each
domain's `tools.json`. A record's task is its owner (user id) where it has one — calls about one
customer are not independent evidence — else the record itself.

    python tests/mining/taudb.py DATA_DIR OUT.jsonl --domain retail|airline [--users PATH]

writes flat JSONL (one domain per corpus: both have a `get_user_details`, with different records).

`DATA_DIR` is the `tau_bench` folder of ../shared/data (read in place, never copied).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson


def _load(p: Path) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads(p.read_bytes())
    return data


def _params(tools_json: Path) -> dict[str, list[str]]:
    """Declared argument names of each tool (τ-bench `tools.json`: a list of {name, parameters})."""
    out = {}
    for t in orjson.loads(tools_json.read_bytes()):
        f = t.get("function", t)
        out[f["name"]] = list(f["parameters"]["properties"])
    return out


def _call(tool: str, args: dict[str, Any], result: Any, task: str, n: int) -> dict[str, Any]:
    return {"trace_id": f"{tool}-{n:05d}", "task_id": task, "tool": tool, "arguments": args, "result": result}


def retail(root: Path) -> Iterator[dict[str, Any]]:
    """One call per order, product and user of the retail database."""
    d = root / "retail"
    params = _params(d / "tools.json")
    assert params["get_order_details"] == ["order_id"] and params["get_product_details"] == ["product_id"]
    for n, (oid, rec) in enumerate(sorted(_load(d / "orders.json").items())):
        yield _call("get_order_details", {"order_id": oid}, rec, f"user:{rec['user_id']}", n)
    for n, (pid, rec) in enumerate(sorted(_load(d / "products.json").items())):
        yield _call("get_product_details", {"product_id": pid}, rec, f"product:{pid}", n)
    for n, (uid, rec) in enumerate(sorted(_load(d / "users.json").items())):
        yield _call("get_user_details", {"user_id": uid}, rec, f"user:{uid}", n)


def airline(root: Path) -> Iterator[dict[str, Any]]:
    """One call per user and per reservation of the airline database."""
    d = root / "airline"
    params = _params(d / "tools.json")
    assert params["get_user_details"] == ["user_id"] and params["get_reservation_details"] == [
        "reservation_id"
    ]
    yield from airline_users(root, d / "users.json")
    for n, (rid, rec) in enumerate(sorted(_load(d / "reservations.json").items())):
        yield _call("get_reservation_details", {"reservation_id": rid}, rec, f"user:{rec['user_id']}", n)


def airline_users(root: Path, users: Path) -> Iterator[dict[str, Any]]:
    """Only `get_user_details` over the given users file (for the schema-drift comparison)."""
    for n, (uid, rec) in enumerate(sorted(_load(users).items())):
        yield _call("get_user_details", {"user_id": uid}, rec, f"user:{uid}", n)


def write_jsonl(records: Iterator[dict[str, Any]], out: Path) -> int:
    n = 0
    with open(out, "wb") as fh:
        for r in records:
            fh.write(orjson.dumps(r) + b"\n")
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data_dir", type=Path, help="the tau_bench folder")
    ap.add_argument("out", type=Path, help="flat JSONL to write")
    ap.add_argument("--domain", choices=("retail", "airline"), default="retail")
    ap.add_argument("--users", type=Path, help="only airline get_user_details over this users.json")
    a = ap.parse_args(argv)
    if a.users:
        recs = airline_users(a.data_dir, a.users)
    else:
        recs = retail(a.data_dir) if a.domain == "retail" else airline(a.data_dir)
    n = write_jsonl(recs, a.out)
    print(f"wrote {n} calls to {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
