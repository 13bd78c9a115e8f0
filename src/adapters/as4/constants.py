"""The names and values of the network's AS4 profile (NETWORK.md §4): namespaces, algorithm
URIs and the fixed ebMS values. Nothing here is configurable: these are wire constants."""

from __future__ import annotations

from typing import Final

# --- namespaces ----------------------------------------------------------------------------

S12: Final = "http://www.w3.org/2003/05/soap-envelope"
EB: Final = "http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"
EBBP: Final = "http://docs.oasis-open.org/ebxml-bp/ebbp-signals-2.0"
WSSE: Final = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"
WSU: Final = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd"
WSSE11: Final = "http://docs.oasis-open.org/wss/oasis-wss-wssecurity-secext-1.1.xsd"
DS: Final = "http://www.w3.org/2000/09/xmldsig#"
XENC: Final = "http://www.w3.org/2001/04/xmlenc#"
XENC11: Final = "http://www.w3.org/2009/xmlenc11#"
EC: Final = "http://www.w3.org/2001/10/xml-exc-c14n#"
XML: Final = "http://www.w3.org/XML/1998/namespace"

USER_NSMAP: Final = {
    "S12": S12,
    "eb": EB,
    "wsse": WSSE,
    "wsu": WSU,
    "wsse11": WSSE11,
    "ds": DS,
    "xenc": XENC,
    "xenc11": XENC11,
}
SIGNAL_NSMAP: Final = {"S12": S12, "eb": EB, "ebbp": EBBP, "wsse": WSSE, "wsu": WSU, "ds": DS}


def q(namespace: str, local: str) -> str:
    """The Clark name ``{namespace}local`` lxml uses for tags and attributes."""
    return f"{{{namespace}}}{local}"


WSU_ID: Final = q(WSU, "Id")
MUST_UNDERSTAND: Final = q(S12, "mustUnderstand")

# --- algorithms ----------------------------------------------------------------------------

EXC_C14N: Final = "http://www.w3.org/2001/10/xml-exc-c14n#"
RSA_SHA256: Final = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
SHA256: Final = "http://www.w3.org/2001/04/xmlenc#sha256"
RSA_OAEP: Final = "http://www.w3.org/2009/xmlenc11#rsa-oaep"
MGF1_SHA256: Final = "http://www.w3.org/2009/xmlenc11#mgf1sha256"
AES128_GCM: Final = "http://www.w3.org/2009/xmlenc11#aes128-gcm"
_SWA: Final = "http://docs.oasis-open.org/wss/oasis-wss-SwAProfile-1.1"
ATTACHMENT_CONTENT_SIGNATURE: Final = f"{_SWA}#Attachment-Content-Signature-Transform"
ATTACHMENT_CIPHERTEXT: Final = f"{_SWA}#Attachment-Ciphertext-Transform"
ATTACHMENT_CONTENT_ONLY: Final = f"{_SWA}#Attachment-Content-Only"
BASE64_BINARY: Final = (
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary"
)
X509V3: Final = (
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-x509-token-profile-1.0#X509v3"
)
_WSS11: Final = "http://docs.oasis-open.org/wss/oasis-wss-soap-message-security-1.1"
ENCRYPTED_KEY_TOKEN: Final = f"{_WSS11}#EncryptedKey"

AES_KEY_BYTES: Final = 16
GCM_IV_BYTES: Final = 12
GCM_TAG_BYTES: Final = 16

# --- ebMS and Peppol values ----------------------------------------------------------------

AGREEMENT: Final = "urn:fdc:peppol.eu:2017:agreements:tia:ap_provider"
PARTY_TYPE: Final = "urn:fdc:peppol.eu:2017:identifiers:ap"
# the one message partition channel of the profile; a UserMessage may also leave @mpc out
DEFAULT_MPC: Final = EB + "defaultMPC"
INITIATOR: Final = f"{EB}initiator"
RESPONDER: Final = f"{EB}responder"
ORIGINAL_SENDER: Final = "originalSender"
FINAL_RECIPIENT: Final = "finalRecipient"
PAYLOAD_MIME_TYPE: Final = "application/xml"
GZIP: Final = "application/gzip"
NOT_SERVICED: Final = "PEPPOL:NOT_SERVICED"

SOAP_MEDIA_TYPE: Final = "application/soap+xml"
SOAP_PART_CONTENT_TYPE: Final = "application/soap+xml; charset=UTF-8"
SIGNAL_CONTENT_TYPE: Final = "application/soap+xml; charset=utf-8"
ATTACHMENT_CONTENT_TYPE: Final = "application/octet-stream"
