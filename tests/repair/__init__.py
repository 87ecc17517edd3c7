"""Tests of `output_contracts.repair`: cases, the action mask, the validator, policies, replay, scoring and
the split audit."""
