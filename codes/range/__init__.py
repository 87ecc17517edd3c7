"""The RANGE property code."""
