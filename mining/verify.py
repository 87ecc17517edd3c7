"""Independent re-check: every rule of every checker must hold on that checker's clean mining data.

Placeholder until the full per-code re-check lands: currently a no-op.
"""

from __future__ import annotations

from contracts.mining.data import MiningData
from contracts.mining.model import ContractSet


def assert_holds(cs: ContractSet, data: MiningData) -> None:
    """Raise AssertionError naming the first rule that fires on its own mining data."""
    return None
