"""The client's address behind trusted reverse proxies (``FOURCORNER_TRUSTED_PROXIES``).

Whatever counts by client address (the failed-authentication throttle, the metrics' token
check, the AS4 limit per address, the log of a malformed request) asks ``client_address``.
With no proxy trusted (the default) it is the connection's peer, ``request.remote``, and no
header is read. When the peer is a trusted proxy, the client is read from the forwarding
header, walking its hops from the right (the nearest) and passing over those that are
trusted proxies too: the first that is not is the client. Every hop left of it was written by
the client or by proxies it chose, so it is never believed: a client can prepend anything.
An unusable hop (``unknown``, an obfuscated ``_name``, anything that is no address) stops the
walk, and the last trusted address is the client; a header of trusted addresses only names
its leftmost. (aiohttp-remotes' middlewares do not fit: its relaxed ones believe the leftmost
hop, its strict ones refuse a request whose hops are not each trusted in their place, and all
clone every request, through a middleware chain the app does without: ``app.wrapper``.)

The header is ``X-Forwarded-For`` when a request has one that is not blank, else RFC 7239's
``Forwarded`` (its ``for=`` parameters); the two are never mixed. The one every common proxy
writes by default (nginx's ``$proxy_add_x_forwarded_for``, HAProxy's ``option forwardfor``,
the cloud load balancers) wins, since such a proxy passes a ``Forwarded`` header the client
wrote on unchanged, where a client could name itself anything; a proxy that writes only
``Forwarded`` must remove any ``X-Forwarded-For`` the client sent.

The work is bounded whatever a client sends: only the last ``MAX_HEADER`` characters of the
header are read and at most ``MAX_HOPS`` hops walked (either bound reached ends the walk as an
unusable hop would), and a request is never refused for its header. A request's client is
worked out once, when first asked, and kept on the request.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Iterator, Sequence

from aiohttp import web
from multidict import MultiMapping

from fourcorner.entrypoints.setting_values import Network

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_HEADER = 2048
"""Characters of the forwarding header read, from its right end: 16 hops of RFC 7239 elements
with an IPv6 address and port, ``by`` and ``proto`` each, more than any chain of proxies
writes. A longer header's left end is never parsed."""
MAX_HOPS = 16
"""Hops walked at most: a chain of trusted proxies longer than this ends at its 16th hop."""
_MAX_NODE = 64  # characters of one hop's address: an IPv6 address in brackets with a port
_MAX_ELEMENT = 512  # characters of one Forwarded element (for, by, proto and a host name)
_PORT = re.compile(r"[0-9]{1,5}|_[A-Za-z0-9._-]{1,60}")  # RFC 7239's node-port
# one parameter of a Forwarded element: a name, "=", a token or a quoted string (without
# escapes: no value a ``for=`` can hold has one)
_PAIR = re.compile(r'\s*([^=;"\s]+)\s*=\s*("[^"\\]*"|[^;"\s]*)\s*(?:;|\Z)')
_KEPT = 1024  # peers whose trust is remembered (a dict cleared when full)


class TrustedProxies:
    """The trusted proxies' addresses and networks; none: every peer is the client."""

    def __init__(self, networks: Iterable[Network] = ()) -> None:
        self.networks = tuple(networks)
        self._v4 = tuple(n for n in self.networks if isinstance(n, ipaddress.IPv4Network))
        self._v6 = tuple(n for n in self.networks if isinstance(n, ipaddress.IPv6Network))
        # peer address, as aiohttp gives it -> trusted: a proxy's address repeats on every
        # request, and parsing it costs more than the look-up
        self._peers: dict[str, bool] = {}

    def __bool__(self) -> bool:
        return bool(self.networks)

    def trusts(self, address: Address) -> bool:
        """Whether ``address`` is a trusted proxy's; an IPv4-mapped IPv6 address (the peer
        of a socket that listens on both) is its IPv4 address."""
        if isinstance(address, ipaddress.IPv6Address):
            if any(address in n for n in self._v6):
                return True
            mapped = address.ipv4_mapped
            return mapped is not None and any(mapped in n for n in self._v4)
        return any(address in n for n in self._v4)

    def trusts_peer(self, peer: str | None) -> bool:
        """Whether the connection's peer (``request.remote``) is a trusted proxy."""
        if peer is None or not self.networks:
            return False
        known = self._peers.get(peer)
        if known is None:
            try:
                known = self.trusts(ipaddress.ip_address(peer))
            except ValueError:
                known = False
            if len(self._peers) >= _KEPT:
                self._peers.clear()
            self._peers[peer] = known
        return known

    def client(self, peer: str | None, headers: MultiMapping[str]) -> str | None:
        """The client's address of a request from ``peer`` with ``headers``."""
        if not self.trusts_peer(peer):
            return peer
        return walk(peer, hops(headers), self.trusts)


PROXIES = web.AppKey("trusted_proxies", TrustedProxies)
# the client's address of a request, once worked out (``client_address``)
_CLIENT = web.RequestKey("client_address", str)


