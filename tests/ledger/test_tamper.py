"""Every kind of tampering with a frozen ledger is detected, with the right reason first; exit 1 via the CLI."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import jsonschema
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.ledger import Ledger, verify
from output_contracts.ledger.verify import REPORT_SCHEMA

from .conftest import CONFIG, build

SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
Copy = Callable[[], Path]


def _lines(d: Path) -> list[bytes]:
    return (d / "ledger.jsonl").read_bytes().splitlines(keepends=True)


def _first(d: Path) -> tuple[str, int | None, str | None]:
    report = verify(d)
    assert not report.ok
    p = report.problems[0]
    return p.code, p.seq, p.file


def test_untouched_ledger_verifies(template: Path) -> None:
    report = verify(template, require_frozen=True)
    assert report.ok and report.frozen and report.entries == 8 and report.problems == ()
    header = orjson.loads((template / "ledger.json").read_bytes())
    assert (report.head, report.root) == (header["head"], header["root"])
    assert verify(template, head=report.head, root=report.root).ok


@SETTINGS
@given(data=st.data())
def test_flipping_any_byte_of_the_entries(copy_of: Copy, data: st.DataObject) -> None:
    d = copy_of()
    raw = bytearray((d / "ledger.jsonl").read_bytes())
    k = data.draw(st.integers(0, len(raw) - 1), label="offset")
    mask = data.draw(st.integers(1, 255), label="xor")
    line = raw[:k].count(b"\n")
    was_last_lf = k == len(raw) - 1
    raw[k] ^= mask
    (d / "ledger.jsonl").write_bytes(bytes(raw))
    code, seq, file = _first(d)
    assert file == "ledger.jsonl"
    if was_last_lf:
        assert code == "EXTRA_BYTES"  # the last entry is followed by a junk byte instead of its LF
    else:
        assert (code, seq) == ("EDITED", line)


@SETTINGS
@given(data=st.data())
def test_swapping_two_lines(copy_of: Copy, data: st.DataObject) -> None:
    d = copy_of()
    lines = _lines(d)
    i = data.draw(st.integers(0, len(lines) - 2))
    j = data.draw(st.integers(i + 1, len(lines) - 1))
    lines[i], lines[j] = lines[j], lines[i]
    (d / "ledger.jsonl").write_bytes(b"".join(lines))
    assert _first(d) == ("REORDERED", i, "ledger.jsonl")


@pytest.mark.parametrize("i", range(8))
def test_deleting_any_line(copy_of: Copy, i: int) -> None:
    d = copy_of()
    lines = _lines(d)
    del lines[i]
    (d / "ledger.jsonl").write_bytes(b"".join(lines))
    assert _first(d) == ("REMOVED", i, "ledger.jsonl")


@SETTINGS
@given(data=st.data())
def test_truncating_at_any_offset(copy_of: Copy, data: st.DataObject) -> None:
    d = copy_of()
    raw = (d / "ledger.jsonl").read_bytes()
    k = data.draw(st.integers(0, len(raw) - 1), label="cut")
    (d / "ledger.jsonl").write_bytes(raw[:k])
    kept = raw[:k].count(b"\n")
    at_boundary = k == 0 or raw[k - 1 : k] == b"\n"
    code, seq, _ = _first(d)
    assert (code, seq) == (("REMOVED" if at_boundary else "TRUNCATED_TAIL"), kept)


def test_truncating_at_every_offset_of_a_small_ledger(tmp_path: Path) -> None:
    d = tmp_path / "L"
    build(d, 2)
    raw = (d / "ledger.jsonl").read_bytes()
    for k in range(len(raw)):
        (d / "ledger.jsonl").write_bytes(raw[:k])
        code, seq, _ = _first(d)
        kept = raw[:k].count(b"\n")
        assert seq == kept
        assert code == ("REMOVED" if k == 0 or raw[k - 1 : k] == b"\n" else "TRUNCATED_TAIL")
    (d / "ledger.jsonl").write_bytes(raw)
    assert verify(d).ok


HEADER_EDITS: list[tuple[str, object]] = [
    ("seed", 14),
    ("config", {"audit": {"folds": 4, "bootstrap": 1000}, "encoder": "v2"}),
    ("config_sha256", "0" * 64),
    ("source_revision", "git:deadbeef"),
    ("created_at", "2020-01-01T00:00:00Z"),
    ("entries", 7),
    ("entries", 9),
    ("head", "1" * 64),
    ("root", "2" * 64),
    ("frozen", False),
    ("inputs", [{"path": "x", "sha256": "3" * 64, "bytes": 1}]),
]


@pytest.mark.parametrize(("field", "value"), HEADER_EDITS)
def test_editing_the_header(copy_of: Copy, field: str, value: object) -> None:
    d = copy_of()
    header = orjson.loads((d / "ledger.json").read_bytes())
    header[field] = value
    (d / "ledger.json").write_bytes(orjson.dumps(header, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    code, _, file = _first(d)
    assert file == "ledger.json" and code in ("HEADER", "MANIFEST_MISMATCH")


@SETTINGS
@given(data=st.data())
def test_flipping_any_byte_of_the_header(copy_of: Copy, data: st.DataObject) -> None:
    d = copy_of()
    raw = bytearray((d / "ledger.json").read_bytes())
    k = data.draw(st.integers(0, len(raw) - 1))
    raw[k] ^= data.draw(st.integers(1, 255))
    (d / "ledger.json").write_bytes(bytes(raw))
    code, _, file = _first(d)
    assert file == "ledger.json" and code in ("HEADER", "MANIFEST_MISMATCH")


@pytest.mark.parametrize(
    "name", ["ledger.json", "ledger.jsonl", "manifest-sha256.txt", "reports/summary.json", "fire events.csv"]
)
def test_deleting_any_file(copy_of: Copy, name: str) -> None:
    d = copy_of()
    (d / name).unlink()
    assert _first(d)[0::2] == ("MISSING_FILE", name)


def test_extra_files_and_manifest_edits(copy_of: Copy) -> None:
    d = copy_of()
    (d / "reports" / "late.txt").write_text("added after freeze")
    assert _first(d) == ("EXTRA_FILE", None, "reports/late.txt")
    d = copy_of()
    (d / "ledger.lock").write_text("pid 1")
    assert _first(d) == ("EXTRA_FILE", None, "ledger.lock")
    d = copy_of()
    (d / "reports" / "summary.json").write_text('{"fire_rate": 0.01}\n')
    assert _first(d) == ("MANIFEST_MISMATCH", None, "reports/summary.json")
    d = copy_of()
    manifest = (d / "manifest-sha256.txt").read_text().splitlines(keepends=True)
    (d / "manifest-sha256.txt").write_text("".join(reversed(manifest)))
    assert _first(d)[0::2] == ("MANIFEST_MISMATCH", "manifest-sha256.txt")


def test_appending_after_freeze_is_extra(copy_of: Copy, template: Path) -> None:
    d = copy_of()
    lines = _lines(d)
    (d / "ledger.jsonl").write_bytes(b"".join([*lines, lines[-1]]))
    assert _first(d) == ("DUPLICATED", 7, "ledger.jsonl")
    d = copy_of()
    (d / "ledger.jsonl").write_bytes(b"".join(lines) + b"\n\n")
    assert _first(d)[0] == "EXTRA_BYTES"


def test_rewriting_whole_ledger_needs_an_anchor(tmp_path: Path) -> None:
    """The honest promise: a consistent rewrite verifies on its own; only an outside anchor catches it."""
    d = tmp_path / "L"
    info = build(d, 4)
    assert info is not None
    shutil.rmtree(d)
    led = Ledger.create(d, CONFIG, 13, source_revision="test-rev")
    for i in range(4):
        led.append("audit.fire", {"forged": i})
    led.freeze()
    assert verify(d).ok
    report = verify(d, head=info.head, root=info.root)
    assert [p.code for p in report.problems] == ["HEAD_MISMATCH", "ROOT_MISMATCH"]


def test_unfrozen_truncation_at_a_line_boundary_is_caught_by_the_head_anchor(tmp_path: Path) -> None:
    d = tmp_path / "L"
    build(d, 4, frozen=False)
    head = verify(d).head
    assert head is not None
    (d / "ledger.jsonl").write_bytes(b"".join(_lines(d)[:3]))
    assert verify(d).ok  # nothing inside the folder records where an unfrozen ledger ended
    assert _first_with(d, head=head) == "HEAD_MISMATCH"
    assert verify(d, require_frozen=True).problems[0].code == "UNFROZEN"


def _first_with(d: Path, **kw: str) -> str:
    return verify(d, **kw).problems[0].code  # type: ignore[arg-type]


SHA256SUM = shutil.which("sha256sum")


@pytest.mark.skipif(SHA256SUM is None, reason="coreutils sha256sum is not installed")
def test_sha256sum_checks_the_manifest(copy_of: Copy) -> None:
    d = copy_of()
    ok = subprocess.run([SHA256SUM, "-c", "manifest-sha256.txt"], cwd=d, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.count(": OK") == 4  # ledger.json, ledger.jsonl and the two extra files
    for name in ["ledger.json", "ledger.jsonl", "reports/summary.json", "fire events.csv"]:
        t = copy_of()
        raw = bytearray((t / name).read_bytes())
        raw[len(raw) // 2] ^= 0x01
        (t / name).write_bytes(bytes(raw))
        bad = subprocess.run([SHA256SUM, "-c", "manifest-sha256.txt"], cwd=t, capture_output=True, text=True)
        assert bad.returncode == 1 and f"{name}: FAILED" in bad.stdout


def test_manifest_format(template: Path) -> None:
    text = (template / "manifest-sha256.txt").read_bytes().decode()
    lines = text.split("\n")
    assert lines[-1] == "" and "\r" not in text
    paths = [ln.split("  ", 1)[1] for ln in lines[:-1]]
    assert (
        paths == sorted(paths) == ["fire events.csv", "ledger.json", "ledger.jsonl", "reports/summary.json"]
    )
    assert all(len(ln.split("  ", 1)[0]) == 64 for ln in lines[:-1])


TAMPERS: dict[str, Callable[[Path], None]] = {
    "edited": lambda d: (d / "ledger.jsonl").write_bytes(
        (d / "ledger.jsonl").read_bytes().replace(b'"n":3', b'"n":4', 1)
    ),
    "reordered": lambda d: (d / "ledger.jsonl").write_bytes(b"".join(_swap(_lines(d)))),
    "removed": lambda d: (d / "ledger.jsonl").write_bytes(b"".join(_lines(d)[:2] + _lines(d)[3:])),
    "truncated": lambda d: (d / "ledger.jsonl").write_bytes((d / "ledger.jsonl").read_bytes()[:-9]),
    "missing": lambda d: (d / "reports" / "summary.json").unlink(),
}
EXPECTED = {
    "edited": "entry 3: EDITED",
    "reordered": "entry 1: REORDERED",
    "removed": "entry 2: REMOVED",
    "truncated": "entry 7: TRUNCATED_TAIL",
    "missing": "reports/summary.json: MISSING_FILE",
}


def _swap(lines: list[bytes]) -> list[bytes]:
    lines[1], lines[2] = lines[2], lines[1]
    return lines


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_cli_verify_exits_1_naming_the_first_failure(copy_of: Copy, name: str) -> None:
    d = copy_of()
    TAMPERS[name](d)
    result = CliRunner().invoke(app, ["ledger", "verify", str(d)])
    assert result.exit_code == 1, result.output
    first_line = result.stdout.splitlines()[0]
    assert EXPECTED[name] in first_line
    assert "FAILED" in result.stderr and EXPECTED[name] in result.stderr
    js = CliRunner().invoke(app, ["ledger", "verify", str(d), "--json"])
    report = orjson.loads(js.stdout)
    jsonschema.validate(report, REPORT_SCHEMA)
    assert js.exit_code == 1 and report["ok"] is False
    assert EXPECTED[name].split(": ")[-1] == report["problems"][0]["code"]


# The header is bound to the chain: an edit of a field that fixes what was run, with
# the manifest recomputed, no longer passes a verify anchored on head and root. `created_at` and
# `source_revision` are not bound (docs/ledger.md: anchors stay reproducible across runs and commits).
BOUND_EDITS: list[tuple[str, Callable[[dict], None]]] = [
    ("seed", lambda h: h.update(seed=h["seed"] + 1)),
    ("input sha256", lambda h: h["inputs"].append({"path": "x.jsonl", "sha256": "3" * 64, "bytes": 1})),
    (
        "config and its hash",
        lambda h: h.update(config={**h["config"], "k": 9}, config_sha256=_sha({**h["config"], "k": 9})),
    ),
]


def _sha(value: object) -> str:
    from output_contracts.jsonutil import json_sha256

    return json_sha256(value)


def _write_header(d: Path, header: dict) -> None:
    from output_contracts.ledger.manifest import write_manifest

    (d / "ledger.json").write_bytes(orjson.dumps(header, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    write_manifest(d)  # the manifest recomputed: only the binding can tell


@pytest.mark.parametrize(("what", "edit"), BOUND_EDITS, ids=[w for w, _ in BOUND_EDITS])
def test_edited_header_fails_the_anchored_verify(
    copy_of: Copy, what: str, edit: Callable[[dict], None]
) -> None:
    from output_contracts.ledger.entry import encode_entry
    from output_contracts.ledger.header import binding
    from output_contracts.ledger.merkle import merkle_root

    d = copy_of()
    good = verify(d, require_frozen=True)
    assert good.ok
    anchors = {"head": good.head, "root": good.root, "require_frozen": True}
    header = orjson.loads((d / "ledger.json").read_bytes())
    edit(header)
    # 1. the edit alone: the header no longer hashes to its genesis
    _write_header(d, header)
    report = verify(d, **anchors)  # type: ignore[arg-type]
    assert [(p.code, p.file) for p in report.problems][:1] == [("HEADER", "ledger.json")]
    assert "no longer hash to its genesis" in report.problems[0].detail
    # 2. genesis recomputed too: entry 0 no longer links to it
    header["genesis"] = binding(header)
    _write_header(d, header)
    report = verify(d, **anchors)  # type: ignore[arg-type]
    assert (report.problems[0].code, report.problems[0].file, report.problems[0].seq) == (
        "EDITED",
        "ledger.jsonl",
        0,
    )
    # 3. the whole chain rewritten from the new genesis, head and root recorded: consistent on its own,
    # caught only by the anchors kept elsewhere
    prev, lines, hashes = header["genesis"], [], []
    for raw in _lines(d):
        e = orjson.loads(raw)
        digest, line = encode_entry(
            e["seq"], prev, e["kind"], orjson.dumps(e["body"], option=orjson.OPT_SORT_KEYS)
        )
        lines.append(line)
        hashes.append(digest)
        prev = digest
    (d / "ledger.jsonl").write_bytes(b"".join(lines))
    header.update(head=prev, root=merkle_root(hashes))
    _write_header(d, header)
    assert verify(d, require_frozen=True).ok, what
    assert [p.code for p in verify(d, **anchors).problems] == ["HEAD_MISMATCH", "ROOT_MISMATCH"]  # type: ignore[arg-type]


def test_version_1_ledgers_still_verify(copy_of: Copy) -> None:
    """A version-1 header (genesis 64 zeros, not bound) with its chain from zeros verifies as before."""
    from output_contracts.ledger.entry import GENESIS, encode_entry
    from output_contracts.ledger.merkle import merkle_root

    d = copy_of()
    header = orjson.loads((d / "ledger.json").read_bytes())
    prev, lines, hashes = GENESIS, [], []
    for raw in _lines(d):
        e = orjson.loads(raw)
        digest, line = encode_entry(
            e["seq"], prev, e["kind"], orjson.dumps(e["body"], option=orjson.OPT_SORT_KEYS)
        )
        lines.append(line)
        hashes.append(digest)
        prev = digest
    (d / "ledger.jsonl").write_bytes(b"".join(lines))
    header.update(version=1, genesis=GENESIS, head=prev, root=merkle_root(hashes))
    _write_header(d, header)
    assert verify(d, require_frozen=True).ok
    header["genesis"] = "1" * 64
    _write_header(d, header)
    assert "HEADER" in {p.code for p in verify(d).problems}
