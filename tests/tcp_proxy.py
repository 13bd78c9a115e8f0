"""A TCP proxy in front of PostgreSQL for fault injection: cut, its port is closed (a new
connection is refused) and the connections it carried are dropped, as when the database goes
away; restored, it listens on the same port again."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit, urlunsplit


class Proxy:
    """Forwards TCP connections to ``target`` until ``cut``; ``restore`` listens again. It
    runs on the event loop it was started on: nothing there may block while it is needed."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0  # chosen by the system when first listening
        self.server: asyncio.Server | None = None
        self.pipes: set[asyncio.StreamWriter] = set()

    @classmethod
    def before(cls, url: str) -> Proxy:
        """A proxy (not listening yet) in front of the server of the PostgreSQL ``url``."""
        parts = urlsplit(url)
        return cls((parts.hostname or "127.0.0.1", parts.port or 5432))

    def url(self, url: str) -> str:
        """The PostgreSQL ``url`` with this proxy's address in place of the server's."""
        parts = urlsplit(url)
        user = parts.netloc.rpartition("@")[0]
        netloc = f"{user}@127.0.0.1:{self.port}" if user else f"127.0.0.1:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc))

    async def restore(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None
        for w in list(self.pipes):
            w.close()
        self.pipes.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self.pipes |= {writer, up_writer}

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
