"""Trace format adapters: one module per format behind a common interface."""
