"""Handlers of the catalogue: document types, identifier schemes, constants.

Answers depend only on the query and the immutable code lists, so rendered bodies are kept in
a small LRU keyed by the query as read (``CatalogueQuery``: the parameters it ignores, their
order and the spelling of equal values make no new entry), and bounded in bytes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import attrs
import cattrs
from dependency_injector.wiring import Provide

from fourcorner.application import catalogue as use
from fourcorner.application.catalogue import DOCUMENT_TYPE_FIELDS, SCHEME_FIELDS
from fourcorner.domain.catalogue import Catalogue, TransportProfile
from fourcorner.domain.roles import Role
from fourcorner.entrypoints.http.rendering import Answer, ListReply, response_class, shown
from fourcorner.entrypoints.http.routing import (
    LIST_PARAMS,
    QueryParam,
    Reply,
    Req,
    Route,
    dumps,
)

# --- the catalogue (DocumentType keeps the kebab-case names the specification shows) --------


@attrs.frozen
class ProcessRefResponse:
    scheme: str
    value: str


def _text(value: str | None) -> str:
    return value or ""


@response_class
class DocumentTypeResponse:
    """A document type: ``id`` first, then the fields by name. Every field the specification
    lists is there, a string field the code list leaves empty as ``""``; the other options
    are left out when absent."""

    id: str
    abstract: bool
    bis_version: str = shown(json="bis-version", render=_text)
    category: str
    comment: str = shown(render=_text)
    deprecation_release: str | None = shown(json="deprecation-release", omit_none=True)
    domain_community: str = shown(json="domain-community", render=_text)
    initial_release: str = shown(json="initial-release")
    issued_by_opennet: bool = shown(json="issued-by-opennet")
    name: str
    process_ids: tuple[ProcessRefResponse, ...] = shown(json="process-ids")
    removal_date: str | None = shown(json="removal-date", omit_none=True)
    scheme: str
    state: str
    value: str
    version: str


@response_class
class IdentifierSchemeResponse:
    """A participant identifier scheme; absent options left out."""

    schemeid: str
    iso6523: str
    country: str
    scheme_name: str
    initial_release: str
    state: str
    registrable: bool
    issuing_agency: str | None = shown(omit_none=True)
    deprecation_release: str | None = shown(omit_none=True)
    removal_date: str | None = shown(omit_none=True)
    structure: str | None = shown(omit_none=True)
    display: str | None = shown(omit_none=True)
    examples: str | None = shown(omit_none=True)
    validation_rules: str | None = shown(omit_none=True)
    usage: str | None = shown(omit_none=True)


@response_class
class TransportProfileResponse:
    protocol: str
    profile_version: str
    profile_id: str
    initial_release: str
    state: str
    deprecation_release: str | None = shown(omit_none=True)
    removal_date: str | None = shown(omit_none=True)
    comment: str | None = shown(omit_none=True)


@response_class
class ConstantsResponse:
    """Without a key, the list of keys; with one, its values."""

    key: str | None = shown(omit_none=True)
    values: tuple[Any, ...] | None = shown(omit_none=True)
    keys: tuple[str, ...] | None = shown(omit_none=True)


DOCUMENT_TYPE = Answer(DocumentTypeResponse, "DocumentType")
IDENTIFIER_SCHEME = Answer(IdentifierSchemeResponse, "IdentifierScheme")
TRANSPORT_PROFILE = Answer(TransportProfileResponse, "TransportProfile")
CONSTANTS = Answer(ConstantsResponse, "Constants")


# --- handlers -------------------------------------------------------------------------------

CACHE_BYTES = 8 * 1024 * 1024
"""What the rendered answers and their keys may hold in all."""
CACHE_ENTRIES = 512
_ENTRY_OVERHEAD = 512  # the entry's node, tuple and bytes object headers, roughly


class RenderCache:
    """Rendered JSON bodies by key, least recently used first out, at most ``max_bytes`` of
    bodies and keys (a key counts as the length of its ``repr``, which grows with what it
    holds) and ``max_entries`` entries. A body larger than the bound alone is not kept."""

    def __init__(self, max_bytes: int = CACHE_BYTES, max_entries: int = CACHE_ENTRIES) -> None:
        self._entries: OrderedDict[Hashable, tuple[bytes, int]] = OrderedDict()
        self._max_bytes = max_bytes
        self._max_entries = max_entries
        self._bytes = 0

    @property
    def size(self) -> int:
        """The bytes counted against the bound."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable, render: Callable[[], object]) -> bytes:
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
            return hit[0]
        rendered = dumps(render())
        cost = len(rendered) + len(repr(key)) + _ENTRY_OVERHEAD
        if cost > self._max_bytes:
            return rendered
        # orjson's bytes keep the capacity it reserved while writing (up to several times the
        # length for long strings): the entry holds an exact copy
        body = bytes(memoryview(rendered))
        self._entries[key] = (body, cost)
        self._bytes += cost
        while self._bytes > self._max_bytes or len(self._entries) > self._max_entries:
            _, (_, freed) = self._entries.popitem(last=False)
            self._bytes -= freed
        return body


