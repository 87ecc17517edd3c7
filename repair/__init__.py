"""output_contracts.repair: contract-constrained repair of malformed tool calls — cases (`cases`), the action mask
and fail-closed validator, policies, the repair loop (`loop.replay`), its scoring (`score`, with the
metric definitions in `metrics`, exact paired tests in `stats` and the semantic `executor` hook) and the
split audit (`audit`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from output_contracts.lazy import lazy_exports

if TYPE_CHECKING:
    from output_contracts.repair.cases import build_cases as build_cases
    from output_contracts.repair.cases import load_bfcl as load_bfcl
    from output_contracts.repair.loop import Budgets as Budgets
    from output_contracts.repair.loop import replay as replay
    from output_contracts.repair.score import score as score

#: The public entry points, imported when first used (so that importing the package stays cheap).
_EXPORTS = {
    "replay": "output_contracts.repair.loop",
    "Budgets": "output_contracts.repair.loop",
    "load_bfcl": "output_contracts.repair.cases",
    "build_cases": "output_contracts.repair.cases",
    "score": "output_contracts.repair.score",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
