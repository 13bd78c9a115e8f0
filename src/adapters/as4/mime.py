"""MIME for AS4 (NETWORK.md §4 "MIME and HTTP"): ``multipart/related`` with the SOAP envelope
first and each payload as a binary part named by its Content-ID, and the reverse.

The reader works on bytes or on a memory-mapped file (the receiving endpoint spools a message
to disk) and hands out attachments as views, so a large one is not copied. It is strict
about what matters (a boundary, a SOAP root part, unique Content-IDs) and
lenient about the rest (bare LF line ends, header case, quoted parameters, base64 parts). Any
problem is ``EBMS:0007`` MimeInconsistency.
"""

from __future__ import annotations

import binascii
import mmap
import secrets
from collections.abc import Sequence
from typing import TypeAlias
from urllib.parse import unquote

from fourcorner.adapters.as4.constants import (
    ATTACHMENT_CONTENT_TYPE,
    SOAP_MEDIA_TYPE,
    SOAP_PART_CONTENT_TYPE,
)
from fourcorner.adapters.as4.errors import MIME_INCONSISTENCY, As4Error
from fourcorner.domain.text import quoted

MAX_HEADER_BYTES = 16_384
MAX_LINE_BYTES = 1_000  # the rest of a boundary delimiter's line (RFC 5322 line length)
Body: TypeAlias = bytes | mmap.mmap
_RAW_ENCODINGS = frozenset({"", "binary", "8bit", "7bit"})


def _refuse(detail: str) -> As4Error:
    return As4Error.of(MIME_INCONSISTENCY, detail)


# --- header values -------------------------------------------------------------------------


def parse_media_type(value: str) -> tuple[str, dict[str, str]]:
    """``("multipart/related", {"boundary": ..., ...})`` from a Content-Type value: the media
    type lower-cased, parameter names lower-cased, quoted values unquoted."""
    items: list[str] = []
    current: list[str] = []
    quoted = escaped = False
    for char in value:
        if escaped:
            current.append(char)
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
            current.append(char)
        elif char == ";" and not quoted:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return items[0].strip().lower(), _params(items[1:])


