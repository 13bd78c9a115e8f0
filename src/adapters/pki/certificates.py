"""Inspection of an uploaded certificate (``certPem``, ``caChainPem``, ``privateKeyPem``).

``inspect_certificate`` parses the three fields, checks the certificate's validity window, walks
its chain to one of the trust anchors and checks that the key belongs to the certificate: the
key is required, as proof that whoever registers the certificate possesses it. Every
refusal is an ``InvalidInput`` whose details name the field and the problem; problems of
independent fields are reported together. ``verify_chain`` is the same chain walk for a
certificate that arrives by other means (an AS4 BinarySecurityToken, an SMP signature).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime

import attrs
from cryptography import exceptions, x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from fourcorner.domain.clock import utc
from fourcorner.domain.errors import Detail, InvalidInput

CERT_FIELD = "$.certPem"
CHAIN_FIELD = "$.caChainPem"
KEY_FIELD = "$.privateKeyPem"

MAX_LEVELS = 3
"""How far below its trust anchor a certificate may sit: the certificate and at most two
intermediate CAs (NETWORK.md §4, "chains (at most 3 levels)")."""

_PEM_BLOCK = re.compile(
    r"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.DOTALL | re.ASCII
)


class ChainError(ValueError):
    """A certificate does not chain to a trust anchor; the message says why, in one sentence."""


@attrs.frozen
class CertificateInfo:
    valid_from: datetime
    valid_until: datetime
    subject: str
    common_name: str | None
    serial: str
    fingerprint_sha256: str
    der: bytes = attrs.field(repr=False)
    issuer: str
    public_key_sha256: str  # of the SubjectPublicKeyInfo, hex


def inspect_certificate(
    cert_pem: str,
    ca_chain_pem: str,
    private_key_pem: str,
    trust_anchors: Sequence[x509.Certificate],
    now: datetime,
) -> CertificateInfo:
    """What the service records about an uploaded certificate, once every check has passed.

    ``ca_chain_pem`` may be empty when a trust anchor issued the certificate directly, and may
    include the anchor itself. ``private_key_pem`` is required and must be the certificate's
    own key. Raises ``InvalidInput`` listing every problem found.
    """
    now = utc(now)
    problems: list[Detail] = []

    def refuse(field: str, problem: str) -> None:
        problems.append(Detail(field, problem))

    cert: x509.Certificate | None = None
    try:
        cert = _parse_certificate(cert_pem)
    except ValueError as e:
        refuse(CERT_FIELD, str(e))

    chain: list[x509.Certificate] | None = None
    try:
        chain = _parse_chain(ca_chain_pem)
    except ValueError as e:
        refuse(CHAIN_FIELD, str(e))

    key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | None = None
    if not (private_key_pem or "").strip():
        refuse(KEY_FIELD, "the certificate's private key is required, to prove it is yours")
    else:
        try:
            key = _parse_key(private_key_pem)
        except ValueError as e:
            refuse(KEY_FIELD, str(e))

    if cert is not None:
        for problem in _leaf_problems(cert, now):
            refuse(CERT_FIELD, problem)
        if chain is not None:
            try:
                _walk(cert, chain, trust_anchors, now)
            except ChainError as e:
                refuse(CHAIN_FIELD, str(e))
        if key is not None and _spki(key.public_key()) != _spki(cert.public_key()):
            refuse(KEY_FIELD, "the key does not belong to the certificate")

    if problems or cert is None:
        raise InvalidInput(problems)
    return CertificateInfo(
        valid_from=cert.not_valid_before_utc,
        valid_until=cert.not_valid_after_utc,
        subject=cert.subject.rfc4514_string(),
        common_name=common_name(cert),
        serial=format(cert.serial_number, "x"),
        fingerprint_sha256=cert.fingerprint(hashes.SHA256()).hex(),
        der=cert.public_bytes(serialization.Encoding.DER),
        issuer=cert.issuer.rfc4514_string(),
        public_key_sha256=public_key_sha256(cert),
    )


def public_key_sha256(cert: x509.Certificate) -> str:
    """The sha256 (hex) of the certificate's DER SubjectPublicKeyInfo: the same for every
    certificate issued for one key pair."""
    spki = cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(spki).hexdigest()


def stored_public_key_sha256(cert_pem: str) -> str:
    """``public_key_sha256`` of a PEM certificate the service stored earlier (nothing else is
    checked); ``InvalidInput`` on ``$.certPem`` when it does not parse."""
    try:
        return public_key_sha256(_parse_certificate(cert_pem))
    except (ValueError, exceptions.UnsupportedAlgorithm) as e:
        raise InvalidInput.one(CERT_FIELD, str(e)) from None


def verify_chain(
    cert: x509.Certificate,
    intermediates: Sequence[x509.Certificate],
    trust_anchors: Sequence[x509.Certificate],
    now: datetime,
) -> list[x509.Certificate]:
    """Check that ``cert`` is valid at ``now`` and chains to one of ``trust_anchors`` through
    ``intermediates`` (any order; unused ones are ignored). Returns the path above ``cert``,
    its issuer first and the anchor last. Raises ``ChainError``."""
    now = utc(now)
    for problem in _leaf_problems(cert, now):
        raise ChainError(f"the certificate {_label(cert)} is unusable: {problem}")
    return _walk(cert, intermediates, trust_anchors, now)


def common_name(cert: x509.Certificate) -> str | None:
    """The subject's (first) CN, or None."""
    attributes = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(attributes[0].value) if attributes else None


