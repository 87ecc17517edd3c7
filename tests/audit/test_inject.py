"""Fault injection (output_contracts.audit.inject) and `contracts inject`."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from output_contracts.audit.incidents import INCIDENT_KINDS
from output_contracts.audit.inject import ALL_KINDS, KINDS, get_at, inject_records, parse_kinds, read_flat
from output_contracts.cli.app import app
from output_contracts.errors import UsageError


def world(n_tasks: int = 30, seed: int = 1) -> list[dict[str, Any]]:
    """Orders with items/subtotal/tax/total and ordered dates; inventory lookups echoing the sku."""
    r = random.Random(seed)
    recs: list[dict[str, Any]] = []
    names = [
        "Ann Lee",
        "Bo Chen",
        "Cy Diaz",
        "Di Fox",
        "Ed Gray",
        "Flo Hu",
        "Gus Ivy",
        "Hal Jo",
        "Ida Kim",
        "Jo Lu",
    ]
    for t in range(n_tasks):
        for e in range(2):
            tr = f"ep-{t}-{e}"
            for s in range(6):
                if s % 2 == 0:
                    prices = [round(r.uniform(1, 50), 2) for _ in range(r.randint(2, 3))]
                    items = [{"sku": f"S{j}", "price": p} for j, p in enumerate(prices)]
                    sub = round(sum(prices), 2)
                    tax = round(r.uniform(0.5, 5), 2)
                    oid = f"O-{t}-{e}-{s}"
                    res = {
                        "order_id": oid,
                        "status": r.choice(["pending", "shipped", "delivered"]),
                        "items": items,
                        "subtotal": sub,
                        "tax": tax,
                        "total": round(sub + tax, 2),
                        "created": f"2024-05-{r.randint(1, 9):02d}",
                        "updated": f"2024-05-{r.randint(10, 28):02d}",
                        "customer": r.choice(names),
                    }
                    args: dict[str, Any] = {"order_id": oid}
                    tool = "get_order"
                else:
                    sku = f"SKU-{r.randint(1000, 9999)}"
                    res = {"sku": sku, "available": r.randint(1, 40), "warehouse": r.choice(["east", "west"])}
                    args = {"sku": sku}
                    tool = "lookup_inventory"
                recs.append(
                    {"trace_id": tr, "task_id": f"task-{t}", "tool": tool, "arguments": args, "result": res}
                )
    return recs


def test_parse_kinds() -> None:
    assert parse_kinds("all") == ALL_KINDS == KINDS + INCIDENT_KINDS
    assert parse_kinds("basic") == KINDS and parse_kinds("incidents") == INCIDENT_KINDS
    assert parse_kinds("incidents,sign_flip") == ("sign_flip", *INCIDENT_KINDS)
    assert parse_kinds("") == ALL_KINDS
    assert parse_kinds("drop_field,sign_flip") == ("sign_flip", "drop_field")
    with pytest.raises(UsageError, match="unknown fault kind"):
        parse_kinds("sign_flip,bogus")


def test_every_kind_planted_and_labelled() -> None:
    recs = world()
    new, rep = inject_records(recs, kinds=KINDS, rate=0.5, seed=3)
    assert rep.records == len(recs) == len(new)
    assert set(rep.injected) == set(KINDS)
    assert all(n > 0 for n in rep.injected.values()), rep.injected
    # balanced: least-injected-first keeps every kind within a few of the others
    assert max(rep.injected.values()) - min(rep.injected.values()) <= 3
    n_faults = 0
    for old, rec in zip(recs, new, strict=True):
        lab = rec.get("labels") or {}
        if not lab.get("fault"):
            assert rec == old
            continue
        n_faults += 1
        assert rec["arguments"] == old["arguments"]
        assert rec["result"] != old["result"]
        kind, path = lab["fault"], lab["fault_path"]
        assert lab["original"] == get_at(old["result"], path)
        res = rec["result"]
        if kind == "sign_flip":
            assert get_at(res, path) == -lab["original"] < 0
        elif kind == "drop_field":
            with pytest.raises(KeyError):
                get_at(res, path)
        elif kind == "null_field":
            assert get_at(res, path) is None
        elif kind == "type_swap":
            assert type(get_at(res, path)) is not type(lab["original"])
        elif kind == "stale_echo":
            assert get_at(res, path) != lab["original"]
        elif kind == "date_swap":
            a, b = lab["fault_paths"]
            assert get_at(res, a) == get_at(old["result"], b) and get_at(res, b) == get_at(old["result"], a)
        elif kind == "relation_break":
            assert 0 < abs(get_at(res, path) - lab["original"]) <= 1
        elif kind == "domain_drift":
            assert get_at(res, path) not in {"pending", "shipped", "delivered", "east", "west"}
        elif kind == "plausible_string":
            assert isinstance(get_at(res, path), str) and get_at(res, path) != lab["original"]
        elif kind == "truncated_list":
            assert 1 <= len(get_at(res, path)) < len(lab["original"])
    assert n_faults == sum(rep.injected.values())


def test_deterministic_and_seed_sensitive() -> None:
    recs = world(10)
    a, _ = inject_records(recs, rate=0.3, seed=9)
    b, _ = inject_records(recs, rate=0.3, seed=9)
    c, _ = inject_records(recs, rate=0.3, seed=10)
    assert orjson.dumps(a) == orjson.dumps(b)
    assert orjson.dumps(a) != orjson.dumps(c)


def test_rate_zero_and_labelled_calls_untouched() -> None:
    recs = world(5)
    recs[0]["labels"] = {"fault": "sign_flip", "fault_path": "/tax"}
    new, rep = inject_records(recs, rate=0.0, seed=1)
    assert new == recs and sum(rep.injected.values()) == 0
    new, rep = inject_records(recs, rate=1.0, seed=1, kinds=["sign_flip"])
    assert new[0] == recs[0]
    assert rep.eligible == len(recs) - 1
    with pytest.raises(UsageError):
        inject_records(recs, rate=1.5)


def test_only_requested_kinds() -> None:
    new, rep = inject_records(world(8), rate=1.0, seed=2, kinds=["date_swap", "stale_echo"])
    kinds = {r["labels"]["fault"] for r in new if r.get("labels")}
    assert kinds == {"date_swap", "stale_echo"}
    assert rep.no_target == 0


def _write(recs: list[dict[str, Any]], p: Path) -> None:
    p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))


def test_cli_inject(tmp_path: Path) -> None:
    src = tmp_path / "clean.jsonl"
    _write(world(12), src)
    out = tmp_path / "faulty.jsonl"
    res = CliRunner().invoke(
        app,
        [
            "inject",
            str(src),
            "-o",
            str(out),
            "--kinds",
            "sign_flip,drop_field",
            "--rate",
            "0.2",
            "--seed",
            "4",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    summary = orjson.loads(res.stdout)
    got = read_flat([out])
    faults = [r["labels"]["fault"] for r in got if r.get("labels")]
    assert len(faults) == sum(summary["injected"].values()) > 0
    assert set(faults) <= {"sign_flip", "drop_field"}
    bad = CliRunner().invoke(app, ["inject", str(src), "-o", str(out), "--kinds", "nope"])
    assert bad.exit_code == 2
    assert "unknown fault kind" in bad.output


def test_cli_inject_subprocess(tmp_path: Path, repo: Path) -> None:
    src = tmp_path / "clean.jsonl"
    _write(world(6), src)
    out = tmp_path / "faulty.jsonl"
    args = [
        sys.executable,
        "-m",
        "output_contracts.cli.app",
        "inject",
        str(src),
        "-o",
        str(out),
        "--rate",
        "0.3",
        "--seed",
        "1",
    ]
    p = subprocess.run(args, cwd=repo, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "faults in" in p.stderr
    first = out.read_bytes()
    p2 = subprocess.run(args, cwd=repo, capture_output=True, text=True, timeout=120)
    assert p2.returncode == 0 and out.read_bytes() == first
    missing = subprocess.run(
        [*args[:4], str(tmp_path / "absent.jsonl"), "-o", str(out)],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode == 2
    assert "error[" in missing.stderr


def test_read_flat_gzip_folder_and_bad_line(tmp_path: Path) -> None:
    import gzip

    folder = tmp_path / "traces"
    folder.mkdir()
    recs = world(3)
    (folder / "a.jsonl.gz").write_bytes(gzip.compress(b"".join(orjson.dumps(r) + b"\n" for r in recs[:10])))
    _write(recs[10:], folder / "b.jsonl")
    got = read_flat([folder])
    assert got == recs
    (folder / "c.jsonl").write_bytes(b'{"tool": "x"}\n{not json\n')
    from output_contracts.errors import TraceError

    with pytest.raises(TraceError) as e:
        read_flat([folder])
    assert e.value.line == 2 and e.value.source is not None and e.value.source.endswith("c.jsonl")
