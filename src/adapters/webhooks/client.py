"""A small HTTP/1.1 client for webhook deliveries: a POST and the start of its answer.

aiohttp's client costs about 485k instructions a request; a delivery needs far less of it:
one request on a kept-alive connection, written at once, and an answer of which only the
status and the first bytes of the body are kept. This client does that on an
``asyncio.Protocol``: connections kept alive per origin (scheme, host, port), at most
``limit`` open at once, each idle one closed after ``IDLE_SECONDS``; the request written in one
call; the answer read by its framing (``Content-Length``, chunked, or until the peer closes).

Bounds: the answer's head has at most ``MAX_HEAD`` bytes; of its body ``kept`` bytes are held
and the rest only counted; a body of more than ``MAX_DRAIN`` bytes (or one that lasts until
the connection closes) is not read to its end: the connection is closed instead of kept.
Time is the caller's to bound (``asyncio.timeout``). A connection is chosen after DNS, each
address checked by ``check``, so a name that resolves to a refused address (DNS rebinding) is
refused too; a kept-alive connection that the peer closed before answering is tried once more
on a new connection (a delivery may arrive twice: webhooks are at least once).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Callable, Mapping

import yarl

MAX_HEAD = 64 * 1024
MAX_DRAIN = 64 * 1024
IDLE_SECONDS = 15.0
_MAX_TARGETS = 10_000  # parsed URLs kept

_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILERS, _UNTIL_CLOSE = range(7)


class AnswerUnreadable(Exception):
    """The peer's answer is not HTTP/1.x as this client reads it."""


class _Closed(Exception):
    """The peer closed the connection before it answered."""


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
        self.prefix = f"POST {path} HTTP/1.1\r\nhost: {host}\r\n".encode("ascii")


