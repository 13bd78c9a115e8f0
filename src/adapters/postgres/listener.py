"""The PostgreSQL adapter's notifications: what one process's commits tell the others.

A commit that wrote a cached collection, or added records to an announced one, sends
``pg_notify`` on the ``fourcorner_records`` channel in its transaction (pipelined with
``COMMIT``, so no extra round trip). Every process keeps one listener connection (``LISTEN``,
TCP keepalives on) that clears the named collections from its ``RecordCache`` and wakes the
watchers of the collections added to. While the listener is down the cache is suspended, and
it reconnects with a growing pause.

A notification is input (any role that can connect may send one): one whose payload is not
``<schema>:<sender>:<collections>:<collections>`` is ignored, and one whose handling fails is
logged (once per kind of failure) and the next one heard; whatever else ends the connection's
loop is logged and the listener reconnects, so it runs until ``stop``, which never raises.

Once ``share_failures`` is called (before the storage opens), the listener also sends this
process's failed authentications and hears the others' on the ``fourcorner_failures`` channel
(``failures``): it then waits for notifications at most ``failures.EVERY`` seconds at a time,
and sends what gathered meanwhile on its own connection (no connection of the pool).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence

import psycopg

from fourcorner.adapters.changes import Watchers
from fourcorner.adapters.postgres import failures
from fourcorner.adapters.postgres.connection import connect_kwargs
from fourcorner.adapters.sql.cache import RecordCache

CHANNEL = "fourcorner_records"
NOTIFY = "SELECT pg_notify(%s, %s)"
log = logging.getLogger("fourcorner.storage")

_CHANGE = re.compile(r"[0-9a-f]{12}:[0-9a-z_,]*:[0-9a-z_,]*")
"""What follows the schema in a payload ``payload`` writes: the sender, the collections."""


class Listener:
    """The listener of one storage: the connection at ``url``, for the storage's ``schema``."""

    def __init__(
        self,
        url: str,
        schema: str | None,
        *,
        timeout: float,
        cache: RecordCache | None,
        watchers: Watchers,
    ) -> None:
        self._url = url
        self._schema = schema
        self._timeout = timeout
        self._cache = cache
        self._watchers = watchers
        self._sender = uuid.uuid4().hex[:12]
        self._listening = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failures: failures.FailureShare | None = None
        self._logged: set[str] = set()

    @property
    def listening(self) -> bool:
        return self._listening.is_set()

    async def wait_listening(self) -> None:
        await self._listening.wait()

    def payload(self, cleared: set[str], woken: set[str]) -> str:
        """``<schema>:<sender>:<collections to clear>:<collections added to>``: listeners of
        other schemas ignore it, and so does this storage's own (it acted at commit)."""
        return (
            f"{self._schema or ''}:{self._sender}:"
            f"{','.join(sorted(cleared))}:{','.join(sorted(woken))}"
        )

    def share_failures(
        self, heard: Callable[[Mapping[str, int]], None], keys: Sequence[bytes]
    ) -> Callable[[Iterable[str]], None]:
        """Hear the failed authentications of the other processes of this schema (``heard``
        is given each notification's key to count), and share this process's: the function
        returned takes the keys of one failure (memory only; the listener sends them).
        ``keys`` authenticate the notifications (``failures.FailureShare``)."""
        if self._task is not None:
            raise RuntimeError("failures are shared from the listener's start on")
        self._failures = failures.FailureShare(self._schema, self._sender, heard, keys)
        return self._failures.failed

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._listen())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                try:
                    await task
                except Exception:  # the task logs its failures and goes on; should one escape
                    log.exception("the record cache's listener had failed")

    async def _listen(self) -> None:
        """Clear cached collections as other processes' commits are announced (and, sharing
        failures, hear the others' and send this process's every ``failures.EVERY`` seconds);
        reconnect with a growing pause when the connection fails, the cache (and the sharing)
        suspended meanwhile."""
        cache = self._cache
        pause = 0.1
        kwargs = connect_kwargs(self._schema) | {
            "keepalives": 1,
            "keepalives_idle": 5,
            "keepalives_interval": 2,
            "keepalives_count": 2,
            "application_name": f"fourcorner-listener:{self._schema or ''}",
        }
        schema = f"{self._schema or ''}:"
        own = f"{schema}{self._sender}:"
        shared = self._failures
        # without failures to send, a wait ends with a notification only
        wait = failures.EVERY if shared is not None else None
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self._url, connect_timeout=max(1, int(self._timeout)), **kwargs
                )
                async with conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    if shared is not None:
                        await conn.execute(f"LISTEN {failures.CHANNEL}")
                        shared.resume()
                    if cache is not None:
                        cache.resume()
                    self._listening.set()
                    pause = 0.1
                    while True:
                        async for note in conn.notifies(timeout=wait):
                            try:
                                self._notified(note.channel, note.payload, schema, own)
                            except Exception as e:
                                self._log_once(
                                    type(e).__name__, f"a notification's handling failed: {e!r}"
                                )
                        payloads = shared.take() if shared is not None else []
                        if payloads:  # one round trip for the batch
                            async with conn.pipeline():
                                for sent in payloads:
                                    await conn.execute(NOTIFY, (failures.CHANNEL, sent))
            except (psycopg.Error, OSError) as e:
                log.warning("the record cache's listener lost its connection: %s", e)
            except Exception:
                log.exception("the record cache's listener failed; it reconnects")
            finally:
                self._listening.clear()
                if cache is not None:
                    cache.suspend()
                if shared is not None:
                    shared.suspend()
            await asyncio.sleep(pause)
            pause = min(pause * 2, 5.0)

    def _notified(self, channel: str, payload: str, schema: str, own: str) -> None:
        """One notification heard: another process's failures, or a commit of another process
        of this schema (``schema`` and ``own`` are the prefixes of this storage's payloads and
        of this process's)."""
        if channel != CHANNEL:
            if self._failures is not None:
                self._failures.hear(payload)
            return
        if not payload.startswith(schema) or payload.startswith(own):
            return
        change = payload[len(schema) :]
        if not _CHANGE.fullmatch(change):
            self._log_once("malformed", "a notification of commits was ignored: malformed")
            return
        _, cleared, woken = change.split(":")
        if self._cache is not None and cleared:
            self._cache.invalidate(cleared.split(","))
        if woken:
            self._watchers.changed(woken.split(","))

    def _log_once(self, kind: str, message: str) -> None:
        """Log ``message`` the first time a notification fails this ``kind`` of way (anyone
        able to connect can send many: the log stays bounded)."""
        if kind not in self._logged and len(self._logged) < 32:
            self._logged.add(kind)
            log.warning("%s (%s; not logged again)", message, kind)
