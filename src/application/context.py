"""What every use case needs: storage, time, new ids and the reference data."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

import attrs

from application.storage import UnitOfWorkFactory


class LegalIdentifierRules(Protocol):
    """Checks an organisation's legal identifier against its scheme (the catalogue does this)."""

    def validate_legal_identifier(self, code: str, identifier: str) -> tuple[Any, str]:
        """Return (scheme record with ``iso6523``, normalised identifier) or raise."""
        ...


def system_clock() -> datetime:
    return datetime.now(UTC)


@attrs.frozen
class Context:
    uow: UnitOfWorkFactory
    identifiers: LegalIdentifierRules
    clock: Callable[[], datetime] = system_clock
    new_id: Callable[[], uuid.UUID] = uuid.uuid4
