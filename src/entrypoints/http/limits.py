"""How much the interface reads: JSON nesting depth and the length of every text field.

One declaration per field name, read by the converter (which refuses longer values with
AT-1001 naming the field) and by the OpenAPI document (``maxLength`` of every string a request
body holds), so the two never disagree. A text field not named here holds at most
``DEFAULT_TEXT_LENGTH`` characters. Lengths count Unicode code points, as JSON Schema does.
"""

from __future__ import annotations

from collections.abc import Mapping

MAX_JSON_DEPTH = 64
"""Arrays and objects nested deeper than this are refused (AT-1000)."""

DEFAULT_TEXT_LENGTH = 256
"""Names, titles, codes, identifiers, phone numbers, cities, ids: every other text field."""

TEXT_LENGTHS: Mapping[str, int] = {
    "legal_name": 300,
    "email": 254,  # RFC 5321: the longest forward path
    "phone": 64,
    "description": 1000,
    "annotation": 1000,
    "street_address": 500,
    "url": 2000,
    "website": 2000,
    "web_contact_url": 2000,
    # the network's identifiers: a scheme, "::" and a value of at most 500 (document types)
    # and 200 (processes) characters
    "document_id": 600,
    "process_id": 300,
    # PEM: a certificate chain of three RSA-4096 certificates is about 6 kB
    "cert_pem": 65536,
    "ca_chain_pem": 65536,
    "private_key_pem": 65536,
}


def text_length(attribute: str) -> int:
    """The most characters the text field ``attribute`` (its Python name) may hold."""
    return TEXT_LENGTHS.get(attribute, DEFAULT_TEXT_LENGTH)
