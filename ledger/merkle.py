"""RFC 6962 Merkle tree hashes and inclusion proofs over the entry hashes of a ledger.

Leaves are the raw 32 bytes of each entry's `hash`, in `seq` order. Per RFC 6962 §2.1 (same as RFC 9162
§2.1.1): the hash of an empty tree is SHA-256 of the empty string; a leaf is `SHA-256(0x00 ‖ d)`; an inner
node is `SHA-256(0x01 ‖ left ‖ right)`, where the left subtree holds the first k leaves, k the largest power
of two smaller than n. The 0x00/0x01 prefixes keep a leaf from ever passing for a node.

The tree is built bottom-up, pairing neighbours and carrying a lone last node up a level unchanged; that
yields exactly the RFC's left-balanced tree (the tests compare with a literal recursive transcription).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from contracts.errors import LedgerError

EMPTY_ROOT = hashlib.sha256(b"").hexdigest()


def leaf_hash(data: bytes) -> bytes:
    """`SHA-256(0x00 ‖ data)`."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """`SHA-256(0x01 ‖ left ‖ right)`."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _leaf_data(hashes: Sequence[str | bytes]) -> list[bytes]:
    out = []
    for i, h in enumerate(hashes):
        if isinstance(h, bytes):
            out.append(h)
            continue
        try:
            out.append(bytes.fromhex(h))
        except ValueError:
            raise LedgerError(f"entry hash {i} is not hex: {h!r}", field="hash") from None
    return out


def _levels(leaves: list[bytes]) -> list[list[bytes]]:
    """Every level of the tree, leaves first; a lone last node is carried up unchanged."""
    level = [leaf_hash(d) for d in leaves]
    levels = [level]
    while len(level) > 1:
        nxt = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        levels.append(nxt)
        level = nxt
    return levels


def merkle_root_bytes(leaves: Sequence[bytes]) -> bytes:
    """Merkle Tree Hash of raw leaf data (keeps one level at a time, not the whole tree)."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    sha = hashlib.sha256
    level = [sha(b"\x00" + d).digest() for d in leaves]
    while len(level) > 1:
        nxt = [sha(b"\x01" + level[i] + level[i + 1]).digest() for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def merkle_root(hashes: Sequence[str | bytes]) -> str:
    """Hex RFC 6962 root over entry hashes (hex strings or raw 32-byte digests), in order."""
    return merkle_root_bytes(_leaf_data(hashes)).hex()


def inclusion_proof(hashes: Sequence[str | bytes], index: int) -> list[str]:
    """RFC 6962 §2.1.1 audit path (hex, leaf side first) of leaf `index` in the tree over `hashes`."""
    n = len(hashes)
    if not 0 <= index < n:
        raise LedgerError(f"no entry {index}: the tree has {n} leaves", field="seq")
    path: list[str] = []
    i = index
    for level in _levels(_leaf_data(hashes))[:-1]:
        sibling = i ^ 1
        if sibling < len(level):
            path.append(level[sibling].hex())
        i //= 2
    return path


def root_from_inclusion(entry_hash: str | bytes, index: int, size: int, path: Sequence[str]) -> str | None:
    """The root implied by an audit path (RFC 9162 §2.1.3.2), or None when the path cannot fit the size."""
    if not 0 <= index < size:
        return None
    try:
        data = bytes.fromhex(entry_hash) if isinstance(entry_hash, str) else entry_hash
        nodes = [bytes.fromhex(p) for p in path]
    except ValueError:
        return None
    if any(len(p) != 32 for p in nodes):
        return None
    fn, sn = index, size - 1
    r = leaf_hash(data)
    for p in nodes:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        return None
    return r.hex()


def verify_inclusion(entry_hash: str | bytes, index: int, size: int, path: Sequence[str], root: str) -> bool:
    """True when `path` proves the entry hash is leaf `index` of the size-`size` tree with this `root`."""
    return root_from_inclusion(entry_hash, index, size, path) == root.lower()
