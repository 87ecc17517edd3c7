"""The ECHO property code."""
