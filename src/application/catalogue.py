"""Reading the network's reference data: document types, identifier schemes, constants.

The lists are small and never change while the process runs, so they are filtered in memory
with the filter language and paged by keyset over their published order.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from application.listing import ListRequest
from application.storage import MAX_LIMIT
from domain import events, filtering
from domain.catalogue import (
    Catalogue,
    DocumentType,
    IdentifierScheme,
    camel,
    kebab,
    neutral,
    wire_spellings,
)
from domain.errors import InvalidCursor, InvalidInput, NotFound
from domain.filtering import FieldSpec, FieldType
from domain.member import MemberStatus
from domain.organisation import ContactType, Mode
from domain.roles import Role

_S, _B = FieldType.STRING, FieldType.BOOL


def _doc(attr: str, kind: FieldType = _S, **options: Any) -> FieldSpec:
    """A DocumentType field under its kebab-case name, also under the network's spelling."""
    name = kebab(attr)
    return FieldSpec(
        name, kind, lambda r: getattr(r, attr), aliases=wire_spellings(name), **options
    )


def _scheme(attr: str, kind: FieldType = _S) -> FieldSpec:
    """An identifier scheme field under its camelCase name; the kebab-case name it had before
    is still accepted."""
    name, old = camel(attr), kebab(attr)
    aliases = (old,) if old != name else ()
    return FieldSpec(name, kind, lambda r: getattr(r, attr), aliases=aliases)


DOCUMENT_TYPE_FIELDS = filtering.fields(
    _doc("id"),
    _doc("name"),
    _doc("category"),
    _doc("state"),
    _doc("scheme", normalise=neutral),
    _doc("value"),
    _doc("version"),
    _doc("abstract", _B),
    _doc("issued_by_opennet", _B),
    _doc("bis_version"),
    _doc("domain_community"),
    _doc("initial_release"),
)
SCHEME_FIELDS = filtering.fields(
    _scheme("schemeid"),
    _scheme("iso6523"),
    _scheme("country"),
    _scheme("scheme_name"),
    _scheme("issuing_agency"),
    _scheme("state"),
    _scheme("registrable", _B),
    _scheme("initial_release"),
)
DOCUMENT_TYPE_EXACT = ("category", "state", "scheme", "version")


@attrs.frozen
class Listing:
    items: list[dict[str, object]]
    next_cursor: str | None


def _page(
    records: Sequence[Any],
    key: Callable[[Any], str],
    fields: Mapping[str, FieldSpec],
    search_in: Callable[[Any], str],
    request: ListRequest,
    extra: Sequence[str] = (),
) -> Listing:
    conditions = filtering.parse_all((*extra, *request.filters), fields)
    limit = request.limit if request.limit is not None else len(records) or 1
    if not 1 <= limit <= max(MAX_LIMIT, len(records)):
        raise InvalidInput.one("limit", f"limit is between 1 and {MAX_LIMIT}")
    start = 0
    if request.cursor:
        positions = {key(r): i for i, r in enumerate(records)}
        try:
            after = base64.urlsafe_b64decode(request.cursor + "=" * (-len(request.cursor) % 4))
            start = positions[after.decode()] + 1
        except (KeyError, ValueError, UnicodeDecodeError, binascii.Error):
            raise InvalidCursor() from None
    needle = request.search.strip().lower() if request.search else ""
    chosen: list[Any] = []
    for record in records[start:]:
        if needle and needle not in search_in(record):
            continue
        if all(c.matches(record) for c in conditions):
            chosen.append(record)
            if len(chosen) > limit:
                break
    cursor = None
    if len(chosen) > limit:
        chosen = chosen[:limit]
        cursor = base64.urlsafe_b64encode(key(chosen[-1]).encode()).decode().rstrip("=")
    return Listing([r.to_record() for r in chosen], cursor)


def list_document_types(
    catalogue: Catalogue, request: ListRequest, exact: Mapping[str, str]
) -> Listing:
    """``exact`` holds the plain query filters (``category=Invoice``) of the spec."""
    extra = [f"{k}:eq:{v}" for k, v in exact.items() if k in DOCUMENT_TYPE_EXACT]
    return _page(
        catalogue.document_types,
        lambda d: d.id,
        DOCUMENT_TYPE_FIELDS,
        _document_type_text,
        request,
        extra,
    )


def _document_type_text(d: DocumentType) -> str:
    return f"{d.name}\x1f{d.value}".lower()


def get_document_type(catalogue: Catalogue, ident: str) -> dict[str, object]:
    found = catalogue.document_type(ident)
    if found is None:
        raise NotFound(resource="document type", ident=ident)
    return found.to_record()


def list_schemes(catalogue: Catalogue, request: ListRequest) -> Listing:
    return _page(catalogue.schemes, lambda s: s.iso6523, SCHEME_FIELDS, _scheme_text, request)


def _scheme_text(s: IdentifierScheme) -> str:
    return f"{s.schemeid}\x1f{s.scheme_name}\x1f{s.iso6523}\x1f{s.country}".lower()


def constants(catalogue: Catalogue) -> dict[str, list[Any]]:
    """Every constant by key; ``GET /constants?key=K`` answers one of them."""
    return {
        "DOCUMENT_TYPE_CATEGORIES": list(catalogue.categories()),
        "DOCUMENT_TYPE_STATES": list(catalogue.document_type_states()),
        "PROCESSES": [
            {"id": p.process_id, "scheme": p.scheme, "value": p.value, "state": p.state}
            for p in catalogue.processes
        ],
        "TRANSPORT_PROFILES": [t.to_record() for t in catalogue.transport_profiles],
        "ORGANISATION_MODES": [m.value for m in Mode],
        "WEBHOOK_EVENTS": list(events.EVENT_NAMES),
        "MLS_RESPONSE_CODES": [
            {"code": c, "description": d} for c, d in events.MLS_RESPONSE_CODES.items()
        ],
        "ROLES": [r.value for r in Role],
        "MEMBER_STATUSES": [s.value for s in MemberStatus],
        "CONTACT_TYPES": [c.value for c in ContactType],
    }


def constant(catalogue: Catalogue, key: str) -> list[Any]:
    table = constants(catalogue)
    if key not in table:
        raise NotFound(resource="constant", ident=key)
    return table[key]
