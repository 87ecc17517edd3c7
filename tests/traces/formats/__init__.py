"""Tests of `output_contracts.traces.formats`: one test module a producer's adapter, on real fixtures."""