def client_address(request: web.Request) -> str | None:
    """The address of the client that sent ``request``: the peer's, or, when the peer is a
    trusted proxy (of the app's ``PROXIES``), the one its forwarding header names. Worked out
    once, when first asked, and kept on the request."""
    address = request.get(_CLIENT)
    if address is None:
        proxies = request.config_dict.get(PROXIES)
        remote = request.remote
        address = proxies.client(remote, request.headers) if proxies else remote
        if address is None:
            return None
        request[_CLIENT] = address
    return address


def walk(
    peer: str | None, nearest_first: Iterable[Address | None], trusted: Callable[[Address], bool]
) -> str | None:
    """The client behind the trusted ``peer``: the first hop, nearest first, that is not
    ``trusted``; at an unusable hop (``None``), or past the last, the last trusted address."""
    client: Address | None = None
    for hop in nearest_first:
        if hop is None:
            break
        client = hop
        if not trusted(hop):
            break
    return peer if client is None else str(client)


def hops(headers: MultiMapping[str]) -> Iterator[Address | None]:
    """The hops of the request's forwarding header, nearest (rightmost) first, at most
    ``MAX_HOPS``; ``None`` for one that is no usable address, and for the header's part past
    the bounds, after which nothing follows."""
    text, cut = _tail(headers.getall("X-Forwarded-For", ()))
    items: Iterator[str | None]
    parse: Callable[[str], Address | None]
    if text.strip():
        items, parse = _items(text, cut), node
    else:
        text, cut = _tail(headers.getall("Forwarded", ()))
        items, parse = _elements(text, cut), forwarded_for
    for n, item in enumerate(items):
        if item is None or n == MAX_HOPS:
            yield None
            return
        yield parse(item)


def _tail(values: Sequence[str]) -> tuple[str, bool]:
    """The header's lines as one list (RFC 9110: the same as one line, comma-joined), at most
    its last ``MAX_HEADER`` characters; and whether it was cut."""
    kept: list[str] = []
    size = 0
    for value in reversed(values):
        kept.append(value)
        size += len(value) + 1
        if size > MAX_HEADER:
            break
    text = ",".join(reversed(kept))
    return (text[-MAX_HEADER:], True) if len(text) > MAX_HEADER else (text, False)


def _items(text: str, cut: bool) -> Iterator[str | None]:
    """``X-Forwarded-For``'s items, rightmost first, ``MAX_HOPS`` at most; then ``None`` for
    a part cut or left by the bounds."""
    parts = text.rsplit(",", MAX_HOPS)
    more = cut or len(parts) > MAX_HOPS
    yield from reversed(parts[1:] if more else parts)
    if more:
        yield None


def _elements(text: str, cut: bool) -> Iterator[str | None]:
    """``Forwarded``'s elements, rightmost first, split at the commas outside quoted strings;
    ``None`` for a part cut by the bounds, longer than ``_MAX_ELEMENT`` or whose quotes do
    not close."""
    parts = text.split(",")
    pending: list[str] = []
    quotes = size = 0
    for index in range(len(parts) - 1, -1, -1):
        part = parts[index]
        pending.append(part)
        quotes += part.count('"')
        size += len(part) + 1
        if (index == 0 and cut) or size > _MAX_ELEMENT:
            break
        if quotes % 2 == 0:
            yield ",".join(reversed(pending))
            pending.clear()
            quotes = size = 0
    if pending:
        yield None


def forwarded_for(element: str) -> Address | None:
    """The address of an RFC 7239 element's one ``for=`` parameter (``for=192.0.2.60``,
    ``for="[2001:db8::17]:4711"``); ``None`` when it has none or several, is malformed, or
    is ``unknown`` or an obfuscated identifier."""
    found: str | None = None
    at, end = 0, len(element)
    while at < end:
        pair = _PAIR.match(element, at)
        if pair is None:
            return None
        if pair.group(1).lower() == "for":
            if found is not None:
                return None
            found = pair.group(2)
        at = pair.end()
    if found is None:
        return None
    return node(found[1:-1] if found.startswith('"') else found)


def node(text: str) -> Address | None:
    """The address of a hop: IPv4 or IPv6, the latter bare or in brackets, either with a port
    (``192.0.2.1:8080``, ``[2001:db8::1]:8080``) as some proxies write; ``None`` for anything
    else (``unknown``, an obfuscated ``_name``, a zone index, garbage)."""
    text = text.strip()
    if not text or len(text) > _MAX_NODE or "%" in text:
        return None
    version = 0
    if text[0] == "[":
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not (rest[0] == ":" and _port(rest[1:]))):
            return None
        version = 6
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
        if not _port(port):
            return None
        version = 4
    else:
        host = text
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    return address if version in (0, address.version) else None


def _port(text: str) -> bool:
    return _PORT.fullmatch(text) is not None and (text[0] == "_" or int(text) < 65536)
