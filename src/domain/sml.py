"""Registrations in the network's service metadata locator (SML): what the built-in SMP asks
the SML of each environment to do, kept as an outbox of tasks.

One task per subject and environment: the SMP itself (``REGISTER_SMP``: create or update its
entry), or one participant identifier (``CREATE``, ``MIGRATE`` with a key from its former SMP,
``DELETE``). A task is ``PENDING`` until the SML confirmed it (``DONE``) or refused it for good
(``FAILED``). A participant's ``CREATE``/``MIGRATE`` task stays ``DONE`` as the record that the
SML has it; a ``DONE`` ``DELETE`` is removed. A later wish for the same subject replaces the
task and raises its ``generation``, so an attempt that ran meanwhile does not record its outcome
over the newer wish.
"""

from __future__ import annotations

import enum
import string
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import attrs

from fourcorner.domain.network_services import Environment

NO_LEASE = datetime(2000, 1, 1, tzinfo=UTC)
TASK_NAMESPACE = uuid.UUID("6d1f3a2e-5b7c-4c0d-9e8f-a1b2c3d4e5f6")
# Transient failures are retried for as long as it takes, ever more slowly, at most hourly.
FIRST_DELAY = timedelta(seconds=30)
MAX_DELAY = timedelta(hours=1)


class LocatorOperation(enum.Enum):
    REGISTER_SMP = "REGISTER_SMP"
    CREATE = "CREATE"
    MIGRATE = "MIGRATE"
    DELETE = "DELETE"


class LocatorState(enum.Enum):
    PENDING = "PENDING"
    DONE = "DONE"
    FAILED = "FAILED"


@attrs.frozen
class LocatorTask:
    id: uuid.UUID
    environment: Environment
    operation: LocatorOperation
    subject: str  # the participant's canonical identifier ("0088:579..."), or the SMP id
    created_at: datetime
    last_modified_at: datetime
    state: LocatorState = LocatorState.PENDING
    participant_id: uuid.UUID | None = None
    smp_url: str = ""  # REGISTER_SMP: the SMP's public URL
    sealed_key: str = ""  # MIGRATE: the migration key, sealed for this record
    attempts: int = 0
    next_attempt_at: datetime = NO_LEASE
    lease_until: datetime = NO_LEASE
    last_error: str = ""
    generation: int = 0

    @staticmethod
    def id_for(environment: Environment, subject: str | None) -> uuid.UUID:
        """The task of a participant (``subject``: its canonical identifier) or, for None, of
        the SMP itself, in ``environment``."""
        what = "smp" if subject is None else f"participant|{subject.lower()}"
        return uuid.uuid5(TASK_NAMESPACE, f"{environment.value}|{what}")

    @property
    def is_participant(self) -> bool:
        return self.operation is not LocatorOperation.REGISTER_SMP

    def claimed(self, now: datetime, lease: timedelta) -> LocatorTask:
        return attrs.evolve(self, attempts=self.attempts + 1, lease_until=now + lease)

    def retried(self, now: datetime, error: str) -> LocatorTask:
        """After a transient failure: due again after a delay growing with the attempts."""
        doublings = min(max(self.attempts - 1, 0), 20)  # beyond that the cap holds anyway
        delay = min(FIRST_DELAY * 2**doublings, MAX_DELAY)
        return attrs.evolve(
            self,
            next_attempt_at=now + delay,
            lease_until=NO_LEASE,
            last_error=error,
            last_modified_at=now,
        )

    def done(self, now: datetime) -> LocatorTask:
        return attrs.evolve(
            self,
            state=LocatorState.DONE,
            lease_until=NO_LEASE,
            last_error="",
            sealed_key="",
            last_modified_at=now,
        )

    def failed(self, now: datetime, error: str) -> LocatorTask:
        return attrs.evolve(
            self,
            state=LocatorState.FAILED,
            lease_until=NO_LEASE,
            last_error=error,
            sealed_key="",
            last_modified_at=now,
        )

    def replaced(
        self, operation: LocatorOperation, now: datetime, **changes: object
    ) -> LocatorTask:
        """The task for a new wish about the same subject, due now."""
        return attrs.evolve(
            self,
            operation=operation,
            state=LocatorState.PENDING,
            attempts=0,
            next_attempt_at=now,
            lease_until=NO_LEASE,
            last_error="",
            generation=self.generation + 1,
            last_modified_at=now,
            **changes,  # type: ignore[arg-type]
        )


# Migration keys as the SML accepts them: 8 to 24 characters with at least two each of upper
# case letters, lower case letters, digits and these special characters.
KEY_SPECIALS = "@#$%()[]{}*^-!~|+="
KEY_LENGTH = 24
_KEY_CLASSES = (string.ascii_uppercase, string.ascii_lowercase, string.digits, KEY_SPECIALS)


def new_migration_key(choose: Callable[[str], str], shuffle: Callable[[list[str]], None]) -> str:
    """A migration key of ``KEY_LENGTH`` characters meeting ``migration_key_problem``;
    ``choose`` picks one character of a string, ``shuffle`` shuffles a list in place (pass
    ``secrets.choice`` and ``secrets.SystemRandom().shuffle``)."""
    chars = [choose(c) for c in _KEY_CLASSES for _ in range(2)]
    alphabet = "".join(_KEY_CLASSES)
    chars += [choose(alphabet) for _ in range(KEY_LENGTH - len(chars))]
    shuffle(chars)
    return "".join(chars)


def migration_key_problem(key: str) -> str | None:
    """Why ``key`` is not a migration key the SML takes, or None."""
    if not 8 <= len(key) <= KEY_LENGTH:
        return f"a migration key has 8 to {KEY_LENGTH} characters"
    allowed = set("".join(_KEY_CLASSES))
    if any(c not in allowed for c in key):
        return f"a migration key has letters, digits and the characters {KEY_SPECIALS} only"
    if any(sum(c in cls for c in key) < 2 for cls in _KEY_CLASSES):
        return (
            "a migration key has at least two each of upper case letters, lower case "
            f"letters, digits and the characters {KEY_SPECIALS}"
        )
    return None
