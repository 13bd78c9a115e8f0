"""Memoises verified tokens, so that a request whose token was seen before costs a dict lookup."""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime

from fourcorner.adapters.auth.claim import Clock, now_from, system_clock
from fourcorner.application.identity import Identity, TokenVerifier
from fourcorner.domain.clock import utc


class CachingTokenVerifier:
    """A ``TokenVerifier`` in front of another one.

    A successful verification is remembered by token string until the token's ``expires_at``,
    never past it; an identity without ``expires_at`` is not remembered, and neither is a
    refusal. At most ``max_entries`` tokens are kept, the least recently used going first.
    """

    def __init__(
        self,
        inner: TokenVerifier,
        *,
        max_entries: int = 10_000,
        clock: Clock | None = None,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._inner = inner
        self._max_entries = max_entries
        self._clock: Clock = clock or system_clock
        self._entries: OrderedDict[str, tuple[Identity, datetime]] = OrderedDict()

    @property
    def inner(self) -> TokenVerifier:
        return self._inner

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    async def verify(self, token: str) -> Identity:
        entry = self._entries.get(token)
        if entry is not None:
            identity, expires_at = entry
            if now_from(self._clock) < expires_at:
                self._entries.move_to_end(token)
                return identity
            del self._entries[token]
        identity = await self._inner.verify(token)
        if identity.expires_at is not None:
            expires_at = utc(identity.expires_at)
            if now_from(self._clock) < expires_at:
                self._entries[token] = (identity, expires_at)
                self._entries.move_to_end(token)
                while len(self._entries) > self._max_entries:
                    self._entries.popitem(last=False)
        return identity

    async def aclose(self) -> None:
        """Closes the inner verifier when it has an ``aclose`` (the OIDC verifier's session)."""
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()
