"""The certificate-inspection port over ``inspect_certificate`` and configured trust anchors."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from cryptography import x509

from fourcorner.adapters.pki.certificates import inspect_certificate, stored_public_key_sha256
from fourcorner.adapters.pki.renewal import replacement_problem
from fourcorner.application.ports import InspectedCertificate


class TrustAnchorInspector:
    def __init__(self, trust_anchors: Sequence[x509.Certificate]) -> None:
        self.trust_anchors = list(trust_anchors)

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
