"""RFC 6962 Merkle roots and audit paths, checked against published CT vectors and a literal transcription."""

from __future__ import annotations

import hashlib
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.errors import LedgerError
from output_contracts.ledger import inclusion_proof, merkle_root, verify_inclusion
from output_contracts.ledger.merkle import EMPTY_ROOT, Digests, merkle_root_bytes, root_from_inclusion

# The certificate-transparency reference leaves and tree heads (RFC 6962 test data used by CT's
# merkle_tree_test and by Trillian): roots of the first n leaves, n = 1..8.
CT_LEAVES = [
    bytes.fromhex(x)
    for x in [
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    ]
]
CT_ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
CT_INCLUSION = [
    (
        0,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        5,
        8,
        [
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
]


# --- an independent, literal transcription of RFC 6962 §2.1 and §2.1.1 ------------------------------


def _k(n: int) -> int:
    """Largest power of two strictly smaller than n (n > 1)."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def rfc_mth(d: list[bytes]) -> bytes:
    n = len(d)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return hashlib.sha256(b"\x00" + d[0]).digest()
    k = _k(n)
    return hashlib.sha256(b"\x01" + rfc_mth(d[:k]) + rfc_mth(d[k:])).digest()


def rfc_path(m: int, d: list[bytes]) -> list[bytes]:
    n = len(d)
    if n == 1:
        return []
    k = _k(n)
    if m < k:
        return [*rfc_path(m, d[:k]), rfc_mth(d[k:])]
    return [*rfc_path(m - k, d[k:]), rfc_mth(d[:k])]


def _digests(n: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(32) for _ in range(n)]


def test_ct_reference_roots() -> None:
    assert merkle_root_bytes([]).hex() == EMPTY_ROOT == hashlib.sha256(b"").hexdigest()
    for n in range(1, 9):
        assert merkle_root_bytes(CT_LEAVES[:n]).hex() == CT_ROOTS[n - 1]
        assert rfc_mth(CT_LEAVES[:n]).hex() == CT_ROOTS[n - 1]  # the transcription is right too


def test_ct_reference_inclusion_proofs() -> None:
    for index, size, path in CT_INCLUSION:
        assert inclusion_proof(CT_LEAVES[:size], index) == path
        assert verify_inclusion(CT_LEAVES[index], index, size, path, CT_ROOTS[size - 1])


@pytest.mark.parametrize("n", [*range(9), 13, 31, 32, 33, 100, 257, 1000])
def test_root_matches_transcription(n: int) -> None:
    d = _digests(n, n)
    assert merkle_root([x.hex() for x in d]) == rfc_mth(d).hex()
    assert merkle_root(d) == rfc_mth(d).hex()  # raw digests are accepted too


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 8, 9, 16, 17, 33])
def test_every_audit_path_matches_transcription_and_verifies(n: int) -> None:
    d = _digests(n, 100 + n)
    root = rfc_mth(d).hex()
    hexes = [x.hex() for x in d]
    for m in range(n):
        path = inclusion_proof(hexes, m)
        assert path == [p.hex() for p in rfc_path(m, d)]
        assert verify_inclusion(hexes[m], m, n, path, root)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 70), data=st.data())
def test_mangled_proofs_fail(n: int, data: st.DataObject) -> None:
    d = _digests(n, n * 7)
    hexes = [x.hex() for x in d]
    root = merkle_root(hexes)
    m = data.draw(st.integers(0, n - 1))
    path = inclusion_proof(hexes, m)
    assert verify_inclusion(hexes[m], m, n, path, root)
    other = data.draw(st.integers(0, n - 1).filter(lambda j: j != m)) if n > 1 else None
    if other is not None:
        assert not verify_inclusion(hexes[other], m, n, path, root)  # wrong entry
        assert not verify_inclusion(hexes[m], other, n, path, root)  # wrong index
    assert not verify_inclusion(hexes[m], m, n, path, "ab" * 32)  # wrong root
    if path:
        i = data.draw(st.integers(0, len(path) - 1))
        bad = list(path)
        bad[i] = ("0" if bad[i][0] != "0" else "1") + bad[i][1:]
        assert not verify_inclusion(hexes[m], m, n, bad, root)  # flipped path node
        assert not verify_inclusion(hexes[m], m, n, path[:-1], root)  # truncated path
    assert not verify_inclusion(hexes[m], m, n, [*path, "cd" * 32], root)  # extended path


def test_bad_arguments() -> None:
    with pytest.raises(LedgerError):
        inclusion_proof(["00" * 32], 1)
    with pytest.raises(LedgerError):
        merkle_root(["zz"])
    assert root_from_inclusion("00" * 32, 3, 3, []) is None
    assert root_from_inclusion("00" * 32, 0, 2, ["ab" * 16]) is None  # short node
    assert not verify_inclusion("not hex", 0, 1, [], EMPTY_ROOT)


def test_compact_digests_behave_like_a_list() -> None:
    d = _digests(37, 3)
    compact = Digests(d)
    assert len(compact) == 37 and compact[0] == d[0] and compact[-1] == d[-1] and compact[3:6] == d[3:6]
    assert merkle_root(compact) == merkle_root(d) == rfc_mth(d).hex()
    assert inclusion_proof(compact, 20) == [p.hex() for p in rfc_path(20, d)]
    with pytest.raises(IndexError):
        compact[37]
    with pytest.raises(ValueError):
        compact.append(b"short")
