"""Tests of `output_contracts.registry` (registry infer and check, plan-check, tool exports, substitutes)."""
