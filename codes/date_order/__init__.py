"""The DATE_ORDER property code."""
