"""Operations on the tool registry (`output_contracts.traces.tool_registry` holds the model, which ingest reads too):
plan checking (`plan`), model-facing tool definitions (`export`), and proposing (`infer`) or checking (`check`) declared
outputs against a corpus."""

from __future__ import annotations

from typing import TYPE_CHECKING

from output_contracts.lazy import lazy_exports

if TYPE_CHECKING:
    from output_contracts.registry.check import check_registry as check_registry
    from output_contracts.registry.export import export_tools as export_tools
    from output_contracts.registry.infer import infer_registry as infer_registry
    from output_contracts.registry.plan import load_plan as load_plan
    from output_contracts.registry.plan_check import check_plan as check_plan

#: The public entry points, imported when first used (so that importing the package stays cheap).
_EXPORTS = {
    "check_plan": "output_contracts.registry.plan_check",
    "load_plan": "output_contracts.registry.plan",
    "export_tools": "output_contracts.registry.export",
    "infer_registry": "output_contracts.registry.infer",
    "check_registry": "output_contracts.registry.check",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
