"""WS-Security signatures as the profile uses them (NETWORK.md §4 "ds:Signature"): detached,
exclusive C14N, RSA-SHA256, SHA-256 references to elements (``#id``) and to attachments
(``cid:``, SwA Attachment-Content-Signature-Transform), KeyInfo a SecurityTokenReference to a
BinarySecurityToken.

``verify`` checks the SignatureValue and every same-document digest; attachment digests are
returned to be checked once the attachments are decrypted. Which elements the signature must
cover is the caller's business (``covers``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Iterable, Mapping, Sequence

import attrs
from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from fourcorner.adapters.as4.constants import (
    ATTACHMENT_CONTENT_SIGNATURE,
    BASE64_BINARY,
    DS,
    EC,
    EXC_C14N,
    RSA_SHA256,
    SHA256,
    WSSE,
    WSU_ID,
    X509V3,
    q,
)
from fourcorner.adapters.as4.errors import FAILED_AUTHENTICATION, POLICY_NONCOMPLIANCE, As4Error
from fourcorner.adapters.as4.mime import cid_of
from fourcorner.adapters.as4.model import SignedReference
from fourcorner.adapters.as4.xml import Element, attribute, c14n, children, one, sub, text
from fourcorner.domain.text import quoted

SIGNATURE_ID = "id-signature"
KEY_INFO_ID = "id-keyinfo"
TOKEN_REFERENCE_ID = "id-str"  # noqa: S105 (an element id)

_TRANSFORMS = q(DS, "Transforms")
_DIGEST_METHOD = q(DS, "DigestMethod")
_DIGEST_VALUE = q(DS, "DigestValue")
_AUTH = FAILED_AUTHENTICATION
_POLICY = POLICY_NONCOMPLIANCE


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _b64decode(value: str, what: str, code: str = _AUTH) -> bytes:
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError) as e:
        raise As4Error.of(code, f"the {what} is not base64") from e


# --- building ------------------------------------------------------------------------------


def element_reference(element: Element) -> SignedReference:
    """The reference to ``element`` by its ``wsu:Id``, digested after exclusive C14N."""
    digest = hashlib.sha256(c14n(element)).digest()
    return SignedReference(f"#{element.get(WSU_ID)}", (EXC_C14N,), SHA256, _b64(digest))


def attachment_reference(cid: str, content: bytes) -> SignedReference:
    """The reference to an attachment's bytes (the gzip stream, before encryption)."""
    digest = hashlib.sha256(content).digest()
    return SignedReference(f"cid:{cid}", (ATTACHMENT_CONTENT_SIGNATURE,), SHA256, _b64(digest))


def append_token(security: Element, token_id: str, certificate: x509.Certificate) -> Element:
    """A BinarySecurityToken (X509v3, base64 DER) holding ``certificate``."""
    der = certificate.public_bytes(serialization.Encoding.DER)
    attrib = {"EncodingType": BASE64_BINARY, "ValueType": X509V3, WSU_ID: token_id}
    return sub(security, q(WSSE, "BinarySecurityToken"), _b64(der), attrib)


def append_token_reference(parent: Element, token_id: str) -> Element:
    """``ds:KeyInfo``'s ``wsse:SecurityTokenReference`` to the token ``token_id``."""
    reference = sub(parent, q(WSSE, "SecurityTokenReference"))
    sub(reference, q(WSSE, "Reference"), None, {"URI": f"#{token_id}", "ValueType": X509V3})
    return reference


def append_signature(
    security: Element,
    references: Sequence[SignedReference],
    key: rsa.RSAPrivateKey,
    token_id: str,
) -> Element:
    """Sign ``references`` with ``key`` and append the ds:Signature to ``security``."""
    signature = sub(security, q(DS, "Signature"), None, {"Id": SIGNATURE_ID})
    signed_info = sub(signature, q(DS, "SignedInfo"))
    sub(signed_info, q(DS, "CanonicalizationMethod"), None, {"Algorithm": EXC_C14N})
    sub(signed_info, q(DS, "SignatureMethod"), None, {"Algorithm": RSA_SHA256})
    for reference in references:
        element = sub(signed_info, q(DS, "Reference"), None, {"URI": reference.uri})
        transforms = sub(element, q(DS, "Transforms"))
        for algorithm in reference.transforms:
            sub(transforms, q(DS, "Transform"), None, {"Algorithm": algorithm})
        sub(element, q(DS, "DigestMethod"), None, {"Algorithm": reference.digest_method})
        sub(element, q(DS, "DigestValue"), reference.digest_value)
    value = key.sign(c14n(signed_info), padding.PKCS1v15(), hashes.SHA256())
    sub(signature, q(DS, "SignatureValue"), _b64(value))
    key_info = sub(signature, q(DS, "KeyInfo"), None, {"Id": KEY_INFO_ID})
    append_token_reference(key_info, token_id).set(WSU_ID, TOKEN_REFERENCE_ID)
    return signature


