"""output_contracts.codes: the vocabulary of output contracts, one folder per property code.

Each code folder (`codes/range/`, ...) holds all that the code is: its spec (`__init__.py`, registered in
`table`), its evaluations (`check.py`) and its miner (`mine.py`); docs/design.md walks through adding one.
Beside them: the contract set model (`contract_set`), the fold assignment (`folds`), what every code
shares (`spec`, `evaluation`, `nodes`, `hits`, `violation`, and the miners' `mining_frames`,
`mining_context`, `mine_params`), and the engine that runs the registered codes (`engine`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from output_contracts.lazy import lazy_exports

if TYPE_CHECKING:
    from output_contracts.codes.contract_set import ContractSet as ContractSet
    from output_contracts.codes.contract_set import Rule as Rule
    from output_contracts.codes.engine.evaluate import call_violations as call_violations
    from output_contracts.codes.engine.evaluate import find_violations as find_violations
    from output_contracts.codes.table import describe as describe
    from output_contracts.codes.table import names as names
    from output_contracts.codes.table import specs as specs

#: The public entry points, imported when first used (so that importing the package stays cheap).
_EXPORTS = {
    "ContractSet": "output_contracts.codes.contract_set",
    "Rule": "output_contracts.codes.contract_set",
    "describe": "output_contracts.codes.table",
    "names": "output_contracts.codes.table",
    "specs": "output_contracts.codes.table",
    "call_violations": "output_contracts.codes.engine.evaluate",
    "find_violations": "output_contracts.codes.engine.evaluate",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
