"""Handlers of the catalogue: document types, identifier schemes, constants.

Answers depend only on the query and the immutable code lists, so rendered bodies are kept in
a small LRU keyed by the query as read (``CatalogueQuery``: the parameters it ignores, their
order and the spelling of equal values make no new entry), and bounded in bytes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable

from dependency_injector.wiring import Provide

from fourcorner.application import catalogue as use
from fourcorner.domain.catalogue import Catalogue
from fourcorner.entrypoints.http.routing import Reply, Req, dumps

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


def _listing(result: use.Listing) -> dict[str, object]:
    return {"items": result.items, "nextCursor": result.next_cursor}


async def list_document_types(
    req: Req,
    catalogue: Catalogue = Provide["catalogue"],
    cache: RenderCache = Provide["render_cache"],
) -> Reply:
    params = req.raw.query
    exact = {k: params[k] for k in use.DOCUMENT_TYPE_EXACT if k in params}
    query = use.document_type_query(catalogue, req.listing(), exact)
    body = cache.get(
        ("document_types", query), lambda: _listing(use.list_document_types(catalogue, query))
    )
    return Reply(200, body)


async def get_document_type(req: Req, catalogue: Catalogue = Provide["catalogue"]) -> Reply:
    return Reply(200, use.get_document_type(catalogue, req.path("id")))


async def list_schemes(
    req: Req,
    catalogue: Catalogue = Provide["catalogue"],
    cache: RenderCache = Provide["render_cache"],
) -> Reply:
    query = use.scheme_query(catalogue, req.listing())
    body = cache.get(
        ("participant_identifiers", query), lambda: _listing(use.list_schemes(catalogue, query))
    )
    return Reply(200, body)


async def get_constants(req: Req, catalogue: Catalogue = Provide["catalogue"]) -> Reply:
    key = req.raw.query.get("key")
    if key is None:
        return Reply(200, {"keys": sorted(use.constants(catalogue))})
    return Reply(200, {"key": key, "values": use.constant(catalogue, key)})
