"""output_contracts.mining: leaf statistics, rule classes, support thresholds, folds, contract sets.

`mine(corpus, ...)` is the entry point; `output_contracts.codes.contract_set` holds the contract-set value types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from output_contracts.lazy import lazy_exports

if TYPE_CHECKING:
    from output_contracts.codes.mine_params import Clean as Clean
    from output_contracts.codes.mine_params import MineParams as MineParams
    from output_contracts.mining.miner import mine as mine

#: The public entry points, imported when first used: `output_contracts.codes.mine_params` alone (the
#: choices `contracts --help` shows) must not load the miner, polars and numpy.
_EXPORTS = {
    "Clean": "output_contracts.codes.mine_params",
    "MineParams": "output_contracts.codes.mine_params",
    "mine": "output_contracts.mining.miner",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
