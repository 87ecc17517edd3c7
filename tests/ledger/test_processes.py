"""Real processes: the writer lock between processes, stale locks after a kill, and crashes mid-append."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.errors import LedgerError
from output_contracts.ledger import REPAIR_KIND, Ledger, read_entries, verify

from .conftest import build

REPO = Path(__file__).resolve().parents[2]

HOLDER = """
import sys
from output_contracts.ledger import Ledger
led = Ledger.open(sys.argv[1])
print("locked", flush=True)
sys.stdin.readline()
led.append("test.holder", {"by": "holder"})
led.close()
"""

RACER = """
import os, sys, time
from output_contracts.errors import LedgerError
from output_contracts.ledger import Ledger
d, me = sys.argv[1], sys.argv[2]
try:
    led = Ledger.open(d)
except LedgerError as e:
    open(os.path.join(os.path.dirname(d), "loser-done"), "w").close()
    print("locked-out", e.code, flush=True)
    sys.exit(3)
n = 0
deadline = time.monotonic() + 30
while not os.path.exists(os.path.join(os.path.dirname(d), "loser-done")) and time.monotonic() < deadline:
    led.append("test.race", {"by": me, "n": n})
    n += 1
for _ in range(20):
    led.append("test.race", {"by": me, "n": n})
    n += 1
