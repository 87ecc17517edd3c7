"""The CONSISTENT property code."""
