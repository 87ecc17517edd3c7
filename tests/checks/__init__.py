"""Tests of `output_contracts.checks`: check_call, corpus and stream checking, receipts, output renderers,
the public API and the proxy."""
