"""Rule classes: one module per property code behind a common interface."""
