"""A small HTTP/1.1 client for webhook deliveries: a POST and the start of its answer (its
status, the first bytes of its body, and its ``Retry-After``, which a busy receiver may give).

aiohttp's client costs about 485k instructions a request; a delivery needs far less of it:
one request on a kept-alive connection, written at once, and an answer of which only the
status and the first bytes of the body are kept. This client does that on an
``asyncio.Protocol``: connections kept alive per origin (scheme, host, port), at most
``limit`` open at once, one idle for more than ``IDLE_SECONDS`` never used again (closed when
next looked at, by a sweep after a later request, or to open another within the limit; one
the peer closes is closed and forgotten at once, and an origin without one is not kept);
a URL's user and password sent as Basic credentials, as aiohttp sent them; the request written
in one call; the answer framed by ``httptools.HttpResponseParser`` (llhttp, the parser uvicorn uses:
status line, headers, ``Content-Length``, chunked, or until the peer closes; interim 1xx
answers skipped, 101 refused, anything llhttp refuses or not HTTP/1.x ``AnswerUnreadable``).

Bounds: the answer's head (interim ones counted) has at most ``MAX_HEAD`` bytes; of its body
``kept`` bytes are held and the rest only counted; a body of more than ``MAX_DRAIN`` bytes (or
one that lasts until the connection closes), or an answer of more than ``MAX_HEAD`` +
2 × ``MAX_DRAIN`` bytes with its chunks' framing and trailers, is not read to its end: the
connection is closed instead of kept. A connection is kept only when llhttp says the answer
allows it (``should_keep_alive``), the answer was read to its end and nothing followed it.
Time is the caller's to bound (``asyncio.timeout``). A connection is chosen after DNS, each
address checked by ``check``, so a name that resolves to a refused address (DNS rebinding) is
refused too. Names are resolved for each new connection by ``names.HostResolver`` (on the
event loop, not in its default executor's threads) and never cached here (the name servers
may cache): an address is checked when it is connected to, and connections are kept alive, so
a delivery rarely needs a new one. A kept-alive connection that the peer closed
before answering is tried once more on a new connection (a delivery may arrive twice: webhooks
are at least once).
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import Callable, Mapping

import httptools
import yarl

from fourcorner.adapters.webhooks.names import HostResolver

MAX_HEAD = 64 * 1024
MAX_DRAIN = 64 * 1024
_MAX_READ = MAX_HEAD + 2 * MAX_DRAIN  # bytes of one answer read at most, its framing counted
IDLE_SECONDS = 15.0
_MAX_TARGETS = 10_000  # parsed URLs kept

_HEAD, _BODY, _UNTIL_CLOSE, _DONE = range(4)  # where the answer's reading is

# an answer as read: its status, the first bytes of its body, and its Retry-After field's
# value (the last one, without the whitespace around it; None without one)
Answer = tuple[int, bytes, str | None]


class AnswerUnreadable(Exception):
    """The peer's answer is not HTTP/1.x as this client reads it."""


class _Closed(Exception):
    """The peer closed the connection before it answered."""


class _Past(Exception):
    """Raised in a parser callback to stop reading: the answer is finished and bytes follow
    it, or the rest of its body is not read."""


class _Target:
    """A URL as this client sends to it: its origin and the start of a request's head."""

    __slots__ = ("host", "origin", "port", "prefix", "tls")

    def __init__(self, url: str) -> None:
        parsed = yarl.URL(url)
        if parsed.scheme not in ("http", "https") or not parsed.raw_host:
            raise ValueError(f"not an http(s) URL: {url[:200]}")
        self.tls = parsed.scheme == "https"
        self.host: str = parsed.raw_host
        self.port: int = parsed.port or (443 if self.tls else 80)
        self.origin = (parsed.scheme, self.host, self.port)
        host = f"[{self.host}]" if ":" in self.host else self.host
        if not parsed.is_default_port():
            host = f"{host}:{self.port}"
        path = parsed.raw_path_qs or "/"
        head = f"POST {path} HTTP/1.1\r\nhost: {host}\r\n"
        if parsed.raw_user is not None or parsed.raw_password is not None:
            # a URL's user and password are sent as Basic credentials (RFC 7617, UTF-8), as
            # aiohttp's client sent them; the URL itself never goes on the wire
            pair = f"{parsed.user or ''}:{parsed.password or ''}".encode()
            head += f"authorization: Basic {base64.b64encode(pair).decode('ascii')}\r\n"
        self.prefix = head.encode("ascii")