def validity_problem(cert: x509.Certificate, now: datetime) -> str | None:
    """``expired on …`` or ``not valid before …`` when ``now`` lies outside the certificate's
    window, else None."""
    now = utc(now)
    if now < cert.not_valid_before_utc:
        return f"not valid before {instant(cert.not_valid_before_utc)}"
    if now > cert.not_valid_after_utc:
        return f"expired on {instant(cert.not_valid_after_utc)}"
    return None


# --- parsing --------------------------------------------------------------------------------


def _blocks(text: str) -> list[tuple[str, str]]:
    """The PEM blocks of ``text`` as (label, whole block) pairs."""
    return [(m.group(1), m.group(0)) for m in _PEM_BLOCK.finditer(text)]


def _parse_certificate(text: str) -> x509.Certificate:
    blocks = _blocks(text or "")
    certs = [block for label, block in blocks if label == "CERTIFICATE"]
    if not certs:
        if any(label.endswith("PRIVATE KEY") for label, _ in blocks):
            raise ValueError("not a PEM certificate (it holds a private key)")
        raise ValueError("not a PEM certificate")
    if len(certs) > 1:
        raise ValueError(
            f"holds {len(certs)} certificates; send the certificate alone here "
            "and its issuing CAs in caChainPem"
        )
    try:
        return x509.load_pem_x509_certificate(certs[0].encode("ascii"))
    except ValueError:
        raise ValueError("not a PEM certificate (the CERTIFICATE block does not decode)") from None


def _parse_chain(text: str) -> list[x509.Certificate]:
    if not (text or "").strip():
        return []
    blocks = _blocks(text)
    if not blocks:
        raise ValueError("not a list of PEM certificates")
    chain: list[x509.Certificate] = []
    for position, (label, block) in enumerate(blocks, start=1):
        if label != "CERTIFICATE":
            raise ValueError(f"block {position} is a {label}, not a CERTIFICATE")
        try:
            chain.append(x509.load_pem_x509_certificate(block.encode("ascii")))
        except ValueError:
            raise ValueError(f"certificate {position} of the chain does not decode") from None
    return chain


