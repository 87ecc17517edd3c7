"""Helpers for the ledger tests: small ledgers with varied bodies, built fresh or copied from a template."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from output_contracts.ledger import FreezeInfo, Ledger

CONFIG: dict[str, Any] = {"audit": {"folds": 5, "bootstrap": 1000}, "encoder": "v2"}


def body(i: int) -> dict[str, Any]:
    """A body exercising the canonical form: nesting, unicode, floats, a 70-bit integer, escapes."""
    return {
        "call_id": f"c-{i:04d}",
        "n": i,
        "rate": i / 7,
        "neg": -0.0 if i % 3 == 0 else -1.5e-7 * i,
        "big": 2**70 + i,
        "text": "naïve “quotes” \n tab\t ✓" if i % 2 else "plain",
        "items": [{"price": 1.25, "qty": i}, None, True],
    }


def build(
    directory: Path, n: int, *, frozen: bool = True, extra: bool = False, seed: int = 13
) -> FreezeInfo | None:
    """Create a ledger of `n` entries (kinds alternate); optionally add covered files and freeze."""
    led = Ledger.create(directory, CONFIG, seed, source_revision="test-rev")
    for i in range(n):
        led.append("audit.fire" if i % 2 else "audit.check", body(i))
    if extra:
        (directory / "reports").mkdir()
        (directory / "reports" / "summary.json").write_text('{"fire_rate": 0.02}\n')
        (directory / "fire events.csv").write_text("call_id,code\nc-0001,NONNEG\n")
    if frozen:
        return led.freeze()
    led.close()
    return None


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A frozen 8-entry ledger with two extra covered files (copy it before tampering)."""
    d = tmp_path_factory.mktemp("template") / "L"
    build(d, 8, extra=True)
    return d


@pytest.fixture()
def copy_of(template: Path) -> Iterator[Any]:
    """`copy_of()` -> a fresh copy of the template ledger (usable inside hypothesis examples)."""
    made: list[Path] = []

    def make() -> Path:
        base = Path(tempfile.mkdtemp(prefix="ledger-test-"))
        made.append(base)
        dst = base / "L"
        shutil.copytree(template, dst)
        return dst

    yield make
    for m in made:
        shutil.rmtree(m, ignore_errors=True)
