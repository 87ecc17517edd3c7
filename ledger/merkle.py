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
from collections.abc import Iterable, Sequence
from typing import overload

from output_contracts.errors import LedgerError

EMPTY_ROOT = hashlib.sha256(b"").hexdigest()


def leaf_hash(data: bytes) -> bytes:
    """`SHA-256(0x00 ‖ data)`."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """`SHA-256(0x01 ‖ left ‖ right)`."""
    return hashlib.sha256(b"\x01" + left + right).digest()


class Digests(Sequence[bytes]):
    """A compact list of 32-byte digests (one bytearray: 32 bytes an entry instead of ~100 as objects)."""

    __slots__ = ("_buf",)

    def __init__(self, items: Iterable[bytes] = ()) -> None:
        self._buf = bytearray()
        self.extend(items)

    def append(self, digest: bytes) -> None:
        """Add one raw 32-byte digest."""
        if len(digest) != 32:
            raise ValueError("a digest is 32 bytes")
        self._buf += digest

    def extend(self, digests: Iterable[bytes]) -> None:
        """Add raw 32-byte digests."""
        for d in digests:
            self.append(d)

    def __len__(self) -> int:
        return len(self._buf) // 32

    @overload
    def __getitem__(self, i: int) -> bytes: ...

    @overload
    def __getitem__(self, i: slice) -> list[bytes]: ...

    def __getitem__(self, i: int | slice) -> bytes | list[bytes]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return bytes(self._buf[32 * i : 32 * i + 32])


def _leaf_data(hashes: Sequence[str | bytes]) -> Sequence[bytes]:
    if isinstance(hashes, Digests):
        return hashes
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


def merkle_root_bytes(leaves: Sequence[bytes], lo: int = 0, hi: int | None = None) -> bytes:
    """Merkle Tree Hash of raw leaf data `leaves[lo:hi]` (keeps one level at a time, not the whole tree)."""
    hi = len(leaves) if hi is None else hi
    if hi <= lo:
        return hashlib.sha256(b"").digest()
    sha = hashlib.sha256
    level = [sha(b"\x00" + leaves[i]).digest() for i in range(lo, hi)]
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
    """RFC 6962 §2.1.1 audit path (hex, leaf side first) of leaf `index` in the tree over `hashes`.

    Follows the RFC's recursion PATH(m, D[lo:hi]); each sibling subtree is hashed once, so the cost is
    O(n) hashes and the memory one level of the largest sibling.
    """
    n = len(hashes)
    if not 0 <= index < n:
        raise LedgerError(f"no entry {index}: the tree has {n} leaves", field="seq")
    leaves = _leaf_data(hashes)
    path: list[bytes] = []
    lo, hi, m = 0, n, index
    while hi - lo > 1:
        k = 1 << ((hi - lo - 1).bit_length() - 1)  # largest power of two < hi - lo
        if m < k:
            path.append(merkle_root_bytes(leaves, lo + k, hi))
            hi = lo + k
        else:
            path.append(merkle_root_bytes(leaves, lo, lo + k))
            lo, m = lo + k, m - k
    return [p.hex() for p in reversed(path)]


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
