"""Certificates and keys: the embedded test PKI, inspection of uploaded certificates, and the
sealing of private keys at rest."""

from fourcorner.adapters.pki.certificates import (
    CertificateInfo,
    ChainError,
    common_name,
    inspect_certificate,
    validity_problem,
    verify_chain,
)
from fourcorner.adapters.pki.sealing import KeySealer
from fourcorner.adapters.pki.testpki import (
    PrivateKey,
    TestPki,
    cert_pem,
    ensure_test_pki,
    issue_leaf,
    key_pem,
    load_test_pki,
    new_ca,
)

__all__ = [
    "CertificateInfo",
    "ChainError",
    "KeySealer",
    "PrivateKey",
    "TestPki",
    "cert_pem",
    "common_name",
    "ensure_test_pki",
    "inspect_certificate",
    "issue_leaf",
    "key_pem",
    "load_test_pki",
    "new_ca",
    "validity_problem",
    "verify_chain",
]
