"""Tests of `output_contracts.audit`: the cross-fitted audit, its statistics and reports, fault injection,
`compare` and the HTML report."""
