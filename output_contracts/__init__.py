"""output_contracts: offline contract mining and trace auditing for tool-using AI agents.

The library is plain functions over polars frames, paths and frozen dataclasses; the CLI (`contracts`)
is a thin layer over it. Subpackages: `traces` (formats, ingest, corpus, registry), `mining`, `checks`,
`repair`, `ledger`.
"""

import os as _os

# In a source checkout the subpackages are sibling folders of this one (DESIGN §1); setuptools maps them
# for installs. When the checkout itself is first on sys.path (`python -m pytest`, `python -c` from the
# repository root), let `output_contracts.mining` & co. resolve to those folders too.
_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_root, "mining", "__init__.py")) and _root not in __path__:
    __path__.append(_root)

from typing import TYPE_CHECKING  # noqa: E402

from output_contracts.errors import ContractsError  # noqa: E402
from output_contracts.jsonutil import canonical_json  # noqa: E402
from output_contracts.lazy import lazy_exports  # noqa: E402

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
