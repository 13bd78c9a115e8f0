"""The embedded default's self-signed test PKI, shaped like the network's: a root CA, an Access
Point CA and an SMP CA under it, an AP certificate whose CN is the Seat ID and an SMP certificate.

``ensure_test_pki`` creates it once under ``<data_dir>/pki/`` and loads it on every later call.
Creation is atomic: everything is built in ``<data_dir>/pki.tmp-<random>`` and renamed into
place, so of two processes starting at once one wins and the other uses the winner's files.
``issue_leaf`` and ``new_ca`` make further certificates for tests (expired, not yet valid,
signed by an untrusted CA, naming CRL distribution points or an OCSP responder), ``sign_crl``
revocation lists, ``issue_ocsp_signer`` delegated OCSP responder certificates and
``sign_ocsp`` the answers of an OCSP responder. Its folder and files are 0700 and 0600: it
holds private keys.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar

import attrs
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509 import ocsp
from cryptography.x509.oid import AuthorityInformationAccessOID, ExtendedKeyUsageOID, NameOID

from fourcorner.adapters.private import FILE_MODE, make_dirs
from fourcorner.domain.clock import utc

Clock = Callable[[], datetime]
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey

ROOT_CA_NAME = "fourcorner TEST ROOT CA"
AP_CA_NAME = "fourcorner TEST ACCESS POINT CA"
SMP_CA_NAME = "fourcorner TEST SERVICE METADATA PUBLISHER CA"
SMP_NAME = "fourcorner TEST SMP"
ORGANISATION = "fourcorner"

SEAT_ID = re.compile(r"P[A-Z]{2}[0-9]{6}")
BACKDATE = timedelta(minutes=5)
CA_YEARS = 10
LEAF_YEARS = 2
RSA_BITS = 2048

PKI_DIR = "pki"
ROOT_CERT, ROOT_KEY = "root-ca.pem", "root-ca.key"
AP_CA_CERT, AP_CA_KEY = "ap-ca.pem", "ap-ca.key"
SMP_CA_CERT, SMP_CA_KEY = "smp-ca.pem", "smp-ca.key"
AP_CERT, AP_KEY = "ap.pem", "ap.key"
SMP_CERT, SMP_KEY = "smp.pem", "smp.key"
AP_CHAIN, SMP_CHAIN = "ap-chain.pem", "smp-chain.pem"
# the files ``load_test_pki`` reads, the operator's certificates first
PKI_FILES = (
    AP_CERT,
    SMP_CERT,
    AP_KEY,
    SMP_KEY,
    ROOT_CERT,
    ROOT_KEY,
    AP_CA_CERT,
    AP_CA_KEY,
    SMP_CA_CERT,
    SMP_CA_KEY,
)


# --- issuing --------------------------------------------------------------------------------


def new_rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)


def add_years(moment: datetime, years: int) -> datetime:
    """The same day and time ``years`` later (29 February becomes 28 February)."""
    try:
        return moment.replace(year=moment.year + years)
    except ValueError:
        return moment.replace(year=moment.year + years, day=28)


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANISATION),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def issued_by_test_ca(cert: x509.Certificate) -> bool:
    """Whether ``cert`` names an embedded test PKI's AP CA or SMP CA as its issuer (of this
    data dir's PKI or of any other: they all carry the same names)."""
    return cert.issuer in (_name(AP_CA_NAME), _name(SMP_CA_NAME))


