"""The FORMAT property code."""
