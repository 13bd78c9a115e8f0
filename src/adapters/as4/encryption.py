"""Attachment encryption as the profile uses it (NETWORK.md §4 "xenc:EncryptedKey" and
"xenc:EncryptedData"): a fresh AES-128-GCM key per message, transported with RSA-OAEP (SHA-256
digest, MGF1-SHA256) to the receiver's certificate; the attachment becomes the 12-byte IV, the
ciphertext and the 16-byte tag (SwA Attachment-Content-Only).

Every way decryption can fail gives the same ``EBMS:0102`` detail, so a sender learns nothing
about which step failed.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable, Collection, Mapping

from cryptography import x509
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers import Cipher, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.ciphers.algorithms import AES

from fourcorner.adapters.as4.constants import (
    AES128_GCM,
    AES_KEY_BYTES,
    ATTACHMENT_CIPHERTEXT,
    ATTACHMENT_CONTENT_ONLY,
    DS,
    ENCRYPTED_KEY_TOKEN,
    GCM_IV_BYTES,
    GCM_TAG_BYTES,
    GZIP,
    MGF1_SHA256,
    RSA_OAEP,
    SHA256,
    WSSE,
    WSSE11,
    XENC,
    XENC11,
    q,
)
from fourcorner.adapters.as4.errors import FAILED_DECRYPTION, POLICY_NONCOMPLIANCE, As4Error
from fourcorner.adapters.as4.mime import cid_of
from fourcorner.adapters.as4.signature import append_token_reference, token_certificate
from fourcorner.adapters.as4.xml import Element, attribute, children, one, optional, sub, text
from fourcorner.domain.text import quoted

ENCRYPTED_KEY_ID = "id-encryptedkey"
ENCRYPTED_DATA_ID = "id-encrypteddata"
DECRYPT_CHUNK = 256 * 1024  # ciphertext opened at a time

_OAEP = padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None)
_DECRYPT = FAILED_DECRYPTION
_POLICY = POLICY_NONCOMPLIANCE
_UNDECRYPTABLE = "the payload could not be decrypted"


def encrypt_attachment(
    security: Element,
    *,
    content: bytes,
    cid: str,
    receiver_certificate: x509.Certificate,
    receiver_token_id: str,
) -> bytes:
    """Append the EncryptedKey and EncryptedData for attachment ``cid`` to ``security`` and
    return the attachment's encrypted bytes."""
    public_key = receiver_certificate.public_key()
    if not isinstance(public_key, rsa.RSAPublicKey):
        raise ValueError("the receiver's certificate does not hold an RSA key")
    key = AESGCM.generate_key(bit_length=AES_KEY_BYTES * 8)
    iv = os.urandom(GCM_IV_BYTES)
    encrypted = iv + AESGCM(key).encrypt(iv, content, None)
    wrapped = public_key.encrypt(key, _OAEP)

    encrypted_key = sub(security, q(XENC, "EncryptedKey"), None, {"Id": ENCRYPTED_KEY_ID})
    method = sub(encrypted_key, q(XENC, "EncryptionMethod"), None, {"Algorithm": RSA_OAEP})
    sub(method, q(DS, "DigestMethod"), None, {"Algorithm": SHA256})
    sub(method, q(XENC11, "MGF"), None, {"Algorithm": MGF1_SHA256})
    append_token_reference(sub(encrypted_key, q(DS, "KeyInfo")), receiver_token_id)
    cipher_data = sub(encrypted_key, q(XENC, "CipherData"))
    sub(cipher_data, q(XENC, "CipherValue"), base64.b64encode(wrapped).decode("ascii"))
    references = sub(encrypted_key, q(XENC, "ReferenceList"))
    sub(references, q(XENC, "DataReference"), None, {"URI": f"#{ENCRYPTED_DATA_ID}"})

    attrib = {"Id": ENCRYPTED_DATA_ID, "MimeType": GZIP, "Type": ATTACHMENT_CONTENT_ONLY}
    encrypted_data = sub(security, q(XENC, "EncryptedData"), None, attrib)
    sub(encrypted_data, q(XENC, "EncryptionMethod"), None, {"Algorithm": AES128_GCM})
    key_info = sub(encrypted_data, q(DS, "KeyInfo"))
    token_reference = sub(
        key_info,
        q(WSSE, "SecurityTokenReference"),
        None,
        {q(WSSE11, "TokenType"): ENCRYPTED_KEY_TOKEN},
    )
    sub(token_reference, q(WSSE, "Reference"), None, {"URI": f"#{ENCRYPTED_KEY_ID}"})
    cipher_data = sub(encrypted_data, q(XENC, "CipherData"))
    cipher_reference = sub(cipher_data, q(XENC, "CipherReference"), None, {"URI": f"cid:{cid}"})
    transforms = sub(cipher_reference, q(XENC, "Transforms"))
    sub(transforms, q(DS, "Transform"), None, {"Algorithm": ATTACHMENT_CIPHERTEXT})
    return encrypted


