"""The LENGTH property code."""