# --- reading -------------------------------------------------------------------------------


@attrs.frozen
class VerifiedSignature:
    """A signature whose value and same-document digests are correct."""

    certificate: x509.Certificate
    targets: tuple[Element, ...]
    """The elements the same-document references point to (compare by identity)."""
    attachment_digests: dict[str, bytes]
    """Content-ID → SHA-256 the signer computed over that attachment's bytes."""
    references: tuple[SignedReference, ...]
    reference_elements: tuple[Element, ...]

    def covers(self, element: Element) -> bool:
        return any(target is element for target in self.targets)


def token_certificate(
    key_info_parent: Element, security: Element, ids: Mapping[str, Element], code: str
) -> x509.Certificate:
    """The certificate of the BinarySecurityToken that ``key_info_parent``'s
    ``ds:KeyInfo/wsse:SecurityTokenReference/wsse:Reference`` points to."""
    key_info = one(key_info_parent, q(DS, "KeyInfo"), code)
    token_reference = one(key_info, q(WSSE, "SecurityTokenReference"), _POLICY)
    uri = attribute(one(token_reference, q(WSSE, "Reference"), _POLICY), "URI", _POLICY)
    token = ids.get(uri.removeprefix("#")) if uri.startswith("#") else None
    if token is None or token.tag != q(WSSE, "BinarySecurityToken"):
        raise As4Error.of(code, f"the security token {quoted(uri)} is not in the message")
    if token.getparent() is not security:
        raise As4Error.of(code, "the security token is outside the Security header")
    if token.get("ValueType") != X509V3:
        raise As4Error.of(_POLICY, "the security token is not an X509v3 certificate")
    if token.get("EncodingType", BASE64_BINARY) != BASE64_BINARY:
        raise As4Error.of(_POLICY, "the security token is not Base64Binary")
    der = _b64decode(text(token, code), "security token", code)
    try:
        return x509.load_der_x509_certificate(der)
    except ValueError as e:
        raise As4Error.of(code, "the security token is not a certificate") from e


