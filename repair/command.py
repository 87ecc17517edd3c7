"""Running a repair-protocol command: a `command` policy or an `--executor`.

Both are programs given one JSON value on stdin (with `CONTRACTS_REPAIR_PROTOCOL=1` in their
environment) that answer one JSON value on stdout. Starting one and waiting for it, bounded by a timeout,
is the same for both; what the answer means is each caller's.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence


def run_command(
    argv: Sequence[str], stdin: bytes, timeout: float
) -> subprocess.CompletedProcess[bytes] | tuple[str, str]:
    """The finished process, or why it did not finish: `("TIMEOUT", detail)` when it gave no answer within
    `timeout` seconds, `("FAILED", detail)` when it could not be started. No shell is involved."""
    try:
        return subprocess.run(
            list(argv),
            input=stdin,
            capture_output=True,
            timeout=timeout,
            shell=False,
            check=False,
            env={**os.environ, "CONTRACTS_REPAIR_PROTOCOL": "1"},
        )
    except subprocess.TimeoutExpired:
        return "TIMEOUT", f"no answer within {timeout} s"
    except OSError as e:
        return "FAILED", f"cannot run {argv[0]}: {e.strerror}"
