"""output_contracts.audit: cross-fitted replay of a corpus through its own fold checkers, with fire events frozen
in a ledger before labels are joined (`pipeline`), the truth joined after the freeze (`truth`), the report
computed section by section (`scoring`) as a tree of typed values (`model`), the statistics and
intervals (`stats`), the renderings (`report`), fault injection to measure detection (`inject`), and
what each rule rests on (`heldout`).

    from output_contracts.audit import audit_report, open_source
    source = open_source("traces/", "work")
    report, contracts = audit_report(source.corpus, "work/ledger", k=5)
    print(report.fire_rate.value, report.to_json()["spurious"]["per_100_episodes"])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from output_contracts.lazy import lazy_exports

if TYPE_CHECKING:
    from output_contracts.audit.inject import inject_records as inject_records
    from output_contracts.audit.pipeline import audit as audit
    from output_contracts.audit.pipeline import audit_report as audit_report
    from output_contracts.audit.pipeline import audit_score as audit_score
    from output_contracts.audit.pipeline import open_source as open_source
    from output_contracts.audit.report_model import AuditReport as AuditReport

#: The public entry points, imported when first used: `output_contracts.audit.stats` or `.heldout` alone (as
#: `contracts mine` needs) must not load the whole pipeline.
_EXPORTS = {
    "AuditReport": "output_contracts.audit.report_model",
    "audit": "output_contracts.audit.pipeline",
    "audit_report": "output_contracts.audit.pipeline",
    "audit_score": "output_contracts.audit.pipeline",
    "inject_records": "output_contracts.audit.inject",
    "open_source": "output_contracts.audit.pipeline",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
