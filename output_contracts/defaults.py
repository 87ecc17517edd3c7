"""Defaults several packages share (one place, so that they cannot drift apart)."""

from __future__ import annotations

#: The seed of task folds, fault injection, bootstrap resamples and repair runs when none is given.
DEFAULT_SEED = 13

#: Where the documentation pages (`docs/*.md`) are published: pyproject.toml's `[project.urls]`
#: Documentation (a test keeps the two equal). SARIF `helpUri`s are built from it (`docs_url`), since
#: SARIF requires an absolute URI and a reader of a code-scanning alert has no checkout to open.
DOCS_URL = "https://github.com/agent-contracts/contracts/blob/main/docs/"


def docs_url(page: str) -> str:
    """The absolute URL of a docs page and anchor given as in the repository (`docs/codes.md#type` or
    `codes.md#type`)."""
    return DOCS_URL + page.removeprefix("docs/")