def _authority_key_id(
    issuer_cert: x509.Certificate | None, issuer_key: PrivateKey
) -> x509.AuthorityKeyIdentifier:
    if issuer_cert is not None:
        with contextlib.suppress(x509.ExtensionNotFound):
            ski = issuer_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
            return x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski.value)
    return x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key())


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not ca,
        content_commitment=False,
        key_encipherment=not ca,
        data_encipherment=not ca,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _build(
    subject: x509.Name,
    key: PrivateKey,
    issuer_cert: x509.Certificate | None,
    issuer_key: PrivateKey,
    *,
    not_before: datetime,
    not_after: datetime,
    ca: bool,
    path_length: int | None,
    crl_urls: Sequence[str] = (),
    ocsp_url: str | Sequence[str] | None = None,
    usages: Sequence[x509.ObjectIdentifier] = (),
    extensions: Sequence[x509.ExtensionType] = (),
) -> x509.Certificate:
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_cert.subject if issuer_cert is not None else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(utc(not_before))
        .not_valid_after(utc(not_after))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=path_length), critical=True)
        .add_extension(_key_usage(ca=ca), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(_authority_key_id(issuer_cert, issuer_key), critical=False)
    )
    if crl_urls:
        point = x509.DistributionPoint(
            full_name=[x509.UniformResourceIdentifier(url) for url in crl_urls],
            relative_name=None,
            reasons=None,
            crl_issuer=None,
        )
        builder = builder.add_extension(x509.CRLDistributionPoints([point]), critical=False)
    ocsp_urls = [ocsp_url] if isinstance(ocsp_url, str) else list(ocsp_url or ())
    if ocsp_urls:
        responders = [
            x509.AccessDescription(
                AuthorityInformationAccessOID.OCSP, x509.UniformResourceIdentifier(url)
            )
            for url in ocsp_urls
        ]
        builder = builder.add_extension(x509.AuthorityInformationAccess(responders), critical=False)
    if usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(list(usages)), critical=False)
    for extension in extensions:
        builder = builder.add_extension(extension, critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def issue_leaf(
    issuer_cert: x509.Certificate,
    issuer_key: PrivateKey,
    common_name: str,
    *,
    not_before: datetime,
    not_after: datetime,
    key: PrivateKey | None = None,
    crl_urls: Sequence[str] = (),
    ocsp_url: str | Sequence[str] | None = None,
    usages: Sequence[x509.ObjectIdentifier] = (),
    extensions: Sequence[x509.ExtensionType] = (),
) -> tuple[x509.Certificate, PrivateKey]:
    """An end-entity certificate for ``common_name`` signed by the given CA, valid in exactly
    the given window (past or future windows make expired or not-yet-valid certificates),
    naming ``crl_urls`` as one CRL distribution point, ``ocsp_url`` as its OCSP responder (or
    responders, in that order),
    ``usages`` as its extended key usages, and carrying ``extensions`` (non-critical). Without
    ``key`` a new RSA 2048 key is generated."""
    leaf_key: PrivateKey = key if key is not None else new_rsa_key()
    cert = _build(
        _name(common_name),
        leaf_key,
        issuer_cert,
        issuer_key,
        not_before=not_before,
        not_after=not_after,
        ca=False,
        path_length=None,
        crl_urls=crl_urls,
        ocsp_url=ocsp_url,
        usages=usages,
        extensions=extensions,
    )
    return cert, leaf_key


def issue_ocsp_signer(
    issuer_cert: x509.Certificate,
    issuer_key: PrivateKey,
    common_name: str,
    *,
    not_before: datetime,
    not_after: datetime,
    key: PrivateKey | None = None,
    ocsp_signing: bool = True,
    no_check: bool = False,
    crl_urls: Sequence[str] = (),
    ocsp_url: str | None = None,
) -> tuple[x509.Certificate, PrivateKey]:
    """A delegated OCSP responder certificate the CA issues: ``issue_leaf`` with the
    id-kp-OCSPSigning extended key usage (without it, when not ``ocsp_signing``: one a
    checker must refuse), and with id-pkix-ocsp-nocheck when ``no_check`` (its own
    revocation is not to be checked); ``crl_urls`` and ``ocsp_url`` say where it is."""
    usages = [ExtendedKeyUsageOID.OCSP_SIGNING if ocsp_signing else ExtendedKeyUsageOID.CLIENT_AUTH]
    return issue_leaf(
        issuer_cert,
        issuer_key,
        common_name,
        not_before=not_before,
        not_after=not_after,
        key=key,
        usages=usages,
        extensions=[x509.OCSPNoCheck()] if no_check else [],
        crl_urls=crl_urls,
        ocsp_url=ocsp_url,
    )


def sign_ocsp(
    asked: ocsp.OCSPRequest,
    signer_cert: x509.Certificate,
    signer_key: PrivateKey,
    *,
    this_update: datetime,
    next_update: datetime | None,
    revoked_on: datetime | None = None,
    unknown: bool = False,
    serial: int | None = None,
    delegated: bool = False,
    by_name: bool = False,
    nonce: bytes | None = None,
) -> ocsp.OCSPResponse:
    """A responder's successful answer to ``asked`` (its CertID; ``serial``: another serial
    number's), signed by ``signer_cert``'s key: good, revoked since ``revoked_on``, or
    ``unknown``. ``delegated`` carries ``signer_cert`` in the answer, as a delegated
    responder does, named by its key's hash (``by_name``: by its subject); ``nonce`` is put in
    it as a responder echoes one."""
    if unknown:
        status = ocsp.OCSPCertStatus.UNKNOWN
    elif revoked_on is not None:
        status = ocsp.OCSPCertStatus.REVOKED
    else:
        status = ocsp.OCSPCertStatus.GOOD
    builder = ocsp.OCSPResponseBuilder().add_response_by_hash(
        issuer_name_hash=asked.issuer_name_hash,
        issuer_key_hash=asked.issuer_key_hash,
        serial_number=asked.serial_number if serial is None else serial,
        algorithm=asked.hash_algorithm,
        cert_status=status,
        this_update=utc(this_update),
        next_update=None if next_update is None else utc(next_update),
        revocation_time=None if revoked_on is None else utc(revoked_on),
        revocation_reason=None,
    )
    encoding = ocsp.OCSPResponderEncoding.NAME if by_name else ocsp.OCSPResponderEncoding.HASH
    builder = builder.responder_id(encoding, signer_cert)
    if delegated:
        builder = builder.certificates([signer_cert])
    if nonce is not None:
        builder = builder.add_extension(x509.OCSPNonce(nonce), critical=False)
    return builder.sign(signer_key, hashes.SHA256())


def sign_crl(
    issuer_cert: x509.Certificate,
    issuer_key: PrivateKey,
    revoked: Mapping[int, datetime],
    *,
    this_update: datetime,
    next_update: datetime | None,
    issuer_name: x509.Name | None = None,
) -> x509.CertificateRevocationList:
    """The CA's revocation list revoking the serial numbers of ``revoked``, each on its date,
    issued at ``this_update`` and due again at ``next_update`` (None: naming no nextUpdate).
    ``issuer_name`` (default: the CA's subject) and a key other than the CA's make lists a
    checker must refuse."""
    builder = (
        x509.CertificateRevocationListBuilder()
        .issuer_name(issuer_name if issuer_name is not None else issuer_cert.subject)
        .last_update(utc(this_update))
        .add_extension(_authority_key_id(issuer_cert, issuer_key), critical=False)
        .add_extension(x509.CRLNumber(int(utc(this_update).timestamp())), critical=False)
    )
    # cryptography builds no list without a nextUpdate: one is made with it, then taken out
    builder = builder.next_update(utc(next_update if next_update is not None else this_update))
    for serial, when in revoked.items():
        entry = x509.RevokedCertificateBuilder().serial_number(serial).revocation_date(utc(when))
        builder = builder.add_revoked_certificate(entry.build())
    crl = builder.sign(issuer_key, hashes.SHA256())
    return crl if next_update is not None else _without_next_update(crl, issuer_key)


def _without_next_update(
    crl: x509.CertificateRevocationList, key: PrivateKey
) -> x509.CertificateRevocationList:
    """``crl`` signed again by ``key`` without its nextUpdate (RFC 5280 §5.1: it is
    optional in the format)."""
    fields = _der_items(_der_items(crl.tbs_certlist_bytes)[0][1])
    times = [i for i, (tag, _) in enumerate(fields) if tag in (0x17, 0x18)]
    del fields[times[1]]  # thisUpdate, then nextUpdate
    tbs = _der(0x30, b"".join(_der(tag, value) for tag, value in fields))
    if isinstance(key, rsa.RSAPrivateKey):
        signature = key.sign(tbs, padding.PKCS1v15(), hashes.SHA256())
    else:
        signature = key.sign(tbs, ec.ECDSA(hashes.SHA256()))
    outer = _der_items(_der_items(crl.public_bytes(serialization.Encoding.DER))[0][1])
    algorithm = _der(*outer[1])
    return x509.load_der_x509_crl(_der(0x30, tbs + algorithm + _der(0x03, b"\x00" + signature)))


def _der(tag: int, value: bytes) -> bytes:
    size = len(value)
    if size < 0x80:
        return bytes([tag, size]) + value
    length = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(length)]) + length + value