def _parse_key(text: str) -> rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey:
    blocks = [(label, block) for label, block in _blocks(text) if label.endswith("PRIVATE KEY")]
    if not blocks:
        raise ValueError("not a PEM private key")
    if len(blocks) > 1:
        raise ValueError(f"holds {len(blocks)} private keys; send only the certificate's key")
    label, block = blocks[0]
    if label == "ENCRYPTED PRIVATE KEY" or "Proc-Type: 4,ENCRYPTED" in block:
        raise ValueError(
            "the key is encrypted with a passphrase; send it unencrypted "
            "(the service encrypts it at rest)"
        )
    try:
        key = serialization.load_pem_private_key(block.encode("ascii"), password=None)
    except TypeError:
        raise ValueError(
            "the key is encrypted with a passphrase; send it unencrypted "
            "(the service encrypts it at rest)"
        ) from None
    except (ValueError, exceptions.UnsupportedAlgorithm):
        raise ValueError("not a readable PEM private key") from None
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise ValueError("only RSA and EC keys are accepted")
    return key


def _spki(key: object) -> bytes:
    if not isinstance(key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey):
        return b""
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


# --- checks ---------------------------------------------------------------------------------


def _leaf_problems(cert: x509.Certificate, now: datetime) -> list[str]:
    problems: list[str] = []
    window = validity_problem(cert, now)
    if window is not None:
        problems.append(window)
    try:
        public_key = cert.public_key()
    except (ValueError, exceptions.UnsupportedAlgorithm):
        public_key = None
    if not isinstance(public_key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey):
        problems.append("not an RSA or EC certificate")
    if _is_ca(cert):
        problems.append("a CA certificate, not an end-entity certificate")
    return problems


def _walk(
    cert: x509.Certificate,
    intermediates: Sequence[x509.Certificate],
    trust_anchors: Sequence[x509.Certificate],
    now: datetime,
) -> list[x509.Certificate]:
    path: list[x509.Certificate] = []
    current, levels = cert, 1
    seen = {_FINGERPRINTS.of(cert)}
    while True:
        anchor = _first_issuer(current, trust_anchors, now, below=len(path))
        if anchor is not None:
            return [*path, anchor]
        candidates = [c for c in intermediates if _FINGERPRINTS.of(c) not in seen]
        issuer = _first_issuer(current, candidates, now, below=len(path))
        if issuer is None:
            if _issued_by(current, current):
                raise ChainError(f"the chain ends at {_label(current)}, which is not trusted")
            raise ChainError(
                f"the issuer {_quote(current.issuer)} of {_label(current)} is neither "
                "in the chain nor a trusted root"
            )
        levels += 1
        if levels > MAX_LEVELS:
            raise ChainError(
                f"the chain is longer than {MAX_LEVELS} levels: the certificate and at most "
                f"{MAX_LEVELS - 1} intermediate CAs may sit below the trusted root"
            )
        path.append(issuer)
        seen.add(_FINGERPRINTS.of(issuer))
        current = issuer


def _first_issuer(
    cert: x509.Certificate,
    candidates: Sequence[x509.Certificate],
    now: datetime,
    *,
    below: int,
) -> x509.Certificate | None:
    """The first candidate that issued ``cert`` and may act as its CA; when some issued it but
    none may act as a CA, ``ChainError`` says why the first could not. ``below`` counts the
    intermediate CAs under ``cert``'s issuer (for pathLenConstraint)."""
    refusal: ChainError | None = None
    for candidate in candidates:
        if not _issued_by(cert, candidate):
            continue
        problem = _ca_problem(candidate, now, below=below)
        if problem is None:
            return candidate
        refusal = refusal or ChainError(f"the CA certificate {_label(candidate)} {problem}")
    if refusal is not None:
        raise refusal
    return None


def _issued_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    return cert.issuer == issuer.subject and _signed_by(cert, issuer)