class _Connection(asyncio.Protocol):
    """One connection: one request at a time, its answer framed by llhttp as it arrives."""

    def __init__(self, kept: int, lost: Callable[[_Connection], None]) -> None:
        self._limit = kept
        self._lost = lost  # told when the connection is closed (the client forgets it)
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.used = False  # has answered a request before (a kept-alive connection)
        self.idle_since = 0.0
        self.origin: tuple[str, str, int] = ("", "", 0)  # where it is kept when idle
        self._waiter: asyncio.Future[Answer] | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._phase = _HEAD
        self._kept = bytearray()
        self._status = 0
        self._retry_after: str | None = None
        self._head = 0  # bytes of the answer's head(s): status lines and fields
        self._fed = 0  # bytes of the answer fed to the parser
        self._seen = 0  # bytes of body seen
        self._framed = False  # the body is framed by Content-Length or chunked
        self._interim = False
        self._reuse = True
        self._got_any = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._lost(self)
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if self._phase == _UNTIL_CLOSE:
            self._finish()
        elif not self._got_any:
            waiter.set_exception(_Closed())
        else:
            waiter.set_exception(exc or AnswerUnreadable("the answer ended early"))

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def request(self, data: bytes) -> asyncio.Future[Answer]:
        """Send ``data`` (a whole request); the future has the answer (``Answer``)."""
        assert self.transport is not None and self._waiter is None
        self._waiter = asyncio.get_running_loop().create_future()
        self._phase, self._status, self._got_any, self._reuse = _HEAD, 0, False, True
        self._head = self._fed = 0
        self._kept.clear()
        self.transport.write(data)
        return self._waiter

    def data_received(self, data: bytes) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done():  # nothing was asked: the connection is unusable
            self.close()
            return
        self._got_any = True
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as e:
            self.close()  # the answer is unreadable, or bytes follow it
            if self._waiter is not None and not self._waiter.done():
                cause = e.__context__
                if not isinstance(cause, AnswerUnreadable):
                    cause = AnswerUnreadable(f"the answer is not HTTP/1.x as read: {e}")
                self._waiter = None
                waiter.set_exception(cause)
            return
        self._fed += len(data)
        if self._phase == _HEAD:
            if self._fed > MAX_HEAD:
                self._waiter = None
                waiter.set_exception(_head_too_long())
                self.close()
        elif self._fed > _MAX_READ and self._waiter is not None:
            self._reuse = False  # a body's framing and trailers are bounded too
            self._finish()

    # llhttp's callbacks (httptools): an exception raised in one stops the parser

    def on_message_begin(self) -> None:
        if self._phase == _DONE:
            raise _Past  # bytes past the answer: the connection is not reused
        self._framed = self._interim = False
        self._retry_after = None  # an interim answer's is not the answer's

    def on_status(self, reason: bytes) -> None:
        self._head += len(reason) + 15
        if self._head > MAX_HEAD:
            raise _head_too_long()

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._phase != _HEAD:
            return  # a trailer (of a chunked body)
        self._head += len(name) + len(value) + 4
        if self._head > MAX_HEAD:
            raise _head_too_long()
        name = name.lower()
        if name == b"content-length":
            self._framed = True
            if int(value) > MAX_DRAIN:  # a number, as llhttp has checked
                self._reuse = False
        elif name == b"transfer-encoding":  # chunked when its last coding is
            self._framed = value.rpartition(b",")[2].strip().lower() == b"chunked"
        elif name == b"retry-after":
            self._retry_after = value.decode("latin-1").strip(" \t")

    def on_headers_complete(self) -> None:
        parser = self._parser
        status = parser.get_status_code()
        if status < 100 or parser.get_http_version() not in ("1.1", "1.0"):
            raise AnswerUnreadable("the answer's status line is not HTTP/1.x")
        if status < 200:
            if status == 101:
                raise AnswerUnreadable("the peer switched protocols unasked")
            self._interim = True  # an interim answer: the real one follows
            return
        self._status = status
        self._seen = 0
        if not parser.should_keep_alive():
            self._reuse = False
        if self._framed or status in (204, 304):
            self._phase = _BODY
        else:
            self._phase, self._reuse = _UNTIL_CLOSE, False

    def on_body(self, data: bytes) -> None:
        if self._interim:
            raise AnswerUnreadable("an interim answer has a body")
        self._seen += len(data)
        room = self._limit - len(self._kept)
        if room > 0:
            self._kept += data[:room]
        if self._seen > MAX_DRAIN:
            self._reuse = False
        if not self._reuse and len(self._kept) >= self._limit:
            self._finish()  # the rest is not read: the connection is closed
            raise _Past

    def on_message_complete(self) -> None:
        if not self._interim:
            self._finish()

    def _finish(self) -> None:
        waiter, self._waiter = self._waiter, None
        self._phase = _DONE
        if not self._reuse:
            self.close()
        self.used = True
        if waiter is not None and not waiter.done():
            waiter.set_result((self._status, bytes(self._kept), self._retry_after))


def _head_too_long() -> AnswerUnreadable:
    return AnswerUnreadable(f"the answer's head is longer than {MAX_HEAD} bytes")


