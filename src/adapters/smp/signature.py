"""Enveloped XML-DSig over a whole document, as SMP 1.x signs its SignedServiceMetadata.

The signature is one ``ds:Signature``, the last child of the root, with a single
``Reference URI=""`` (transforms: enveloped-signature, optionally then a canonicalisation),
SHA-256 digests, RSA-SHA256 and the signing certificate in ``KeyInfo/X509Data``. Signing uses
inclusive C14N and the enveloped-signature transform alone, as phoss-SMP does since SMP 1.2.0;
verification also accepts exclusive C14N, both as the ``CanonicalizationMethod`` and as the
reference's transform.

Only lxml and cryptography are used. Never re-indent or pretty-print a signed tree: whitespace
is part of what is signed.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import hmac
from collections.abc import Sequence

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from lxml import etree

DS = "http://www.w3.org/2000/09/xmldsig#"
EC = "http://www.w3.org/2001/10/xml-exc-c14n#"  # namespace of InclusiveNamespaces

ENVELOPED = "http://www.w3.org/2000/09/xmldsig#enveloped-signature"
EXCLUSIVE_C14N = "http://www.w3.org/2001/10/xml-exc-c14n#"
INCLUSIVE_C14N = "http://www.w3.org/TR/2001/REC-xml-c14n-20010315"
SHA256 = "http://www.w3.org/2001/04/xmlenc#sha256"
RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"

_C14N_EXCLUSIVE: dict[str, bool] = {EXCLUSIVE_C14N: True, INCLUSIVE_C14N: False}
_DIGESTS = {
    SHA256: hashlib.sha256,
    "http://www.w3.org/2001/04/xmldsig-more#sha384": hashlib.sha384,
    "http://www.w3.org/2001/04/xmlenc#sha512": hashlib.sha512,
}
_SIGNATURE_HASHES: dict[str, type[hashes.HashAlgorithm]] = {
    RSA_SHA256: hashes.SHA256,
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha384": hashes.SHA384,
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512": hashes.SHA512,
}


class SignatureError(Exception):
    """The document's signature is missing, malformed, wrong or made by an untrusted key."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _ds(name: str) -> str:
    return f"{{{DS}}}{name}"


def _canonical(
    node: etree._Element | etree._ElementTree, exclusive: bool, prefixes: Sequence[str] = ()
) -> bytes:
    canonical: bytes = etree.tostring(
        node,
        method="c14n",
        exclusive=exclusive,
        with_comments=False,
        inclusive_ns_prefixes=list(prefixes) if exclusive and prefixes else None,
    )
    return canonical


def _remove_keeping_tail(element: etree._Element) -> None:
    """Remove ``element`` from its parent; the text after it stays (lxml would drop it)."""
    parent = element.getparent()
    if parent is None:
        raise ValueError("cannot remove the root element")
    tail = element.tail
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)


def _document_digest(
    root: etree._Element, exclusive: bool, prefixes: Sequence[str], hash_name: str
) -> bytes:
    """The digest of the whole document holding ``root``, with its ``ds:Signature`` child
    (if any) removed: the enveloped-signature transform, then canonicalisation."""
    tree = copy.deepcopy(root.getroottree())
    copied = tree.getroot()
    for signature in copied.findall(_ds("Signature")):
        _remove_keeping_tail(signature)
    return _DIGESTS[hash_name](_canonical(tree, exclusive, prefixes)).digest()


def sign_enveloped(
    root: etree._Element, key: rsa.RSAPrivateKey, certificate: x509.Certificate
) -> None:
    """Append an enveloped ``ds:Signature`` over the whole document as the last child of
    ``root`` (which must be the document element and must not be signed already)."""
    if root.getparent() is not None:
        raise ValueError("an enveloped signature over the document signs its root element")
    if root.find(_ds("Signature")) is not None:
        raise ValueError("the document is already signed")
    digest = _document_digest(root, False, (), SHA256)

    signature = etree.SubElement(root, _ds("Signature"), nsmap={"ds": DS})
    signed_info = etree.SubElement(signature, _ds("SignedInfo"))
    etree.SubElement(signed_info, _ds("CanonicalizationMethod"), Algorithm=INCLUSIVE_C14N)
    etree.SubElement(signed_info, _ds("SignatureMethod"), Algorithm=RSA_SHA256)
    reference = etree.SubElement(signed_info, _ds("Reference"), URI="")
    transforms = etree.SubElement(reference, _ds("Transforms"))
    etree.SubElement(transforms, _ds("Transform"), Algorithm=ENVELOPED)
    etree.SubElement(reference, _ds("DigestMethod"), Algorithm=SHA256)
    etree.SubElement(reference, _ds("DigestValue")).text = base64.b64encode(digest).decode()

    value = key.sign(_canonical(signed_info, False), padding.PKCS1v15(), hashes.SHA256())
    etree.SubElement(signature, _ds("SignatureValue")).text = base64.b64encode(value).decode()
    key_info = etree.SubElement(signature, _ds("KeyInfo"))
    x509_data = etree.SubElement(key_info, _ds("X509Data"))
    etree.SubElement(x509_data, _ds("X509SubjectName")).text = certificate.subject.rfc4514_string()
    der = certificate.public_bytes(serialization.Encoding.DER)
    etree.SubElement(x509_data, _ds("X509Certificate")).text = base64.b64encode(der).decode()


