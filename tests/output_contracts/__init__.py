"""Tests of the root package `output_contracts` (its own modules, not the folders it links to)."""
