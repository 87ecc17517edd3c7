"""The DOMAIN property code."""
