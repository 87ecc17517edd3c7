"""Tests of the registry, plan-check and tool exports (issue 9, issue 5 item 4)."""
