"""The RELATION property code."""