class Http1Client:
    """POSTs on kept-alive connections; ``check(address)`` says why a target address (an IP
    literal, or each address a name resolves to) is refused, or None."""

    def __init__(
        self,
        *,
        limit: int = 100,
        kept: int = 1024,
        check: Callable[[str], str | None] | None,
        tls: ssl.SSLContext | None = None,
        resolver: HostResolver | None = None,
    ) -> None:
        """``tls``: the context of https connections (by default the system's trusted
        authorities, the host name checked); ``resolver``: how names are resolved (by default
        with the system's name servers and hosts file)."""
        self._resolver = resolver or HostResolver()
        self._limit = limit
        self._kept = kept
        self._check = check
        self._slots = asyncio.Semaphore(limit)
        # idle connections by origin, the last one used last; an origin without one is not
        # kept (a connection leaves when used, closed, or found idle too long by a sweep)
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._open: set[_Connection] = set()
        self._next_sweep = 0.0
        self._targets: dict[str, _Target] = {}
        self._tls = tls

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> Answer:
        """POST ``body`` to ``url``: the answer's status, the first ``kept`` bytes of its
        body and its ``Retry-After``. Raises ``OSError`` (no connection, or a refused address), ``AnswerUnreadable``,
        ``ValueError`` (a URL or header this client does not send)."""
        target = self._targets.get(url)
        if target is None:
            target = _Target(url)
            if len(self._targets) >= _MAX_TARGETS:
                self._targets.clear()
            self._targets[url] = target
        fields = "".join([f"{k}: {v}\r\n" for k, v in headers.items()])
        if fields.count("\n") != len(headers) or fields.count("\r") != len(headers):
            raise ValueError("a header holds a line break")
        data = b"".join(
            (target.prefix, f"{fields}content-length: {len(body)}\r\n\r\n".encode(), body)
        )
        async with self._slots:
            conn = self._reused(target)
            if conn is not None:
                try:
                    return await self._exchange(conn, target, data)
                except _Closed:
                    pass  # closed by the peer while idle: once more on a new connection
            conn = await self._connect(target)
            try:
                return await self._exchange(conn, target, data)
            except _Closed:
                raise ConnectionResetError("the peer closed the connection unanswered") from None

    async def _exchange(self, conn: _Connection, target: _Target, data: bytes) -> Answer:
        try:
            answer = await conn.request(data)
        except BaseException:
            self._drop(conn)
            raise
        if conn.closed:
            self._open.discard(conn)
        else:
            now = asyncio.get_running_loop().time()
            conn.idle_since = now
            conn.origin = target.origin
            self._idle.setdefault(target.origin, []).append(conn)
            if now >= self._next_sweep:
                self._sweep(now)
        return answer

    def _drop(self, conn: _Connection) -> None:
        conn.close()  # its connection_lost, now or soon, calls _forget
        self._forget(conn)

    def _forget(self, conn: _Connection) -> None:
        """``conn`` is closed: neither open nor idle any longer."""
        self._open.discard(conn)
        idle = self._idle.get(conn.origin)
        if idle is not None and conn in idle:
            idle.remove(conn)
            if not idle:
                del self._idle[conn.origin]

    def _sweep(self, now: float) -> None:
        """Close the connections idle for longer than ``IDLE_SECONDS`` (never used again),
        so the origins no delivery went to lately hold nothing; at most once that long."""
        self._next_sweep = now + IDLE_SECONDS
        oldest = now - IDLE_SECONDS
        for idle in list(self._idle.values()):
            for conn in [c for c in idle if c.idle_since <= oldest]:
                self._drop(conn)

    def _reused(self, target: _Target) -> _Connection | None:
        idle = self._idle.get(target.origin)
        oldest = asyncio.get_running_loop().time() - IDLE_SECONDS
        while idle:
            conn = idle.pop()
            if not idle:
                del self._idle[target.origin]
            if not conn.closed and conn.idle_since > oldest:
                return conn
            self._drop(conn)
        return None

    async def _connect(self, target: _Target) -> _Connection:
        while len(self._open) >= self._limit and self._evict():
            pass
        loop = asyncio.get_running_loop()
        addresses = await self._addresses(target)
        tls = self._tls_context() if target.tls else None
        failure: OSError | None = None
        for family, address in addresses:
            try:
                _, conn = await loop.create_connection(
                    lambda: _Connection(self._kept, self._forget),
                    address,
                    target.port,
                    family=family,
                    ssl=tls,
                    server_hostname=target.host if tls else None,
                )
            except OSError as e:
                failure = e
                continue
            self._open.add(conn)
            return conn
        raise failure or OSError(f"{target.host} has no address")

    async def _addresses(self, target: _Target) -> list[tuple[int, str]]:
        host = target.host
        if self._check is not None:
            problem = self._check(host)
            if problem:
                raise OSError(problem)
        found = await self._resolver.addresses(host)
        if self._check is not None:
            found = [(f, a) for f, a in found if self._check(a) is None]
            if not found:
                raise OSError(f"{host} resolves only to addresses not allowed as webhook targets")
        return list(dict.fromkeys(found))

    def _evict(self) -> bool:
        """Close one idle connection (to open another within the limit); False if none."""
        conn = next((idle[0] for idle in self._idle.values()), None)  # none kept empty
        if conn is None:
            return False
        self._drop(conn)
        return True

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    async def aclose(self) -> None:
        for conn in list(self._open):
            self._drop(conn)
        self._idle.clear()
