"""The certificates of access points and SMPs: what a record holds of one (the private key
sealed, never shown), the service and environment it is for, and the seat id in its subject."""

from __future__ import annotations

import enum
import uuid
from datetime import datetime

import attrs

from fourcorner.domain.network_services import Environment
from fourcorner.domain.organisation import UserRef


class CertificateEnvironment(enum.Enum):
    """How certificate records spell the environment (the spec shows lower-case ``test``)."""

    TEST = "test"
    PRODUCTION = "production"

    @property
    def environment(self) -> Environment:
        return Environment.TEST if self is CertificateEnvironment.TEST else Environment.PROD


class Service(enum.Enum):
    AP = "AP"
    SMP = "SMP"


@attrs.frozen
class Certificate:
    id: uuid.UUID
    org_id: uuid.UUID
    name: str
    service: Service
    environment: CertificateEnvironment
    transport_profile: str
    cert_pem: str
    ca_chain_pem: str
    valid_from: datetime
    valid_until: datetime
    subject: str
    fingerprint: str
    sealed_key: str  # the private key, encrypted at rest; never shown
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    last_modified_by: UserRef
    description: str = ""
    # sha256 (hex) of the certificate's SubjectPublicKeyInfo; empty only in a record stored
    # before it was kept, until the start-time data migration fills it
    public_key_sha256: str = ""
    # Whether this record holds its public key alone (``held_key``): every certificate an
    # organisation uploads does. The operator's own do not (one key may serve several of its
    # environments and services), nor one registered before keys were held whose key an
    # earlier certificate (or the operator) had.
    holds_key: bool = False

    @property
    def held_key(self) -> str | None:
        """The public key no other certificate may hold, or None."""
        return self.public_key_sha256 if self.holds_key and self.public_key_sha256 else None

    @property
    def common_name(self) -> str:
        """The subject's CN: for an access point certificate, its seat id."""
        return subject_common_name(self.subject)


def subject_common_name(subject: str) -> str:
    """The CN of a certificate subject written as RFC 4514 text (``CN=POP000001,O=...``): the
    access point's seat id. With several, the one first in the certificate, which RFC 4514 writes
    last; "" when there is none."""
    found = ""
    for name, value in _rfc4514_attributes(subject):
        if name.upper() == "CN":
            found = value
    return found


def _rfc4514_attributes(text: str) -> list[tuple[str, str]]:
    r"""The ``(type, value)`` pairs of RFC 4514 text, values unescaped (``\,`` and ``\2C``)."""
    out: list[tuple[str, str]] = []
    buf, kind, in_value, i = bytearray(), "", False, 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            pair = text[i + 1 : i + 3]
            if len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair):
                buf.append(int(pair, 16))
                i += 3
            else:
                buf += text[i + 1].encode()
                i += 2
            continue
        if not in_value and ch == "=":
            kind, in_value = buf.decode(errors="replace").strip(), True
            buf.clear()
        elif in_value and ch in ",+":
            out.append((kind, buf.decode(errors="replace")))
            buf.clear()
            in_value = False
        else:
            buf += ch.encode()
        i += 1
    if in_value:
        out.append((kind, buf.decode(errors="replace")))
    return out