def _der_items(data: bytes) -> list[tuple[int, bytes]]:
    """The (tag, value) items of ``data``, DER of single-byte tags, one after the other."""
    items, at = [], 0
    while at < len(data):
        tag, size, at = data[at], data[at + 1], at + 2
        if size & 0x80:
            count = size & 0x7F
            size, at = int.from_bytes(data[at : at + count], "big"), at + count
        items.append((tag, data[at : at + size]))
        at += size
    return items


def current_leaf_pem(
    issuer_cert: x509.Certificate,
    issuer_key: PrivateKey,
    common_name: str,
    *,
    days: float,
    now: datetime | None = None,
) -> tuple[str, str]:
    """``issue_leaf`` valid from five minutes before ``now`` (default: the clock's now; the
    window ``new_ca`` starts at too) for ``days``, as PEM certificate and key."""
    start = now if now is not None else datetime.now(UTC)
    cert, key = issue_leaf(
        issuer_cert,
        issuer_key,
        common_name,
        not_before=start - BACKDATE,
        not_after=start + timedelta(days=days),
    )
    return cert_pem(cert), key_pem(key)


def new_ca(
    common_name: str,
    *,
    not_before: datetime | None = None,
    not_after: datetime | None = None,
    issuer_cert: x509.Certificate | None = None,
    issuer_key: PrivateKey | None = None,
    key: PrivateKey | None = None,
    path_length: int | None = None,
) -> tuple[x509.Certificate, PrivateKey]:
    """A CA certificate: self-signed (a root nobody trusts unless told) without an issuer, else
    an intermediate signed by ``issuer_cert``/``issuer_key``. The window defaults to five
    minutes ago until ten years from now; without ``key`` a new RSA 2048 key is generated."""
    if (issuer_cert is None) != (issuer_key is None):
        raise ValueError("give both issuer_cert and issuer_key, or neither")
    now = datetime.now(UTC)
    ca_key: PrivateKey = key if key is not None else new_rsa_key()
    cert = _build(
        _name(common_name),
        ca_key,
        issuer_cert,
        issuer_key if issuer_key is not None else ca_key,
        not_before=not_before if not_before is not None else now - BACKDATE,
        not_after=not_after if not_after is not None else add_years(now, CA_YEARS),
        ca=True,
        path_length=path_length,
    )
    return cert, ca_key


