"""The CONDITIONAL property code."""
