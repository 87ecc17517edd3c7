"""output_contracts.ledger — append-only, hash-chained, Merkle-anchored, SHA-256-manifested run records.

Every audit and repair run writes its events here; every reported number can be traced back to a
verified, frozen ledger. The promise is tamper-evidence relative to a recorded head hash or Merkle root,
not tamper-proofing: whoever can write the folder can rewrite it whole, so anchor `head`/`root` elsewhere.
See docs/ledger.md.

    led = Ledger.create(dir, config, seed, inputs=[...])
    led.append("audit.fire", {...})
    info = led.freeze()                      # FreezeInfo(entries, head, root)
    report = verify(dir, require_frozen=True, head=info.head)
"""

from output_contracts.ledger.entry import GENESIS, Entry
from output_contracts.ledger.header import source_revision
from output_contracts.ledger.merkle import inclusion_proof, merkle_root, verify_inclusion
from output_contracts.ledger.proof import ProofCheck, check_proof, prove
from output_contracts.ledger.scan import Problem
from output_contracts.ledger.verify import CODES, VerifyReport, head_info, read_entries, verify
from output_contracts.ledger.writer import REPAIR_KIND, FreezeInfo, Ledger, claim_folder

__all__ = [
    "CODES",
    "GENESIS",
    "REPAIR_KIND",
    "Entry",
    "FreezeInfo",
    "Ledger",
    "Problem",
    "ProofCheck",
    "VerifyReport",
    "check_proof",
    "claim_folder",
    "head_info",
    "inclusion_proof",
    "merkle_root",
    "prove",
    "read_entries",
    "source_revision",
    "verify",
    "verify_inclusion",
]
