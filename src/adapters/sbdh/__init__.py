"""The network's envelope: read (hardened, streaming) and write Standard Business Documents,
and write and read the Message Level Status that answers one (NETWORK.md §2 and §5)."""

from fourcorner.adapters.sbdh.mls import (
    MLS_DOCUMENT_TYPE,
    MLS_PROCESS,
    mls_envelope,
    read_mls,
    write_mls,
)
from fourcorner.adapters.sbdh.reader import read_envelope, read_envelope_file
from fourcorner.adapters.sbdh.writer import write_sbd

__all__ = [
    "MLS_DOCUMENT_TYPE",
    "MLS_PROCESS",
    "mls_envelope",
    "read_envelope",
    "read_envelope_file",
    "read_mls",
    "write_mls",
    "write_sbd",
]
