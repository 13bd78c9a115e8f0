"""Handlers of the catalogue: document types, identifier schemes, constants.

Answers depend only on the query and the immutable code lists, so rendered bodies are kept in
a small LRU keyed by the query string.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from dependency_injector.wiring import Provide

from application import catalogue as use
from domain.catalogue import Catalogue
from entrypoints.http.routing import Reply, Req, dumps

_CACHE_SIZE = 512


class RenderCache:
    def __init__(self, size: int = _CACHE_SIZE) -> None:
        self._entries: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._size = size

    def get(self, key: tuple[str, str], render: Callable[[], object]) -> bytes:
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
            return hit
        body = dumps(render())
        self._entries[key] = body
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)
        return body


def _listing(result: use.Listing) -> dict[str, object]:
    return {"items": result.items, "nextCursor": result.next_cursor}


async def list_document_types(
    req: Req,
    catalogue: Catalogue = Provide["catalogue"],
    cache: RenderCache = Provide["render_cache"],
) -> Reply:
    query = req.raw.query
    exact = {k: query[k] for k in use.DOCUMENT_TYPE_EXACT if k in query}
    body = cache.get(
        ("document_types", req.raw.query_string),
        lambda: _listing(use.list_document_types(catalogue, req.listing(), exact)),
    )
    return Reply(200, body)


async def get_document_type(req: Req, catalogue: Catalogue = Provide["catalogue"]) -> Reply:
    return Reply(200, use.get_document_type(catalogue, req.path("id")))


async def list_schemes(
    req: Req,
    catalogue: Catalogue = Provide["catalogue"],
    cache: RenderCache = Provide["render_cache"],
) -> Reply:
    body = cache.get(
        ("participant_identifiers", req.raw.query_string),
        lambda: _listing(use.list_schemes(catalogue, req.listing())),
    )
    return Reply(200, body)


async def get_constants(req: Req, catalogue: Catalogue = Provide["catalogue"]) -> Reply:
    key = req.raw.query.get("key")
    if key is None:
        return Reply(200, {"keys": sorted(use.constants(catalogue))})
    return Reply(200, {"key": key, "values": use.constant(catalogue, key)})