def _listing(conv: cattrs.Converter, answer: Answer, result: use.Listing) -> dict[str, object]:
    return {"items": [answer.dump(conv, r) for r in result.items], "nextCursor": result.next_cursor}


async def list_document_types(
    req: Req,
    catalogue: Catalogue = Provide["catalogue"],
    cache: RenderCache = Provide["render_cache"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    params = req.raw.query
    exact = {k: params[k] for k in use.DOCUMENT_TYPE_EXACT if k in params}
    query = use.document_type_query(catalogue, req.listing(), exact)
    body = cache.get(
        ("document_types", query),
        lambda: _listing(conv, DOCUMENT_TYPE, use.list_document_types(catalogue, query)),
    )
    return Reply(200, body)


async def get_document_type(
    req: Req,
    catalogue: Catalogue = Provide["catalogue"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    found = use.get_document_type(catalogue, req.path("id"))
    return Reply(200, DOCUMENT_TYPE.dump(conv, found))


async def list_schemes(
    req: Req,
    catalogue: Catalogue = Provide["catalogue"],
    cache: RenderCache = Provide["render_cache"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    query = use.scheme_query(catalogue, req.listing())
    body = cache.get(
        ("participant_identifiers", query),
        lambda: _listing(conv, IDENTIFIER_SCHEME, use.list_schemes(catalogue, query)),
    )
    return Reply(200, body)


def _value(conv: cattrs.Converter, value: Any) -> Any:
    if isinstance(value, TransportProfile):
        return TRANSPORT_PROFILE.dump(conv, value)
    return value


async def get_constants(
    req: Req,
    catalogue: Catalogue = Provide["catalogue"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    key = req.raw.query.get("key")
    if key is None:
        return Reply(200, {"keys": sorted(use.constants(catalogue))})
    values = [_value(conv, v) for v in use.constant(catalogue, key)]
    return Reply(200, {"key": key, "values": values})


# --- routes ---------------------------------------------------------------------------------

_EXACT = tuple(
    QueryParam(name, {"type": "string"}, description=f"exact {name}")
    for name in ("category", "state", "scheme", "version")
)


def _sort(fields: Mapping[str, object]) -> QueryParam:
    choices = [v for f in fields for v in (f, f"-{f}")]
    return QueryParam(
        "sort",
        {"type": "string", "enum": choices},
        description="the field to sort by, descending with a leading '-'; without it, the "
        "published order. A nextCursor is valid only with the sort it was made for",
    )


U = Role.USER

ROUTES = (
    Route(
        "GET",
        "/document_types",
        list_document_types,
        "List document types (the whole list unless limit is given).",
        U,
        "catalogue",
        response=ListReply(DOCUMENT_TYPE),
        query=(*_EXACT, *LIST_PARAMS, _sort(DOCUMENT_TYPE_FIELDS)),
        errors=("AT-1004", "AT-1005"),
    ),
    Route(
        "GET",
        "/document_types/{id}",
        get_document_type,
        "Get a document type.",
        U,
        "catalogue",
        response=DOCUMENT_TYPE,
    ),
    Route(
        "GET",
        "/participant_identifiers",
        list_schemes,
        "List participant identifier schemes (e.g. filter=country:eq:SE).",
        U,
        "catalogue",
        response=ListReply(IDENTIFIER_SCHEME),
        query=(*LIST_PARAMS, _sort(SCHEME_FIELDS)),
        errors=("AT-1004", "AT-1005"),
    ),
    Route(
        "GET",
        "/constants",
        get_constants,
        "Constants by key; without a key, the list of keys.",
        U,
        "catalogue",
        response=CONSTANTS,
        query=(QueryParam("key", {"type": "string"}),),
        errors=("AT-1040",),  # no constant of that key
    ),
)
