"""output_contracts: offline contract mining and trace auditing for tool-using AI agents.

The library is plain functions over polars frames, paths and frozen dataclasses; the CLI (`contracts`)
is a thin layer over it. Subpackages: `traces` (formats, ingest, corpus, registry), `mining`, `checks`,
`repair`, `ledger`.
"""

from typing import TYPE_CHECKING

from output_contracts.errors import ContractsError
from output_contracts.jsonutil import canonical_json
from output_contracts.lazy import lazy_exports

if TYPE_CHECKING:  # for type checkers only: at run time the names below load on first use
    from output_contracts.checks.api import Checker as Checker
    from output_contracts.checks.api import Session as Session
    from output_contracts.checks.receipts import Receipt as Receipt
    from output_contracts.checks.wrapper import checked as checked

__version__ = "0.1.0"

#: The stable checking API (docs/api.md), imported when first used: importing `output_contracts` stays cheap
#: and the root package imports no subpackage at import time (DESIGN §1).
_EXPORTS = {
    "Checker": "output_contracts.checks.api",
    "Session": "output_contracts.checks.api",
    "Receipt": "output_contracts.checks.receipts",
    "checked": "output_contracts.checks.wrapper",
}
__all__ = ["Checker", "ContractsError", "Receipt", "Session", "__version__", "canonical_json", "checked"]


__getattr__ = lazy_exports(__name__, _EXPORTS)
