"""The TYPE property code."""
