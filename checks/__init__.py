"""output_contracts.checks: the checker users call — one call (`check_call`) or a corpus (`check_corpus`), receipts
and their encoders, and the output formats of `contracts check`.

    from output_contracts.checks import check_call, load_contracts
    receipt = check_call(load_contracts("contracts.json"), tool, arguments, result)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from output_contracts.lazy import lazy_exports

if TYPE_CHECKING:
    from output_contracts.checks.checker import check_call as check_call
    from output_contracts.checks.checker import check_corpus as check_corpus
    from output_contracts.checks.checker import load_contracts as load_contracts
    from output_contracts.checks.receipts import Receipt as Receipt
    from output_contracts.checks.receipts import encode as encode

#: The public entry points, imported when first used (so that importing the package stays cheap).
_EXPORTS = {
    "check_call": "output_contracts.checks.checker",
    "check_corpus": "output_contracts.checks.checker",
    "load_contracts": "output_contracts.checks.checker",
    "Receipt": "output_contracts.checks.receipts",
    "encode": "output_contracts.checks.receipts",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