class _Connection(asyncio.Protocol):
    """One connection: one request at a time, its answer read as it arrives."""

    def __init__(self, kept: int) -> None:
        self._limit = kept
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.used = False  # has answered a request before (a kept-alive connection)
        self.idle_since = 0.0
        self._waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self._state = _HEAD
        self._buf = bytearray()
        self._kept = bytearray()
        self._status = 0
        self._left = 0  # bytes left of the body, or of the current chunk
        self._seen = 0  # bytes of body seen
        self._reuse = True
        self._got_any = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if self._state == _UNTIL_CLOSE:
            self._finish()
        elif not self._got_any:
            waiter.set_exception(_Closed())
        else:
            waiter.set_exception(exc or AnswerUnreadable("the answer ended early"))

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def request(self, data: bytes) -> asyncio.Future[tuple[int, bytes]]:
        """Send ``data`` (a whole request); the future has the answer's status and kept
        bytes."""
        assert self.transport is not None and self._waiter is None
        self._waiter = asyncio.get_running_loop().create_future()
        self._state, self._status, self._got_any, self._reuse = _HEAD, 0, False, True
        self._buf.clear()
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
            self._feed(data)
        except AnswerUnreadable as e:
            self._waiter = None
            waiter.set_exception(e)
            self.close()

    def _feed(self, data: bytes) -> None:
        if self._state == _HEAD:
            self._buf += data
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buf) > MAX_HEAD:
                    raise AnswerUnreadable(f"the answer's head is longer than {MAX_HEAD} bytes")
                return
            if end > MAX_HEAD:
                raise AnswerUnreadable(f"the answer's head is longer than {MAX_HEAD} bytes")
            head, rest = bytes(self._buf[:end]), bytes(self._buf[end + 4 :])
            self._buf.clear()
            if self._head(head):  # an interim answer (1xx): the real one follows
                self._state = _HEAD
                if rest:
                    self._feed(rest)
                return
            if self._state == _LENGTH and self._left == 0:
                self._finish()
                return
            data = rest
            if not data:
                return
        if self._state in (_LENGTH, _UNTIL_CLOSE):
            if self._state == _LENGTH:
                if len(data) > self._left:  # more than was declared: do not reuse
                    self._reuse = False
                    data = data[: self._left]
                self._left -= len(data)
            self._body(data)
            done = self._state == _LENGTH and self._left == 0
            if done or (not self._reuse and len(self._kept) >= self._limit):
                self._finish()
            return
        self._buf += data
        self._chunks()

    def _head(self, head: bytes) -> bool:
        """Read the answer's head; True for an interim (1xx) answer."""
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or len(parts[1]) != 3:
            raise AnswerUnreadable("the answer's status line is not HTTP/1.x")
        try:
            status = int(parts[1])
        except ValueError:
            raise AnswerUnreadable("the answer's status is not a number") from None
        if status < 100:
            raise AnswerUnreadable("the answer's status is not a number")
        if status < 200:
            if status == 101:
                raise AnswerUnreadable("the peer switched protocols unasked")
            return True
        self._status = status
        length: int | None = None
        chunked = False
        self._reuse = parts[0] == b"HTTP/1.1"
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon:
                raise AnswerUnreadable("a header line of the answer has no colon")
            name = name.strip().lower()
            if name == b"content-length":
                text = value.strip()
                if not text.isdigit() or (length is not None and int(text) != length):
                    raise AnswerUnreadable("the answer's Content-Length is not one number")
                length = int(text)
            elif name == b"transfer-encoding":
                codings = [c.strip() for c in value.lower().split(b",")]
                chunked = codings[-1] == b"chunked"
                if not chunked:
                    length = None
            elif name == b"connection" and b"close" in value.lower():
                self._reuse = False
        if status in (204, 304):
            self._state, self._left = _LENGTH, 0
        elif chunked:
            self._state, self._left = _CHUNK_SIZE, 0
        elif length is not None:
            self._state, self._left = _LENGTH, length
            if length > MAX_DRAIN:
                self._reuse = False
        else:
            self._state, self._reuse = _UNTIL_CLOSE, False
        self._seen = 0
        return False

    def _body(self, data: bytes) -> None:
        self._seen += len(data)
        room = self._limit - len(self._kept)
        if room > 0:
            self._kept += data[:room]
        if self._seen > MAX_DRAIN:
            self._reuse = False

    def _chunks(self) -> None:
        buf = self._buf
        while True:
            if self._state == _CHUNK_DATA:
                piece = bytes(buf[: self._left])
                del buf[: len(piece)]
                self._left -= len(piece)
                self._body(piece)
                if not self._reuse and len(self._kept) >= self._limit:
                    self._finish()
                    return
                if self._left:
                    return
                self._state = _CHUNK_END
            end = buf.find(b"\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD:
                    raise AnswerUnreadable("a chunk of the answer is framed wrongly")
                return
            line = bytes(buf[:end])
            del buf[: end + 2]
            if self._state == _CHUNK_END:
                if line:
                    raise AnswerUnreadable("a chunk of the answer is framed wrongly")
                self._state = _CHUNK_SIZE
            elif self._state == _CHUNK_SIZE:
                size = line.split(b";", 1)[0].strip()
                try:
                    self._left = int(size, 16)
                except ValueError:
                    raise AnswerUnreadable("a chunk of the answer is framed wrongly") from None
                if self._left < 0:
                    raise AnswerUnreadable("a chunk of the answer is framed wrongly")
                self._state = _CHUNK_DATA if self._left else _TRAILERS
            elif not line:  # _TRAILERS, ended by an empty line
                self._finish()
                return

    def _finish(self) -> None:
        waiter, self._waiter = self._waiter, None
        if self._buf:  # bytes past the answer: the connection is not reused
            self._reuse = False
        if not self._reuse:
            self.close()
        self.used = True
        if waiter is not None and not waiter.done():
            waiter.set_result((self._status, bytes(self._kept)))


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
    ) -> None:
        """``tls``: the context of https connections (by default the system's trusted
        authorities, the host name checked)."""
        self._limit = limit
        self._kept = kept
        self._check = check
        self._slots = asyncio.Semaphore(limit)
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._open: set[_Connection] = set()
        self._targets: dict[str, _Target] = {}
        self._tls = tls

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> tuple[int, bytes]:
        """POST ``body`` to ``url``: the answer's status and the first ``kept`` bytes of its
        body. Raises ``OSError`` (no connection, or a refused address), ``AnswerUnreadable``,
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

    async def _exchange(self, conn: _Connection, target: _Target, data: bytes) -> tuple[int, bytes]:
        try:
            answer = await conn.request(data)
        except BaseException:
            self._drop(conn)
            raise
        if conn.closed:
            self._open.discard(conn)
        else:
            conn.idle_since = asyncio.get_running_loop().time()
            self._idle.setdefault(target.origin, []).append(conn)
        return answer

    def _drop(self, conn: _Connection) -> None:
        conn.close()
        self._open.discard(conn)

    def _reused(self, target: _Target) -> _Connection | None:
        idle = self._idle.get(target.origin)
        oldest = asyncio.get_running_loop().time() - IDLE_SECONDS
        while idle:
            conn = idle.pop()
            if not conn.closed and conn.idle_since > oldest:
                return conn
            self._drop(conn)
        return None

    async def _connect(self, target: _Target) -> _Connection:
        while len(self._open) >= self._limit and self._evict():
            pass
        loop = asyncio.get_running_loop()
        addresses = await self._addresses(loop, target)
        tls = self._tls_context() if target.tls else None
        failure: OSError | None = None
        for family, address in addresses:
            try:
                _, conn = await loop.create_connection(
                    lambda: _Connection(self._kept),
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

    async def _addresses(
        self, loop: asyncio.AbstractEventLoop, target: _Target
    ) -> list[tuple[int, str]]:
        host = target.host
        if self._check is not None:
            problem = self._check(host)
            if problem:
                raise OSError(problem)
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            pass
        else:
            return [(socket.AF_INET6 if literal.version == 6 else socket.AF_INET, host)]
        infos = await loop.getaddrinfo(host, target.port, type=socket.SOCK_STREAM)
        found = [(int(family), str(address[0])) for family, _, _, _, address in infos]
        if self._check is not None:
            found = [(f, a) for f, a in found if self._check(a) is None]
            if not found:
                raise OSError(f"{host} resolves only to addresses not allowed as webhook targets")
        return list(dict.fromkeys(found))

    def _evict(self) -> bool:
        """Close one idle connection (to open another within the limit); False if none."""
        for idle in self._idle.values():
            if idle:
                self._drop(idle.pop(0))
                return True
        return False

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    async def aclose(self) -> None:
        for conn in list(self._open):
            self._drop(conn)
        self._idle.clear()
