"""output_contracts.codes: what a rule means, below both mining and checking — the contract set model
(`rules.model`), the fold assignment (`rules.folds`), one module per property code (`rules.required`,
`rules.kind`, ...: validation, description, witness, per-call and vectorised evaluation), their table
(`rules.codes`) and the engine that drives them (`rules.evaluate`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from output_contracts.lazy import lazy_exports

if TYPE_CHECKING:
    from output_contracts.codes.contract_set import ContractSet as ContractSet
    from output_contracts.codes.contract_set import Rule as Rule
    from output_contracts.codes.engine.evaluate import call_violations as call_violations
    from output_contracts.codes.engine.evaluate import find_violations as find_violations
    from output_contracts.codes.table import TABLE as TABLE
    from output_contracts.codes.table import describe as describe

#: The public entry points, imported when first used (so that importing the package stays cheap).
_EXPORTS = {
    "ContractSet": "output_contracts.codes.contract_set",
    "Rule": "output_contracts.codes.contract_set",
    "TABLE": "output_contracts.codes.table",
    "describe": "output_contracts.codes.table",
    "call_violations": "output_contracts.codes.engine.evaluate",
    "find_violations": "output_contracts.codes.engine.evaluate",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
