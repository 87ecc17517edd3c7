"""Tests of the registry, plan-check and tool exports."""
