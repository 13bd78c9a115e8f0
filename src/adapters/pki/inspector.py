"""The certificate-inspection port over ``inspect_certificate`` and configured trust anchors.

The trust anchors are read when a check first needs them, not when the inspector is made: the
public key of a stored certificate needs none, and reading a test PKI's anchors creates that
PKI where there is none (``fourcorner migrate`` reads public keys and makes no PKI)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime

from cryptography import x509

from fourcorner.adapters.pki.certificates import inspect_certificate, stored_public_key_sha256
from fourcorner.adapters.pki.renewal import replacement_problem
from fourcorner.application.ports import InspectedCertificate


class TrustAnchorInspector:
    def __init__(self, trust_anchors: Callable[[], Sequence[x509.Certificate]]) -> None:
        self._trust_anchors = trust_anchors

    @functools.cached_property
    def trust_anchors(self) -> list[x509.Certificate]:
        return list(self._trust_anchors())

    def inspect(
        self, cert_pem: str, ca_chain_pem: str, private_key_pem: str, now: datetime
    ) -> InspectedCertificate:
        info = inspect_certificate(cert_pem, ca_chain_pem, private_key_pem, self.trust_anchors, now)
        return InspectedCertificate(
            valid_from=info.valid_from,
            valid_until=info.valid_until,
            subject=info.subject,
            common_name=info.common_name or "",
            fingerprint_sha256=info.fingerprint_sha256,
            public_key_sha256=info.public_key_sha256,
        )

    def public_key_sha256(self, cert_pem: str) -> str:
        return stored_public_key_sha256(cert_pem)

    def replacement_problem(
        self, stored_pem: str, stored_chain_pem: str, new_pem: str
    ) -> str | None:
        return replacement_problem(stored_pem, stored_chain_pem, new_pem, self.trust_anchors)
