"""output_contracts.rules: what a rule means, below both mining and checking — the contract set model
(`rules.model`), the fold assignment (`rules.folds`), one module per property code (`rules.required`,
`rules.kind`, ...: validation, description, witness, per-call and vectorised evaluation), their table
(`rules.codes`) and the engine that drives them (`rules.evaluate`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from output_contracts.lazy import lazy_exports

if TYPE_CHECKING:
    from output_contracts.rules.codes import TABLE as TABLE
    from output_contracts.rules.codes import describe as describe
    from output_contracts.rules.evaluate import call_violations as call_violations
    from output_contracts.rules.evaluate import find_violations as find_violations
    from output_contracts.rules.model import ContractSet as ContractSet
    from output_contracts.rules.model import Rule as Rule

#: The public entry points, imported when first used (so that importing the package stays cheap).
_EXPORTS = {
    "ContractSet": "output_contracts.rules.model",
    "Rule": "output_contracts.rules.model",
    "TABLE": "output_contracts.rules.codes",
    "describe": "output_contracts.rules.codes",
    "call_violations": "output_contracts.rules.evaluate",
    "find_violations": "output_contracts.rules.evaluate",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
