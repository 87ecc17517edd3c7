"""The UNIQUE property code."""