def attachment_keys(
    security: Element,
    ids: Mapping[str, Element],
    attachments: Collection[str],
    *,
    receiver_key: rsa.RSAPrivateKey,
    receiver_certificate: x509.Certificate,
) -> dict[str, bytes]:
    """Content-ID → AES key of every attachment the one EncryptedKey covers; each must be one
    of ``attachments`` (the message's Content-IDs). ``decrypt`` then opens them."""
    encrypted_keys = children(security, q(XENC, "EncryptedKey"))
    if len(encrypted_keys) != 1:
        problem = "is not encrypted" if not encrypted_keys else "has more than one EncryptedKey"
        raise As4Error.of(_POLICY, f"the message {problem}")
    encrypted_key = encrypted_keys[0]
    _check_key_transport(one(encrypted_key, q(XENC, "EncryptionMethod"), _DECRYPT))
    if token_certificate(encrypted_key, security, ids, _DECRYPT) != receiver_certificate:
        raise As4Error.of(_DECRYPT, "the payload is encrypted for another certificate")
    cipher_data = one(encrypted_key, q(XENC, "CipherData"), _DECRYPT)
    try:
        wrapped = base64.b64decode(
            "".join(text(one(cipher_data, q(XENC, "CipherValue"), _DECRYPT)).split()),
            validate=True,
        )
        key = receiver_key.decrypt(wrapped, _OAEP)
    except (binascii.Error, ValueError) as e:
        raise As4Error.of(_DECRYPT, _UNDECRYPTABLE) from e
    if len(key) != AES_KEY_BYTES:
        raise As4Error.of(_DECRYPT, _UNDECRYPTABLE)
    references = one(encrypted_key, q(XENC, "ReferenceList"), _DECRYPT)
    keys: dict[str, bytes] = {}
    for reference in children(references, q(XENC, "DataReference")):
        uri = attribute(reference, "URI", _DECRYPT)
        encrypted_data = ids.get(uri[1:]) if uri.startswith("#") else None
        if encrypted_data is None or encrypted_data.tag != q(XENC, "EncryptedData"):
            raise As4Error.of(_DECRYPT, f"the encrypted data {quoted(uri)} is not in the message")
        if encrypted_data.getparent() is not security:
            raise As4Error.of(_DECRYPT, "the encrypted data is outside the Security header")
        cid = _attachment_of(encrypted_data)
        if cid in keys:
            raise As4Error.of(_DECRYPT, f"{quoted('cid:' + cid)} is encrypted twice")
        if cid not in attachments:
            raise As4Error.of(_DECRYPT, f"{quoted('cid:' + cid)} is not in the message")
        keys[cid] = key
    return keys


def decrypt(key: bytes, encrypted: bytes | memoryview, sink: Callable[[bytes], object]) -> None:
    """Open an attachment (the IV, the ciphertext, the tag) piece by piece, handing each
    piece of plaintext to ``sink``; ``EBMS:0102`` if it is too short or its tag does not match.
    The pieces are not authentic until this returns: on an error, throw them away."""
    if len(encrypted) < GCM_IV_BYTES + GCM_TAG_BYTES:
        raise As4Error.of(_DECRYPT, _UNDECRYPTABLE)
    view = memoryview(encrypted)
    iv, tag = bytes(view[:GCM_IV_BYTES]), bytes(view[-GCM_TAG_BYTES:])
    ciphertext = view[GCM_IV_BYTES:-GCM_TAG_BYTES]
    decryptor = Cipher(AES(key), modes.GCM(iv, tag)).decryptor()
    for at in range(0, len(ciphertext), DECRYPT_CHUNK):
        sink(decryptor.update(ciphertext[at : at + DECRYPT_CHUNK]))
    try:
        sink(decryptor.finalize())
    except (InvalidTag, ValueError) as e:
        raise As4Error.of(_DECRYPT, _UNDECRYPTABLE) from e


def _check_key_transport(method: Element) -> None:
    if method.get("Algorithm") != RSA_OAEP:
        raise As4Error.of(_POLICY, "the key transport is not rsa-oaep (xmlenc11)")
    digest = optional(method, q(DS, "DigestMethod"), _POLICY)
    if digest is None or digest.get("Algorithm") != SHA256:
        raise As4Error.of(_POLICY, "the key transport's digest is not SHA-256")
    mgf = optional(method, q(XENC11, "MGF"), _POLICY)
    if mgf is None or mgf.get("Algorithm") != MGF1_SHA256:
        raise As4Error.of(_POLICY, "the key transport's MGF is not MGF1-SHA256")
    parameters = optional(method, q(XENC, "OAEPparams"), _POLICY)
    if parameters is not None and text(parameters, _POLICY):
        raise As4Error.of(_POLICY, "OAEP parameters are not supported")


def _attachment_of(encrypted_data: Element) -> str:
    """The Content-ID an EncryptedData of the profile's shape points to."""
    if encrypted_data.get("Type") != ATTACHMENT_CONTENT_ONLY:
        raise As4Error.of(_POLICY, "only Attachment-Content-Only encryption is supported")
    method = one(encrypted_data, q(XENC, "EncryptionMethod"), _DECRYPT)
    if method.get("Algorithm") != AES128_GCM:
        raise As4Error.of(_POLICY, "the payload encryption is not aes128-gcm")
    cipher_data = one(encrypted_data, q(XENC, "CipherData"), _DECRYPT)
    cipher_reference = one(cipher_data, q(XENC, "CipherReference"), _DECRYPT)
    cid = cid_of(attribute(cipher_reference, "URI", _DECRYPT))
    if cid is None:
        raise As4Error.of(_DECRYPT, "the encrypted data does not point to an attachment")
    transforms = optional(cipher_reference, q(XENC, "Transforms"), _DECRYPT)
    algorithms = (
        []
        if transforms is None
        else [t.get("Algorithm") for t in children(transforms, q(DS, "Transform"))]
    )
    if algorithms != [ATTACHMENT_CIPHERTEXT]:
        raise As4Error.of(_POLICY, "the cipher reference lacks the Attachment-Ciphertext-Transform")
    return cid