led.close()
print("wrote", n, flush=True)
"""

HALF_WRITE = """
import os, signal, sys
from output_contracts.ledger import Ledger
led = Ledger.open(sys.argv[1])
real_write = os.write
def torn(fd, data):
    real_write(fd, data[: len(data) // 2])
    os.kill(os.getpid(), signal.SIGKILL)
os.write = torn
led.append("test.crash", {"payload": "x" * 200})
"""

FOREVER = """
import sys
from output_contracts.ledger import Ledger
led = Ledger.open(sys.argv[1])
i = 0
while True:
    led.append("test.big", {"i": i, "blob": "y" * 400_000})
    i += 1
    if i == 1:
        print("appending", flush=True)
"""


def _spawn(code: str, *args: str, stdin: int | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_second_writer_gets_the_lock_error(tmp_path: Path) -> None:
    d = tmp_path / "L"
    build(d, 3, frozen=False)
    holder = _spawn(HOLDER, str(d), stdin=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(LedgerError, match="locked by another writer") as e:
            Ledger.open(d)
        assert e.value.code == "E_LEDGER_LOCKED" and f"pid {holder.pid}" in e.value.message
        other = subprocess.run(
            [sys.executable, "-c", HOLDER, str(d)], cwd=REPO, capture_output=True, text=True, timeout=60
        )
        assert other.returncode == 1 and "E_LEDGER_LOCKED" in other.stderr
        result = CliRunner().invoke(app, ["ledger", "repair", str(d)])
        assert result.exit_code == 0  # nothing to repair; repair never touches a held ledger's lock
        assert verify(d).ok  # readers need no lock
    finally:
        assert holder.stdin is not None
        holder.stdin.write("go\n")
        holder.stdin.close()
        holder.wait(timeout=60)
    assert holder.returncode == 0, holder.stderr.read() if holder.stderr else ""
    assert not (d / "ledger.lock").exists()
    entries = read_entries(d)
    assert len(entries) == 4 and entries[-1].body == {"by": "holder"}
    with Ledger.open(d) as led:  # the lock is free again
        led.append("test.after", {})


def test_two_racing_writers_one_wins_and_the_ledger_stays_valid(tmp_path: Path) -> None:
    d = tmp_path / "L"
    build(d, 2, frozen=False)
    procs = [_spawn(RACER, str(d), name) for name in ("a", "b")]
    outs = []
    for p in procs:
        out, errtext = p.communicate(timeout=120)
        outs.append((p.returncode, out.strip(), errtext))
    codes = sorted(rc for rc, _, _ in outs)
    assert codes == [0, 3], outs
    winner = next(out for rc, out, _ in outs if rc == 0)
    loser = next(out for rc, out, _ in outs if rc == 3)
    assert loser == "locked-out E_LEDGER_LOCKED"
    written = int(winner.split()[1])
    report = verify(d)
    assert report.ok and report.entries == 2 + written
    bodies = [e.body for e in read_entries(d)[2:]]
    assert [b["n"] for b in bodies] == list(range(written)) and len({b["by"] for b in bodies}) == 1


def test_a_killed_writer_leaves_no_blocking_lock(tmp_path: Path) -> None:
    d = tmp_path / "L"
    build(d, 1, frozen=False)
    holder = _spawn(HOLDER, str(d), stdin=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=60)
    assert (d / "ledger.lock").exists()  # the file stays behind ...
    assert verify(d).ok  # ... it is not an error in an unfrozen ledger ...
    with Ledger.open(d) as led:  # ... and the kernel released the flock: the next writer proceeds
        led.append("test.after", {})
        info = led.freeze()
    assert verify(d, require_frozen=True, head=info.head).ok


def test_crash_mid_append_is_reported_and_repaired(tmp_path: Path) -> None:
    d = tmp_path / "L"
    build(d, 4, frozen=False)
    before = (d / "ledger.jsonl").read_bytes()
    crash = subprocess.run(
        [sys.executable, "-c", HALF_WRITE, str(d)], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert crash.returncode == -signal.SIGKILL
    after = (d / "ledger.jsonl").read_bytes()
    assert after.startswith(before) and len(after) > len(before) and not after.endswith(b"\n")
    tail = after[len(before) :]

    report = verify(d)
    assert not report.ok and [p.code for p in report.problems] == ["TRUNCATED_TAIL"]
    p = report.problems[0]
    assert p.seq == 4 and p.file == "ledger.jsonl"
    assert f"partial line of {len(tail)} byte(s) at byte {len(before)}" in p.detail

    result = CliRunner().invoke(app, ["ledger", "verify", str(d)])
    assert result.exit_code == 1 and "entry 4: TRUNCATED_TAIL" in result.stdout

    with pytest.raises(LedgerError, match="repair_tail"):
        Ledger.open(d)
    with Ledger.open(d, repair_tail=True) as led:
        assert led.count == 5
        led.append("test.after", {"ok": True})
    entries = read_entries(d)
    repair = entries[4]
    assert repair.kind == REPAIR_KIND
    assert repair.body == {
        "reason": "TRUNCATED_TAIL",
        "offset": len(before),
        "dropped_bytes": len(tail),
        "dropped_sha256": hashlib.sha256(tail).hexdigest(),
        "dropped_text": tail.decode("utf-8", "replace"),
        "after_seq": 3,
    }
    assert entries[5].body == {"ok": True}
    assert verify(d).ok


def test_cli_repair(tmp_path: Path) -> None:
    d = tmp_path / "L"
    build(d, 3, frozen=False)
    with (d / "ledger.jsonl").open("ab") as fh:
        fh.write(b'{"body":{"partial')
    runner = CliRunner()
    result = runner.invoke(app, ["ledger", "repair", str(d)])
    assert result.exit_code == 0, result.output
    assert "dropped 17 byte(s)" in result.stderr and "entry 3" in result.stderr
    assert verify(d).ok and read_entries(d)[3].kind == REPAIR_KIND
    again = runner.invoke(app, ["ledger", "repair", str(d)])
    assert again.exit_code == 0 and "nothing to repair" in again.stderr
    (d / "ledger.jsonl").write_bytes((d / "ledger.jsonl").read_bytes().replace(b'"n":1', b'"n":5'))
    broken = runner.invoke(app, ["ledger", "repair", str(d)])
    assert broken.exit_code == 2 and "EDITED" in broken.stderr


@pytest.mark.slow
def test_killing_a_real_writer_at_a_random_moment(tmp_path: Path) -> None:
    d = tmp_path / "L"
    build(d, 1, frozen=False)
    proc = _spawn(FOREVER, str(d))
    assert proc.stdout is not None and proc.stdout.readline().strip() == "appending"
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    report = verify(d)
    # either the kill fell between appends, or it left exactly one partial line and nothing else
    assert report.ok or [p.code for p in report.problems] == ["TRUNCATED_TAIL"]
    with Ledger.open(d, repair_tail=True) as led:
        n = led.count
    final = verify(d)
    assert final.ok and final.entries == n >= 2
