"""The REQUIRED property code."""