# --- the stored PKI -------------------------------------------------------------------------


def cert_pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def key_pem(key: PrivateKey) -> str:
    """PKCS#8, unencrypted."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode("ascii")


@attrs.frozen
class TestPki:
    """The test PKI in ``directory`` (``<data_dir>/pki``), loaded."""

    __test__: ClassVar[bool] = False  # not a pytest test class, despite its name

    directory: Path
    root: x509.Certificate
    root_key: rsa.RSAPrivateKey
    ap_ca: x509.Certificate
    ap_ca_key: rsa.RSAPrivateKey
    smp_ca: x509.Certificate
    smp_ca_key: rsa.RSAPrivateKey
    ap_certificate: x509.Certificate
    ap_key: rsa.RSAPrivateKey
    smp_certificate: x509.Certificate
    smp_key: rsa.RSAPrivateKey

    @property
    def seat_id(self) -> str:
        """The AP certificate's CN (the seat id it was created with)."""
        cns = self.ap_certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        return str(cns[0].value)

    @property
    def trust_anchors(self) -> list[x509.Certificate]:
        return [self.root]

    @property
    def ap_chain_pem(self) -> str:
        """The AP CA, then the root."""
        return cert_pem(self.ap_ca) + cert_pem(self.root)

    @property
    def smp_chain_pem(self) -> str:
        """The SMP CA, then the root."""
        return cert_pem(self.smp_ca) + cert_pem(self.root)

    @property
    def ap_certificate_pem(self) -> str:
        return cert_pem(self.ap_certificate)

    @property
    def ap_key_pem(self) -> str:
        return key_pem(self.ap_key)

    @property
    def smp_certificate_pem(self) -> str:
        return cert_pem(self.smp_certificate)

    @property
    def smp_key_pem(self) -> str:
        return key_pem(self.smp_key)

    def path(self, filename: str) -> Path:
        """A file of the PKI, e.g. ``pki.path(AP_CERT)``."""
        return self.directory / filename