def verify(
    security: Element,
    ids: Mapping[str, Element],
    expected_certificate: x509.Certificate | None = None,
) -> VerifiedSignature:
    """Check the one ds:Signature of ``security``: ``EBMS:0103`` if it is missing or uses
    other algorithms, ``EBMS:0101`` if it does not verify (or, given ``expected_certificate``,
    was made with another certificate)."""
    signatures = children(security, q(DS, "Signature"))
    if len(signatures) != 1:
        problem = "is not signed" if not signatures else "has more than one signature"
        raise As4Error.of(_POLICY, f"the message {problem}")
    signature = signatures[0]
    signed_info = one(signature, q(DS, "SignedInfo"), _AUTH)
    method = one(signed_info, q(DS, "CanonicalizationMethod"), _AUTH)
    if method.get("Algorithm") != EXC_C14N:
        raise As4Error.of(_POLICY, "the signature's canonicalisation is not exclusive C14N")
    if one(signed_info, q(DS, "SignatureMethod"), _AUTH).get("Algorithm") != RSA_SHA256:
        raise As4Error.of(_POLICY, "the signature algorithm is not rsa-sha256")
    reference_elements = children(signed_info, q(DS, "Reference"))
    if not reference_elements:
        raise As4Error.of(_AUTH, "the signature has no references")
    value = _b64decode(text(one(signature, q(DS, "SignatureValue"), _AUTH)), "SignatureValue")
    certificate = token_certificate(signature, security, ids, _AUTH)
    if expected_certificate is not None and certificate != expected_certificate:
        raise As4Error.of(_AUTH, "the signature was made with another certificate")
    try:
        public_key = certificate.public_key()
    except (ValueError, UnsupportedAlgorithm) as e:
        raise As4Error.of(_POLICY, "the signing certificate's key cannot be used") from e
    if not isinstance(public_key, rsa.RSAPublicKey):
        raise As4Error.of(_POLICY, "the signing certificate does not hold an RSA key")
    try:
        public_key.verify(
            value, c14n(signed_info, _prefixes(method)), padding.PKCS1v15(), hashes.SHA256()
        )
    except InvalidSignature as e:
        raise As4Error.of(_AUTH, "the signature does not verify") from e
    targets: list[Element] = []
    attachment_digests: dict[str, bytes] = {}
    references: list[SignedReference] = []
    for element in reference_elements:
        reference, prefixes = _read_reference(element)
        references.append(reference)
        digest = _b64decode(reference.digest_value, "DigestValue")
        cid = cid_of(reference.uri)
        if cid is not None:
            if reference.transforms != (ATTACHMENT_CONTENT_SIGNATURE,):
                raise As4Error.of(
                    _POLICY, f"the reference {quoted(reference.uri)} has other transforms"
                )
            if cid in attachment_digests:
                raise As4Error.of(_AUTH, f"{quoted(reference.uri)} is referenced twice")
            attachment_digests[cid] = digest
            continue
        target = ids.get(reference.uri[1:]) if reference.uri.startswith("#") else None
        if target is None:
            raise As4Error.of(_AUTH, f"the reference {quoted(reference.uri)} points to nothing")
        if reference.transforms != (EXC_C14N,):
            raise As4Error.of(
                _POLICY, f"the reference {quoted(reference.uri)} has other transforms"
            )
        if not hmac.compare_digest(hashlib.sha256(c14n(target, prefixes)).digest(), digest):
            raise As4Error.of(_AUTH, f"the digest of {quoted(reference.uri)} does not match")
        targets.append(target)
    return VerifiedSignature(
        certificate,
        tuple(targets),
        attachment_digests,
        tuple(references),
        tuple(reference_elements),
    )


def check_attachment(verified: VerifiedSignature, cid: str, sha256: bytes) -> None:
    """``EBMS:0101`` unless ``sha256`` (the attachment's SHA-256 digest) is the one the signer
    signed for ``cid``."""
    expected = verified.attachment_digests.get(cid)
    if expected is None or not hmac.compare_digest(sha256, expected):
        raise As4Error.of(_AUTH, f"the digest of {quoted('cid:' + cid)} does not match")


def read_reference(element: Element, code: str = _AUTH) -> SignedReference:
    """The comparable fields of a ``ds:Reference`` element."""
    return _read_reference(element, code)[0]


def _read_reference(element: Element, code: str = _AUTH) -> tuple[SignedReference, list[str]]:
    uri = element.get("URI", "")
    transforms: list[str] = []
    prefixes: list[str] = []
    digest_method = digest_value = None
    for child in element:
        if child.tag == _TRANSFORMS and not transforms:
            for transform in _transforms(child):
                transforms.append(attribute(transform, "Algorithm", code))
                prefixes += _prefixes(transform)
        elif child.tag == _DIGEST_METHOD and digest_method is None:
            digest_method = attribute(child, "Algorithm", code)
        elif child.tag == _DIGEST_VALUE and digest_value is None:
            digest_value = "".join(text(child, code).split())
        elif isinstance(child.tag, str):
            raise As4Error.of(
                code, f"the reference {quoted(uri)} has an unexpected or repeated child"
            )
    if digest_method is None or digest_value is None:
        raise As4Error.of(code, f"the reference {quoted(uri)} has no digest")
    if digest_method != SHA256:
        raise As4Error.of(_POLICY, f"the digest algorithm of {quoted(uri)} is not SHA-256")
    return SignedReference(uri, tuple(transforms), digest_method, digest_value), prefixes


def _transforms(transforms: Element) -> Iterable[Element]:
    return children(transforms, q(DS, "Transform"))


def _prefixes(element: Element) -> list[str]:
    """The ``ec:InclusiveNamespaces/@PrefixList`` of a transform or canonicalisation method."""
    found: list[str] = []
    if not len(element):
        return found
    for inclusive in children(element, q(EC, "InclusiveNamespaces")):
        found += inclusive.get("PrefixList", "").split()
    return found
