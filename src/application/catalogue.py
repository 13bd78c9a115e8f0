"""Reading the network's reference data: document types, identifier schemes, constants.

The lists are small and never change while the process runs, so they are filtered in memory
with the filter language and paged by keyset over their published order, or sorted by one of
their filter fields (``sort=<field>``, ``sort=-<field>``; then by id, as storage lists are).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from fourcorner.application.listing import ListRequest
from fourcorner.application.storage import MAX_LIMIT, Cursor, Order
from fourcorner.domain import events, filtering
from fourcorner.domain.catalogue import (
    Catalogue,
    DocumentType,
    IdentifierScheme,
    camel,
    kebab,
    neutral,
    wire_spellings,
)
from fourcorner.domain.errors import InvalidCursor, InvalidInput, NotFound
from fourcorner.domain.filtering import Condition, FieldSpec, FieldType
from fourcorner.domain.member import MemberStatus
from fourcorner.domain.organisation import ContactType, Mode
from fourcorner.domain.roles import Role
from fourcorner.domain.text import quoted

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
    """A page of records (document types or identifier schemes); the edge renders them."""

    items: list[Any]
    next_cursor: str | None


@attrs.frozen
class CatalogueQuery:
    """A list request of the catalogue, read: requests that ask the same (in another order,
    spelling or case of search) are equal, so answers can be kept by query."""

    conditions: frozenset[Condition]
    search: str  # lower-cased, stripped; "" for none
    start: int  # the position after the cursor's record
    limit: int
    order: Order | None = None  # None: the published order


def _query(
    records: Sequence[Any],
    key: Callable[[Any], str],
    fields: Mapping[str, FieldSpec],
    request: ListRequest,
    extra: Sequence[str] = (),
) -> CatalogueQuery:
    conditions = filtering.parse_all((*extra, *request.filters), fields)
    limit = request.limit if request.limit is not None else len(records) or 1
    if not 1 <= limit <= max(MAX_LIMIT, len(records)):
        raise InvalidInput.one("limit", f"limit is between 1 and {MAX_LIMIT}")
    order = _order(request.sort, fields)
    start = 0
    if request.cursor and order is not None:
        cursor = Cursor.decode(request.cursor, order)
        if cursor.list_id:  # a stored list's cursor (the catalogue's carry none)
            raise InvalidCursor()
        mark = cursor.id
        records = _sorted(records, key, fields, order)
        found = next((i for i, r in enumerate(records) if key(r) == mark), None)
        if found is None:
            raise InvalidCursor()
        start = found + 1
    elif request.cursor:
        try:
            after = base64.urlsafe_b64decode(request.cursor + "=" * (-len(request.cursor) % 4))
            wanted = after.decode()
        except (ValueError, UnicodeDecodeError, binascii.Error):
            raise InvalidCursor() from None
        found = next((i for i, r in enumerate(records) if key(r) == wanted), None)
        if found is None:
            raise InvalidCursor()
        start = found + 1
    needle = request.search.strip().lower() if request.search else ""
    return CatalogueQuery(frozenset(conditions), needle, start, limit, order)


def _order(text: str | None, fields: Mapping[str, FieldSpec]) -> Order | None:
    if text is None:
        return None
    descending = text.startswith("-")
    field = text[1:] if descending else text
    if field not in fields:
        sorts = ", ".join(f"{f}, -{f}" for f in fields)
        raise InvalidInput.one("sort", f"{quoted(text)} is not a sort of this list; sorts: {sorts}")
    return Order(field, descending)


def _sorted(
    records: Sequence[Any],
    key: Callable[[Any], str],
    fields: Mapping[str, FieldSpec],
    order: Order,
) -> Sequence[Any]:
    spec = fields[order.field]
    return sorted(
        records, key=lambda r: order.key(spec.column(r), key(r)), reverse=order.descending
    )


def _page(
    records: Sequence[Any],
    key: Callable[[Any], str],
    search_in: Callable[[Any], str],
    query: CatalogueQuery,
    fields: Mapping[str, FieldSpec],
) -> Listing:
    order = query.order
    if order is not None:
        records = _sorted(records, key, fields, order)
    chosen: list[Any] = []
    for record in records[query.start :]:
        if query.search and query.search not in search_in(record):
            continue
        if all(c.matches(record) for c in query.conditions):
            chosen.append(record)
            if len(chosen) > query.limit:
                break
    cursor = None
    if len(chosen) > query.limit:
        chosen = chosen[: query.limit]
        if order is not None:
            cursor = Cursor(None, key(chosen[-1]), order.text).encode()
        else:
            cursor = base64.urlsafe_b64encode(key(chosen[-1]).encode()).decode().rstrip("=")
    return Listing(chosen, cursor)


def _document_type_key(d: DocumentType) -> str:
    return d.id


def document_type_query(
    catalogue: Catalogue, request: ListRequest, exact: Mapping[str, str]
) -> CatalogueQuery:
    """``exact`` holds the plain query filters (``category=Invoice``) of the spec."""
    extra = [f"{k}:eq:{v}" for k, v in exact.items() if k in DOCUMENT_TYPE_EXACT]
    return _query(
        catalogue.document_types, _document_type_key, DOCUMENT_TYPE_FIELDS, request, extra
    )


def list_document_types(catalogue: Catalogue, query: CatalogueQuery) -> Listing:
    return _page(
        catalogue.document_types,
        _document_type_key,
        _document_type_text,
        query,
        DOCUMENT_TYPE_FIELDS,
    )


def _document_type_text(d: DocumentType) -> str:
    return f"{d.name}\x1f{d.value}".lower()


def get_document_type(catalogue: Catalogue, ident: str) -> DocumentType:
    found = catalogue.document_type(ident)
    if found is None:
        raise NotFound(resource="document type", ident=ident)
    return found


def _scheme_key(s: IdentifierScheme) -> str:
    return s.iso6523


def scheme_query(catalogue: Catalogue, request: ListRequest) -> CatalogueQuery:
    return _query(catalogue.schemes, _scheme_key, SCHEME_FIELDS, request)


def list_schemes(catalogue: Catalogue, query: CatalogueQuery) -> Listing:
    return _page(catalogue.schemes, _scheme_key, _scheme_text, query, SCHEME_FIELDS)


def _scheme_text(s: IdentifierScheme) -> str:
    return f"{s.schemeid}\x1f{s.scheme_name}\x1f{s.iso6523}\x1f{s.country}".lower()


def constants(catalogue: Catalogue) -> dict[str, list[Any]]:
    """Every constant by key; ``GET /constants?key=K`` answers one of them. Values are JSON
    values, except the transport profiles: records, which the edge renders."""
    return {
        "DOCUMENT_TYPE_CATEGORIES": list(catalogue.categories()),
        "DOCUMENT_TYPE_STATES": list(catalogue.document_type_states()),
        "PROCESSES": [
            {"id": p.process_id, "scheme": p.scheme, "value": p.value, "state": p.state}
            for p in catalogue.processes
        ],
        "TRANSPORT_PROFILES": list(catalogue.transport_profiles),  # records: the edge renders them
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
