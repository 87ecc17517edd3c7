"""Per-episode metric definitions of repair scoring, as pure functions of ledger bodies and a target.

The definitions follow ContractRL (§3.1, C.8, D.3–D.5) as this project's requirements state them (the
paper itself could not be read); where those name a metric without defining it, docs/repair.md says so. Each function takes plain JSON values so that tests can check it
against hand-computed cases:

- `repaired_pointers` — the pointers a case is *about*: the canonical patch's `path` and `from`
  pointers, or (no canonical patch: the answer is to abstain) the leaves where candidate and target differ.
- `collateral_leaves` — pointer-relative collateral: leaves outside every repaired pointer where the
  final object differs from the target. A full regeneration (`replace ""`) that changes anything outside
  the repaired pointer scores here, whatever pointer its op named.
- `op_collateral_leaves` — the older, op-relative count (changed leaves not under an applied op's
  `path`/`from`), which a whole-document `replace ""` always passes; kept as `collateral_ops`.
- `proposals` / retries — a proposal is a step whose action is a patch the loop considered (not an
  abstention, not a gated patch, not a policy failure); retries r = a − 1 over proposals.
- `ops_equal_ordered` — M_patch: the applied op list equals the canonical op list, in order.
- `unsafe_dispatch` — a dispatched episode (the validator accepted its final object) that should never
  have gone out: the hidden answer is to abstain, or the final object changes an immutable pointer.
- `episode_reward` — the episode reward R (target-aware); `verifiable_reward` — the target-free reward of
  one proposal, used for `--samples` groups before any target is read.
- `leak` — hidden target values copied into the public trace (the verifier's and the mask's text).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from output_contracts.repair.patch import (
    PatchFault,
    changed_leaf_paths,
    format_pointer,
    is_prefix,
    json_equal,
    leaf_paths,
    parse_pointer,
)

#: Episode reward R: +1 correct, 0 closed failure, −1 wrong or unsafe dispatch, then penalties.
REWARD_CORRECT = 1.0
REWARD_CLOSED = 0.0
REWARD_WRONG_DISPATCH = -1.0
REWARD_COLLATERAL = 0.25
REWARD_RETRY = 0.1
#: Verifiable (target-free) reward of one proposal: accepted 1 − 0.1 per op beyond the first; applied but
#: still invalid 0; refused by the mask or a policy failure −1; abstention 0.
VERIFIABLE_EXTRA_OP = 0.1
#: Secrets shorter than this (as text) are not searched for: `5` occurs in too many verifier messages.
MIN_SECRET_CHARS = 3


def _tokens(pointer: Any) -> tuple[str, ...] | None:
    try:
        return parse_pointer(pointer)
    except PatchFault:
        return None


def repaired_pointers(
    candidate: Any, target: Any, canonical_patch: Sequence[Mapping[str, Any]] | None
) -> list[tuple[str, ...]]:
    """The pointers a repair may touch: the canonical patch's `path`/`from`, else the differing leaves."""
    if canonical_patch:
        out = []
        for o in canonical_patch:
            for key in ("path", "from"):
                if key in o:
                    t = _tokens(o[key])
                    if t is not None:
                        out.append(t)
        return sorted(set(out))
    return changed_leaf_paths(candidate, target)


def _under_any(leaf: tuple[str, ...], pointers: Iterable[tuple[str, ...]]) -> bool:
    return any(is_prefix(p, leaf) or is_prefix(leaf, p) for p in pointers)


def collateral_leaves(final: Any, target: Any, repaired: Sequence[tuple[str, ...]]) -> list[str]:
    """Pointer-relative collateral: leaves outside every repaired pointer where `final` ≠ `target`.

    A leaf that is an ancestor of a repaired pointer (a container replaced whole) counts as inside it,
    as does a descendant. Sorted pointers.
    """
    return [format_pointer(p) for p in changed_leaf_paths(target, final) if not _under_any(p, repaired)]


def op_collateral_leaves(candidate: Any, final: Any, ops: Sequence[Mapping[str, Any]]) -> list[str]:
    """Op-relative collateral (the earlier definition, kept for comparison): changed leaves (candidate → final) not
    under any applied op's `path` or `from`. A `replace ""` covers every leaf, so it never scores."""
    covered = [t for o in ops for k in ("path", "from") if k in o for t in [_tokens(o[k])] if t is not None]
    return [format_pointer(p) for p in changed_leaf_paths(candidate, final) if not _under_any(p, covered)]


def is_proposal(step: Mapping[str, Any]) -> bool:
    """A step that put a patch before the mask: not an abstention, not gated, not a policy failure."""
    return not step.get("gated") and step.get("policy_error") is None and step.get("action") != "abstain"


