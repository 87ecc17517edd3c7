"""Write `tools.json` (a registry) and `calls.jsonl` (flat call records) of five tool families — file,
calendar, database, HTTP and code-edit — for cross-tool-family transfer in repair replay.

    python3 docs/examples/tool-families/generate.py      # rewrites both files, byte for byte the same

Every call is correct for its tool's schema (the tests check it). Build repair cases from them with
`contracts ingest calls.jsonl -o C` and `contracts repair-cases C --registry tools.json`; `repair-score`
then reports `by_tool_family` (the tool name's prefix before the first `.`), and a policy tuned on one
family can be scored on the others (`split-audit` shows the tool sets are disjoint).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
S = "string"


def obj(props: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


TOOLS = [
    (
        "file.write",
        "Write text to a file.",
        obj(
            {
                "path": {"type": S, "pattern": "^/"},
                "content": {"type": S},
                "mode": {"type": S, "enum": ["overwrite", "append"]},
                "create_dirs": {"type": "boolean"},
            },
            ["path", "content", "mode"],
        ),
    ),
    (
        "file.move",
        "Move or rename a file.",
        obj(
            {
                "source": {"type": S, "pattern": "^/"},
                "destination": {"type": S, "pattern": "^/"},
                "overwrite": {"type": "boolean"},
            },
            ["source", "destination"],
        ),
    ),
    (
        "calendar.create_event",
        "Create a calendar event.",
        obj(
            {
                "title": {"type": S},
                "start_date": {"type": S, "format": "date"},
                "end_date": {"type": S, "format": "date"},
                "attendees": {"type": "array", "items": {"type": S, "format": "email"}},
                "reminder_minutes": {"type": "integer", "minimum": 0},
                "all_day": {"type": "boolean"},
            },
            ["title", "start_date", "end_date"],
        ),
    ),
    (
        "calendar.list_events",
        "List the events of a day.",
        obj(
            {
                "date": {"type": S, "format": "date"},
                "max_results": {"type": "integer", "minimum": 1},
                "calendar_id": {"type": S},
            },
            ["date"],
        ),
    ),
    (
        "database.query",
        "Select rows from a table.",
        obj(
            {
                "table_name": {"type": S},
                "columns": {"type": "array", "items": {"type": S}},
                "row_limit": {"type": "integer", "minimum": 1},
                "order_by": {"type": S},
            },
            ["table_name", "columns"],
        ),
    ),
    (
        "database.insert",
        "Insert one row.",
        obj(
            {
                "table_name": {"type": S},
                "row": obj(
                    {"id": {"type": "integer"}, "name": {"type": S}, "active": {"type": "boolean"}},
                    ["id", "name"],
                ),
            },
            ["table_name", "row"],
        ),
    ),
    (
        "http.request",
        "Send an HTTP request.",
        obj(
            {
                "method": {"type": S, "enum": ["GET", "POST", "PUT", "DELETE"]},
                "url": {"type": S, "pattern": "^https://"},
                "timeout_s": {"type": "number", "exclusiveMinimum": 0},
                "retry_count": {"type": "integer", "minimum": 0},
                "follow_redirects": {"type": "boolean"},
            },
            ["method", "url"],
        ),
    ),
    (
        "http.download",
        "Download a URL to a file.",
        obj(
            {
                "url": {"type": S, "pattern": "^https://"},
                "dest_path": {"type": S, "pattern": "^/"},
                "max_bytes": {"type": "integer", "minimum": 1},
            },
            ["url", "dest_path"],
        ),
    ),
    (
        "code.edit",
        "Replace a line range of a source file.",
        obj(
            {
                "file_path": {"type": S},
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1},
                "replacement": {"type": S},
                "dry_run": {"type": "boolean"},
            },
            ["file_path", "start_line", "end_line", "replacement"],
        ),
    ),
    (
        "code.run_tests",
        "Run a test file.",
        obj(
            {
                "test_path": {"type": S},
                "timeout_s": {"type": "integer", "minimum": 1},
                "verbose": {"type": "boolean"},
                "markers": {"type": "array", "items": {"type": S}},
            },
            ["test_path"],
        ),
    ),
]
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "report", "notes", "budget", "sync", "review"]


def arguments(tool: str, rng: random.Random) -> dict:
    w = rng.choice(WORDS)
    n = rng.randint(1, 90)
    day = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if tool == "file.write":
        return {
            "path": f"/srv/{w}/{n}.txt",
            "content": f"{w} {n}",
            "mode": rng.choice(["overwrite", "append"]),
            "create_dirs": rng.random() < 0.5,
        }
    if tool == "file.move":
        return {"source": f"/tmp/{w}-{n}", "destination": f"/srv/{w}/{n}", "overwrite": rng.random() < 0.5}
    if tool == "calendar.create_event":
        return {
            "title": f"{w} {n}",
            "start_date": day,
            "end_date": day,
            "attendees": [f"{w}@example.org"],
            "reminder_minutes": rng.choice([5, 10, 30]),
            "all_day": rng.random() < 0.3,
        }
    if tool == "calendar.list_events":
        return {"date": day, "max_results": rng.randint(1, 50), "calendar_id": f"cal-{w}"}
    if tool == "database.query":
        return {"table_name": f"{w}_rows", "columns": ["id", w], "row_limit": n, "order_by": "id"}
    if tool == "database.insert":
        return {"table_name": f"{w}_rows", "row": {"id": n, "name": w, "active": rng.random() < 0.5}}
    if tool == "http.request":
        return {
            "method": rng.choice(["GET", "POST", "PUT", "DELETE"]),
            "url": f"https://api.example.org/{w}/{n}",
            "timeout_s": rng.choice([1.5, 5, 10]),
            "retry_count": rng.randint(0, 3),
            "follow_redirects": True,
        }
    if tool == "http.download":
        return {
            "url": f"https://files.example.org/{w}.bin",
            "dest_path": f"/srv/dl/{w}-{n}.bin",
            "max_bytes": 1024 * n,
        }
    if tool == "code.edit":
        a = rng.randint(1, 200)
        return {
            "file_path": f"src/{w}.py",
            "start_line": a,
            "end_line": a + rng.randint(0, 5),
            "replacement": f"{w} = {n}",
            "dry_run": rng.random() < 0.5,
        }
    return {
        "test_path": f"tests/test_{w}.py",
        "timeout_s": rng.randint(10, 600),
        "verbose": rng.random() < 0.5,
        "markers": [w],
    }


def main() -> None:
    rng = random.Random(19)
    tools = {"tools": [{"name": n, "description": d, "parameters": p} for n, d, p in TOOLS]}
    (HERE / "tools.json").write_text(json.dumps(tools, indent=2, sort_keys=True) + "\n")
    lines = []
    for name, _, params in TOOLS:
        for i in range(12):
            args = arguments(name, rng)
            # leave out some optional arguments, as real callers do
            args = {k: v for k, v in args.items() if k in params["required"] or rng.random() < 0.7}
            rec = {"trace_id": f"{name}-{i:02d}", "tool": name, "arguments": args, "result": {"ok": True}}
            lines.append(json.dumps(rec, sort_keys=True))
    (HERE / "calls.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