class _Fingerprints:
    """The SHA-256 fingerprints of the certificate objects met lately, by the objects'
    identity. cryptography encodes and hashes a certificate again on every ``fingerprint``
    call, and a chain walk takes five to seven (most of its time), most often of the same
    objects: the trust anchors and CAs of the settings, an SMP's signer and the endpoint
    certificates of its answers (kept while their bytes are the same). At most ``size`` are
    held, each with its certificate, so that no other object can take its ``id`` meanwhile;
    the least recently used go first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.hits = 0
        self._known: OrderedDict[int, tuple[x509.Certificate, bytes]] = OrderedDict()
        self._lock = threading.Lock()  # chains are walked in threads as well

    def __len__(self) -> int:
        return len(self._known)

    def of(self, cert: x509.Certificate) -> bytes:
        with self._lock:
            known = self._known.get(id(cert))
            if known is not None and known[0] is cert:
                self._known.move_to_end(id(cert))
                self.hits += 1
                return known[1]
        fingerprint = cert.fingerprint(hashes.SHA256())
        with self._lock:
            self._known[id(cert)] = (cert, fingerprint)
            self._known.move_to_end(id(cert))
            while len(self._known) > self.size:
                self._known.popitem(last=False)
        return fingerprint


_FINGERPRINTS = _Fingerprints(256)


class _SignedPairs:
    """Pairs of certificates (by their SHA-256 fingerprints) whose signature was found made by
    the issuer's key: the answer depends on the two certificates' bytes alone, and the same
    sender's certificate arrives with every AS4 message, its chain walked each time. Only
    signatures that verified are kept, as 64 bytes a pair and at most ``size`` pairs (the
    oldest dropped first): a peer sending ever new certificates that fail makes nothing grow."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.hits = 0
        self._pairs: dict[tuple[bytes, bytes], None] = {}
        self._lock = threading.Lock()  # chains are walked in threads as well

    def __len__(self) -> int:
        return len(self._pairs)

    def verified(self, cert: x509.Certificate, issuer: x509.Certificate) -> bool:
        key = (_FINGERPRINTS.of(cert), _FINGERPRINTS.of(issuer))
        with self._lock:
            if key in self._pairs:
                self.hits += 1
                return True
        try:
            cert.verify_directly_issued_by(issuer)
        except (
            ValueError,
            TypeError,
            exceptions.InvalidSignature,
            exceptions.UnsupportedAlgorithm,
        ):
            return False
        with self._lock:
            while len(self._pairs) >= self.size:
                del self._pairs[next(iter(self._pairs))]
            self._pairs[key] = None
        return True


_SIGNED = _SignedPairs(256)


def _signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    """Whether ``issuer``'s key made ``cert``'s signature."""
    return _SIGNED.verified(cert, issuer)


def _ca_problem(ca: x509.Certificate, now: datetime, *, below: int) -> str | None:
    constraints = _basic_constraints(ca)
    if constraints is None or not constraints.ca:
        return "is not a CA certificate (its basicConstraints do not say CA:TRUE)"
    if constraints.path_length is not None and below > constraints.path_length:
        return (
            f"allows {constraints.path_length} intermediate CAs below it "
            f"(pathLenConstraint), the chain has {below}"
        )
    window = validity_problem(ca, now)
    if window is not None and window.startswith("not"):
        return f"is {window}"  # "is not valid before …"; "expired on …" reads as it is
    return window


def _basic_constraints(cert: x509.Certificate) -> x509.BasicConstraints | None:
    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value
    except (x509.ExtensionNotFound, ValueError):
        return None


def _is_ca(cert: x509.Certificate) -> bool:
    constraints = _basic_constraints(cert)
    return constraints is not None and constraints.ca


def _label(cert: x509.Certificate) -> str:
    return _quote(cert.subject)


def _quote(name: x509.Name) -> str:
    return f'"{name.rfc4514_string()}"'


def instant(moment: datetime) -> str:
    """``moment`` as the refusals write it: UTC, to the second (``2026-01-02T10:00:00Z``)."""
    return utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")