def _params(items: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for item in items:
        name, equals, raw = item.partition("=")
        if not equals:
            continue
        raw = raw.strip()
        if len(raw) >= 2 and raw[0] == raw[-1] == '"':
            raw = raw[1:-1]
        params[name.strip().lower()] = raw
    return params


def content_id(value: str) -> str:
    """A Content-ID header value without blanks and angle brackets."""
    return value.strip().removeprefix("<").removesuffix(">").strip()


def cid_of(href: str) -> str | None:
    """The Content-ID a ``cid:`` URL names (RFC 2392: percent-decoded), or None."""
    if not href.lower().startswith("cid:"):
        return None
    return unquote(href[4:])


# --- writing -------------------------------------------------------------------------------


def build_related(soap: bytes, attachments: Sequence[tuple[str, bytes]]) -> tuple[str, bytes]:
    """``(content_type, body)``: the SOAP part, then each ``(content_id, bytes)`` attachment
    as ``application/octet-stream`` in binary transfer encoding, without Content-Disposition."""
    while True:
        boundary = f"----=_Part_{secrets.token_hex(16)}"
        delimiter = f"--{boundary}".encode("ascii")
        if delimiter not in soap and not any(delimiter in data for _, data in attachments):
            break
    chunks = [
        delimiter,
        b"\r\nContent-Type: ",
        SOAP_PART_CONTENT_TYPE.encode("ascii"),
        b"\r\nContent-Transfer-Encoding: binary\r\n\r\n",
        soap,
    ]
    for cid, data in attachments:
        chunks += [
            b"\r\n",
            delimiter,
            b"\r\nContent-Type: ",
            ATTACHMENT_CONTENT_TYPE.encode("ascii"),
            b"\r\nContent-Transfer-Encoding: binary\r\nContent-ID: <",
            cid.encode("ascii"),
            b">\r\n\r\n",
            data,
        ]
    chunks += [b"\r\n", delimiter, b"--\r\n"]
    content_type = f'multipart/related; type="{SOAP_MEDIA_TYPE}"; boundary="{boundary}"'
    return content_type, b"".join(chunks)


# --- reading -------------------------------------------------------------------------------


def split_related(content_type: str, body: bytes) -> tuple[bytes, dict[str, bytes]]:
    """``(soap, attachments by Content-ID)`` of a ``multipart/related`` message. The root part
    is the one the ``start`` parameter names, else the first; it must be SOAP 1.2."""
    soap, attachments = read_related(content_type, body)
    return bytes(soap), {cid: bytes(data) for cid, data in attachments.items()}


def read_related(content_type: str, body: Body) -> tuple[memoryview, dict[str, memoryview]]:
    """``split_related`` without copying: each part is a view into ``body`` (a memory-mapped
    file works as well as bytes), or of its decoded bytes when it is base64."""
    media_type, params = parse_media_type(content_type)
    if media_type != "multipart/related":
        raise _refuse(f"the message is {media_type or 'untyped'}, not multipart/related")
    boundary = params.get("boundary", "")
    if not 0 < len(boundary) <= 70 or not boundary.isascii():
        raise _refuse("the Content-Type has no usable boundary")
    view = memoryview(body)
    parts = [
        _read_part(body, view, start, end)
        for start, end in _split(body, f"--{boundary}".encode("ascii"))
    ]
    start = content_id(params["start"]) if "start" in params else None
    root_index = 0
    if start is not None:
        matches = [i for i, (cid, _, _) in enumerate(parts) if cid == start]
        if len(matches) != 1:
            raise _refuse("no part has the Content-ID the start parameter names")
        root_index = matches[0]
    root_cid, root_type, soap = parts[root_index]
    if parse_media_type(root_type)[0] != SOAP_MEDIA_TYPE:
        raise _refuse(f"the root part is {root_type or 'untyped'}, not {SOAP_MEDIA_TYPE}")
    attachments: dict[str, memoryview] = {}
    for index, (cid, _, data) in enumerate(parts):
        if index == root_index:
            continue
        if not cid:
            raise _refuse("an attachment has no Content-ID")
        if cid in attachments or cid == root_cid:
            raise _refuse(f"the Content-ID {quoted(cid)} is used twice")
        attachments[cid] = data
    return soap, attachments


def soap_of(content_type: str, body: bytes) -> bytes:
    """The SOAP envelope of a bare ``application/soap+xml`` body or of a multipart one."""
    media_type, _ = parse_media_type(content_type)
    if media_type == SOAP_MEDIA_TYPE:
        return body
    if media_type == "multipart/related":
        return bytes(read_related(content_type, body)[0])
    raise _refuse(f"the answer is {media_type or 'untyped'}, not {SOAP_MEDIA_TYPE}")


def _at(body: Body, position: int, text: bytes) -> bool:
    return body[position : position + len(text)] == text


def _split(body: Body, delimiter: bytes) -> list[tuple[int, int]]:
    """Where the parts between the delimiter lines start and end (the preamble and the
    epilogue are dropped)."""
    if _at(body, 0, delimiter):
        position = len(delimiter)
    else:
        found = body.find(b"\n" + delimiter)
        if found < 0:
            raise _refuse("the body has no boundary delimiter")
        position = found + 1 + len(delimiter)
    parts: list[tuple[int, int]] = []
    while not _at(body, position, b"--"):
        line_end = body.find(b"\n", position, position + MAX_LINE_BYTES)
        if line_end < 0 or body[position:line_end].strip(b" \t\r"):
            raise _refuse("a boundary delimiter is followed by other text")
        start = line_end + 1
        found = body.find(b"\n" + delimiter, start)
        if found < 0:
            raise _refuse("the body has no closing boundary delimiter")
        end = found - 1 if found > start and body[found - 1] == 0x0D else found
        parts.append((start, end))
        position = found + 1 + len(delimiter)
    if not parts:
        raise _refuse("the body has no parts")
    return parts


def _read_part(body: Body, view: memoryview, start: int, end: int) -> tuple[str, str, memoryview]:
    """``(content_id, content_type, content)`` of the MIME part ``body[start:end]``."""
    if _at(body, start, b"\r\n") and start + 2 <= end:
        head, content_start = b"", start + 2
    elif _at(body, start, b"\n") and start + 1 <= end:
        head, content_start = b"", start + 1
    else:
        limit = min(end, start + MAX_HEADER_BYTES)
        crlf, lf = body.find(b"\r\n\r\n", start, limit), body.find(b"\n\n", start, limit)
        if crlf >= 0 and (lf < 0 or crlf < lf):
            head, content_start = body[start:crlf], crlf + 4
        elif lf >= 0:
            head, content_start = body[start:lf], lf + 2
        else:
            raise _refuse("a part's headers do not end")
    headers = _headers(head)
    content = view[content_start:end]
    encoding = headers.get("content-transfer-encoding", "").strip().lower()
    if encoding == "base64":
        try:
            content = memoryview(binascii.a2b_base64(content))
        except binascii.Error as e:
            raise _refuse("a base64 part is not base64") from e
    elif encoding not in _RAW_ENCODINGS:
        raise _refuse(f"the transfer encoding {quoted(encoding)} is not supported")
    cid = content_id(headers.get("content-id", ""))
    return cid, headers.get("content-type", "").strip(), content


def _headers(head: bytes) -> dict[str, str]:
    headers: dict[str, str] = {}
    name = ""
    for line in head.decode("latin-1").replace("\r\n", "\n").split("\n"):
        if line[:1] in (" ", "\t") and name:
            headers[name] += " " + line.strip()
            continue
        name, colon, value = line.partition(":")
        name = name.strip().lower()
        if not colon or not name:
            raise _refuse("a part has a malformed header line")
        if name in headers:
            raise _refuse(f"a part repeats the {name} header")
        headers[name] = value.strip()
    return headers