# --- verification ----------------------------------------------------------------------------


def _one(parent: etree._Element, name: str) -> etree._Element:
    found = parent.findall(_ds(name))
    if len(found) != 1:
        raise SignatureError(
            f"expected exactly one ds:{name} in ds:{etree.QName(parent).localname}"
        )
    return found[0]


def _text(element: etree._Element) -> str:
    return "".join(element.itertext())


def _b64(element: etree._Element, what: str) -> bytes:
    try:
        return base64.b64decode("".join(_text(element).split()), validate=True)
    except (binascii.Error, ValueError) as e:
        raise SignatureError(f"the {what} is not valid base64") from e


def _c14n_method(element: etree._Element) -> tuple[bool, list[str]]:
    """``(exclusive, inclusive prefixes)`` of a CanonicalizationMethod or Transform."""
    algorithm = element.get("Algorithm", "")
    if algorithm not in _C14N_EXCLUSIVE:
        raise SignatureError(f"canonicalisation {algorithm!r} is not accepted")
    exclusive = _C14N_EXCLUSIVE[algorithm]
    prefixes: list[str] = []
    if exclusive:
        for inclusive in element.findall(f"{{{EC}}}InclusiveNamespaces"):
            prefixes.extend(inclusive.get("PrefixList", "").split())
    return exclusive, prefixes


def _reference_canonicalisation(reference: etree._Element) -> tuple[bool, list[str]]:
    transforms = reference.findall(_ds("Transforms"))
    if len(transforms) != 1:
        raise SignatureError("the reference has no transforms; the signature is not enveloped")
    steps = transforms[0].findall(_ds("Transform"))
    if not steps or steps[0].get("Algorithm") != ENVELOPED or len(steps) > 2:
        raise SignatureError(
            "the reference's transforms must be enveloped-signature, then canonicalisation"
        )
    if len(steps) == 1:
        return False, []  # a node-set becomes octets by inclusive C14N (XML-DSig 4.3.3.2)
    return _c14n_method(steps[1])


def _key_info_certificates(signature: etree._Element) -> list[tuple[bytes, x509.Certificate]]:
    certificates: list[tuple[bytes, x509.Certificate]] = []
    for element in signature.iterfind(
        f"{_ds('KeyInfo')}/{_ds('X509Data')}/{_ds('X509Certificate')}"
    ):
        der = _b64(element, "KeyInfo certificate")
        try:
            certificates.append((der, x509.load_der_x509_certificate(der)))
        except ValueError as e:
            raise SignatureError("the KeyInfo certificate cannot be read") from e
    if not certificates:
        raise SignatureError("the signature carries no X509Certificate in its KeyInfo")
    return certificates


def _signing_certificate(
    signature: etree._Element, trusted: Sequence[x509.Certificate] | None
) -> x509.Certificate:
    candidates = _key_info_certificates(signature)
    if trusted is None:
        return candidates[0][1]
    pinned = {c.public_bytes(serialization.Encoding.DER) for c in trusted}
    for der, certificate in candidates:
        if der in pinned:
            return certificate
    raise SignatureError("the signing certificate is not one of the trusted SMP certificates")


def verify_enveloped(
    root: etree._Element, trusted: Sequence[x509.Certificate] | None
) -> x509.Certificate:
    """Check the enveloped signature over the document of ``root``; return the signing
    certificate. With ``trusted``, the KeyInfo certificate must be byte-equal to one of them.
    Raises ``SignatureError`` otherwise. Certificate validity dates are the caller's to check.
    """
    signatures = root.findall(_ds("Signature"))
    if not signatures:
        raise SignatureError("the document is not signed")
    if len(signatures) > 1 or sum(1 for _ in root.iter(_ds("Signature"))) > 1:
        raise SignatureError("the document carries more than one signature")
    signature = signatures[0]

    signed_info = _one(signature, "SignedInfo")
    exclusive, prefixes = _c14n_method(_one(signed_info, "CanonicalizationMethod"))
    method = _one(signed_info, "SignatureMethod").get("Algorithm", "")
    if method not in _SIGNATURE_HASHES:
        raise SignatureError(f"signature method {method!r} is not accepted")
    reference = _one(signed_info, "Reference")
    if reference.get("URI") != "":
        raise SignatureError('the reference must cover the whole document (URI="")')
    digest_method = _one(reference, "DigestMethod").get("Algorithm", "")
    if digest_method not in _DIGESTS:
        raise SignatureError(f"digest method {digest_method!r} is not accepted")
    ref_exclusive, ref_prefixes = _reference_canonicalisation(reference)

    expected = _b64(_one(reference, "DigestValue"), "DigestValue")
    actual = _document_digest(root, ref_exclusive, ref_prefixes, digest_method)
    if not hmac.compare_digest(expected, actual):
        raise SignatureError("the digest does not match: the document was altered")

    certificate = _signing_certificate(signature, trusted)
    public_key = certificate.public_key()
    if not isinstance(public_key, rsa.RSAPublicKey):
        raise SignatureError("the signing certificate does not hold an RSA key")
    value = _b64(_one(signature, "SignatureValue"), "SignatureValue")
    try:
        public_key.verify(
            value,
            _canonical(signed_info, exclusive, prefixes),
            padding.PKCS1v15(),
            _SIGNATURE_HASHES[method](),
        )
    except InvalidSignature as e:
        raise SignatureError("the signature value does not verify") from e
    return certificate
