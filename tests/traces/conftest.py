"""Fixtures of the traces tests: the tool registry's loader (test_tool_registry.py) reads the registries
of tests/registry/ (plan-check's acceptance registry, the example plan world, a JSON writer)."""

from tests.registry.conftest import temporal, world, write  # noqa: F401 (fixtures, found by name)
