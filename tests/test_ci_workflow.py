"""The repository's own CI workflow (`.github/workflows/ci.yml`): valid against SchemaStore's workflow
schema (vendored, tests/data/schemas), and running what it claims: `.ci/run` (`make test`) on every
Python the package supports, and the wheel test on the wheel the job builds and uploads."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.loaders import github_yaml
from tests.vendored import errors


@pytest.fixture(scope="module")
def ci(repo: Path) -> dict[str, Any]:
    return github_yaml(repo / ".github" / "workflows" / "ci.yml")


def _runs(job: dict[str, Any]) -> str:
    return "\n".join(s.get("run", "") for s in job["steps"])


def test_ci_workflow_validates_against_schemastore(ci: dict[str, Any]) -> None:
    assert errors("github-workflow.json", ci) == []
    broken = {**ci, "jobs": {**ci["jobs"], "test": {**ci["jobs"]["test"], "runs-on": 3}}}
    assert errors("github-workflow.json", broken) != []  # the schema really constrains
    assert set(ci["on"]) >= {"push", "pull_request"}
    assert ci["permissions"] == {"contents": "read"}  # it reads the code, writes nothing


def test_ci_tests_every_supported_python_with_the_ci_entry_point(ci: dict[str, Any], repo: Path) -> None:
    job = ci["jobs"]["test"]
    assert job["runs-on"] == "ubuntu-latest"
    versions = job["strategy"]["matrix"]["python"]
    assert versions == ["3.11", "3.12"]
    floor = tomllib.loads((repo / "pyproject.toml").read_text())["project"]["requires-python"]
    assert floor == f">={versions[0]}"  # the oldest Python tested is the oldest one the package accepts
    (setup,) = [s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python@")]
    assert setup["with"]["python-version"] == "${{ matrix.python }}"
    assert _runs(job).strip() == "bash .ci/run"
    assert "make test" in (repo / ".ci" / "run").read_text().splitlines()[-1]
    for j in ci["jobs"].values():  # every action pinned to a major version at least
        for s in j["steps"]:
            if "uses" in s:
                assert re.fullmatch(r"actions/[\w-]+@v\d+", s["uses"]), s["uses"]


def test_ci_builds_the_wheel_and_tests_that_wheel(ci: dict[str, Any], repo: Path) -> None:
    job = ci["jobs"]["wheel"]
    runs = _runs(job)
    assert ".venv/bin/python -m pip wheel --no-deps . -w dist/" in runs
    (upload,) = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload["with"]["path"] == "dist/*.whl"
    assert re.search(
        r'CONTRACTS_WHEEL="\$\(ls dist/\*\.whl\)" \.venv/bin/python -m pytest .*tests/test_wheel\.py',
        runs.replace("\\\n", " "),
    )
    assert (repo / "tests" / "test_wheel.py").is_file()
    assert 'PREBUILT = "CONTRACTS_WHEEL"' in (repo / "tests" / "test_wheel.py").read_text()
