"""output_contracts.mining: leaf statistics, rule classes, support thresholds, folds, contract sets.

`mine(corpus, ...)` is the entry point; `output_contracts.rules.model` holds the contract-set value types.
"""

from __future__ import annotations

from output_contracts.mining.miner import mine
from output_contracts.mining.params import Clean, MineParams

__all__ = ["Clean", "MineParams", "mine"]