def proposals(steps: Sequence[Mapping[str, Any]]) -> int:
    """a: the number of proposals in an episode."""
    return sum(1 for s in steps if is_proposal(s))


def retries(steps: Sequence[Mapping[str, Any]]) -> int | None:
    """r = a − 1 over proposals; None when the episode made no proposal (it is not in the denominator)."""
    a = proposals(steps)
    return a - 1 if a else None


def op_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """One RFC 6902 op equals another: op, path and from alike, values by RFC 6902 equality."""
    return (
        a.get("op") == b.get("op")
        and a.get("path") == b.get("path")
        and a.get("from") == b.get("from")
        and ("value" in a) == ("value" in b)
        and json_equal(a.get("value"), b.get("value"))
    )


def ops_equal_ordered(emitted: Sequence[Mapping[str, Any]], canonical: Sequence[Mapping[str, Any]]) -> bool:
    """M_patch: the same ops in the same order (values by RFC 6902 equality)."""
    return len(emitted) == len(canonical) and all(
        op_equal(a, b) for a, b in zip(emitted, canonical, strict=True)
    )


def immutable_changed(candidate: Any, final: Any, immutable: Sequence[str]) -> bool:
    """True when a leaf at, under or above an immutable pointer differs between candidate and final."""
    imm = [t for p in immutable for t in [_tokens(p)] if t is not None]
    return bool(imm) and any(_under_any(p, imm) for p in changed_leaf_paths(candidate, final))


def unsafe_dispatch(
    dispatched: bool, abstain_target: bool, candidate: Any, final: Any, immutable: Sequence[str]
) -> bool:
    """U counts these: a dispatched call whose answer was to abstain or that changed an immutable path."""
    return dispatched and (abstain_target or immutable_changed(candidate, final, immutable))


def episode_reward(
    correct: bool, dispatched: bool, unsafe: bool, collateral: bool, retry: int | None
) -> float:
    """R of one episode: +1 correct (a correct abstention included), −1 a wrong or unsafe dispatch, 0 a
    closed failure; then −0.25 when it has collateral edits and −0.1 per retry."""
    if correct and not unsafe:
        r = REWARD_CORRECT
    elif dispatched:
        r = REWARD_WRONG_DISPATCH
    else:
        r = REWARD_CLOSED
    r -= REWARD_COLLATERAL * collateral + REWARD_RETRY * (retry or 0)
    return round(r, 6)


def verifiable_reward(abstained: bool, mask_ok: bool, accepted: bool, mutating_ops: int) -> float:
    """The target-free reward of one proposal (what a group-relative trainer may use before the join)."""
    if abstained:
        return 0.0
    if not mask_ok:
        return -1.0
    if not accepted:
        return 0.0
    return round(1.0 - VERIFIABLE_EXTRA_OP * max(mutating_ops - 1, 0), 6)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _scalars(node: Any) -> Iterable[Any]:
    if isinstance(node, dict):
        for v in node.values():
            yield from _scalars(v)
    elif isinstance(node, list):
        for v in node:
            yield from _scalars(v)
    else:
        yield node


def secrets(
    candidate: Any, target: Any, repaired: Sequence[tuple[str, ...]], schema: Any = None
) -> list[str]:
    """Hidden target values a policy could not read anywhere public: the texts of target leaves under a
    repaired pointer, at least `MIN_SECRET_CHARS` long, that occur in no candidate leaf and no schema
    scalar (as the whole text or inside it: `34.0522` is public when the candidate holds the text
    `"[34.0522,-118.2437]"`)."""
    public = {_text(v) for v in leaf_paths(candidate).values()} | {_text(v) for v in _scalars(schema)}
    out = set()
    for p, v in leaf_paths(target).items():
        t = _text(v)
        if _under_any(p, repaired) and len(t) >= MIN_SECRET_CHARS and not any(t in x for x in public):
            out.add(t)
    return sorted(out)


def public_texts(start: Mapping[str, Any], steps: Sequence[Mapping[str, Any]]) -> list[str]:
    """The texts the environment wrote into the public trace: verifier details (start and every step)
    and mask details. Policy-written fields (the action, the policy's own detail) are not searched."""
    out = [e.get("detail", "") for e in start.get("report") or []]
    for s in steps:
        out += [e.get("detail", "") for e in s.get("report") or []]
        m = s.get("mask") or {}
        if m.get("detail"):
            out.append(m["detail"])
    return [t for t in out if t]


def leak(secret_texts: Sequence[str], texts: Sequence[str]) -> list[str]:
    """The secrets found as substrings of any public text."""
    return [s for s in secret_texts if any(s in t for t in texts)]
