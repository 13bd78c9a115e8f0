"""Whether a peer's certificate is revoked may not be known when it is checked: its OCSP answer,
or the revocation list of its issuer, is fetched when first needed (``adapters.pki.revocation``).
The certificate checks stay synchronous (they run inside the reading of an AS4 message, maybe
in a worker thread, and inside the SMP lookup's verification); they say "not known" with these
exceptions, which are not ``ValueError`` (the checks' "refused"), so that no caller takes them
for a certificate refused for good. The asynchronous callers (the AS4 endpoint, the SMP
lookup) wait once, a bounded time, with ``settled``, and turn a status that stays unknown into
a failure the other side may try again after."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


class CertificateStatusUnknown(Exception):
    """Whether the certificate is revoked cannot be told: neither its OCSP answer nor its
    issuer's revocation list could be fetched (yet). Refused for now; trying again later may succeed. ``reason`` says
    why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CertificateStatusPending(CertificateStatusUnknown):
    """The OCSP answer or revocation list is being fetched: ``ready()`` waits until it has
    come in, for a bounded time; checking again then answers (by the revocation policy when it has not
    come in)."""

    def __init__(self, reason: str, ready: Callable[[], Awaitable[None]]) -> None:
        super().__init__(reason)
        self.ready = ready


async def settled(attempt: Callable[[], Awaitable[T]]) -> T:
    """``attempt()``, and once more after waiting for what it lacked when it raised
    ``CertificateStatusPending``. Raised again, the caller gets it as the
    ``CertificateStatusUnknown`` it is."""
    try:
        return await attempt()
    except CertificateStatusPending as pending:
        await pending.ready()
    return await attempt()


def most_hopeful(unknown: Sequence[CertificateStatusUnknown]) -> CertificateStatusUnknown:
    """What to raise for several certificates none of which could be used, these because
    their status is not known: the ``CertificateStatusPending`` of all those pending, whose
    ``ready()`` waits for them at once (no longer than the longest one's wait), else the
    first ``CertificateStatusUnknown``."""
    pending = [e for e in unknown if isinstance(e, CertificateStatusPending)]
    if len(pending) == 1:
        return pending[0]
    if not pending:
        return unknown[0]

    async def ready() -> None:
        await asyncio.gather(*(p.ready() for p in pending))

    return CertificateStatusPending(pending[0].reason, ready)