def ensure_test_pki(
    data_dir: Path, *, seat_id: str = "PFC000001", clock: Clock | None = None
) -> TestPki:
    """The test PKI under ``<data_dir>/pki``, created first if absent.

    An existing PKI is loaded as it is, whatever ``seat_id`` this call names (its AP
    certificate keeps the seat id it was created with; see ``TestPki.seat_id``).
    """
    if not SEAT_ID.fullmatch(seat_id):
        raise ValueError(f"seat id {seat_id!r} does not match P[A-Z]{{2}}[0-9]{{6}}")
    data_dir = Path(data_dir)
    final = data_dir / PKI_DIR
    if not final.exists():
        make_dirs(data_dir)
        now = utc(clock()) if clock is not None else datetime.now(UTC)
        tmp = Path(tempfile.mkdtemp(prefix=f"{PKI_DIR}.tmp-", dir=data_dir))
        try:
            _create(tmp, seat_id, now)
            try:
                os.rename(tmp, final)
            except OSError:
                if not final.is_dir():
                    raise
            else:
                _fsync_dir(data_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return load_test_pki(final)


def load_test_pki(directory: Path) -> TestPki:
    """Load a PKI that ``ensure_test_pki`` created."""

    def cert(name: str) -> x509.Certificate:
        return x509.load_pem_x509_certificate(_read(directory, name))

    def key(name: str) -> rsa.RSAPrivateKey:
        # Keys this module generated itself: skip the (slow) RSA consistency check.
        loaded = serialization.load_pem_private_key(
            _read(directory, name), password=None, unsafe_skip_rsa_key_validation=True
        )
        if not isinstance(loaded, rsa.RSAPrivateKey):
            raise ValueError(f"{directory / name} does not hold an RSA private key")
        return loaded

    return TestPki(
        directory=directory,
        root=cert(ROOT_CERT),
        root_key=key(ROOT_KEY),
        ap_ca=cert(AP_CA_CERT),
        ap_ca_key=key(AP_CA_KEY),
        smp_ca=cert(SMP_CA_CERT),
        smp_ca_key=key(SMP_CA_KEY),
        ap_certificate=cert(AP_CERT),
        ap_key=key(AP_KEY),
        smp_certificate=cert(SMP_CERT),
        smp_key=key(SMP_KEY),
    )


def _read(directory: Path, name: str) -> bytes:
    try:
        return (directory / name).read_bytes()
    except FileNotFoundError:
        raise ValueError(
            f"the test PKI in {directory} is incomplete ({name} is missing); "
            "delete the directory to have it created again"
        ) from None


def _create(directory: Path, seat_id: str, now: datetime) -> None:
    start = now - BACKDATE
    ca_end, leaf_end = add_years(now, CA_YEARS), add_years(now, LEAF_YEARS)
    root_key = new_rsa_key()
    root = _build(
        _name(ROOT_CA_NAME),
        root_key,
        None,
        root_key,
        not_before=start,
        not_after=ca_end,
        ca=True,
        path_length=None,
    )
    written: dict[str, x509.Certificate] = {ROOT_CERT: root}
    _write_key(directory / ROOT_KEY, root_key)
    for ca_file, ca_key_file, ca_name, leaf_file, leaf_key_file, leaf_name, chain_file in (
        (AP_CA_CERT, AP_CA_KEY, AP_CA_NAME, AP_CERT, AP_KEY, seat_id, AP_CHAIN),
        (SMP_CA_CERT, SMP_CA_KEY, SMP_CA_NAME, SMP_CERT, SMP_KEY, SMP_NAME, SMP_CHAIN),
    ):
        ca_key = new_rsa_key()
        ca = _build(
            _name(ca_name),
            ca_key,
            root,
            root_key,
            not_before=start,
            not_after=ca_end,
            ca=True,
            path_length=0,
        )
        leaf, leaf_key = issue_leaf(ca, ca_key, leaf_name, not_before=start, not_after=leaf_end)
        written[ca_file], written[leaf_file] = ca, leaf
        _write_key(directory / ca_key_file, ca_key)
        _write_key(directory / leaf_key_file, leaf_key)
        _write(directory / chain_file, (cert_pem(ca) + cert_pem(root)).encode("ascii"), FILE_MODE)
    for filename, cert in written.items():
        _write(directory / filename, cert_pem(cert).encode("ascii"), FILE_MODE)


def _write_key(path: Path, key: PrivateKey) -> None:
    _write(path, key_pem(key).encode("ascii"), FILE_MODE)


def _write(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as file:
        os.fchmod(fd, mode)
        file.write(data)
        file.flush()
        os.fsync(fd)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
