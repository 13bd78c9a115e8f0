"""Participants: receivers registered in an SMP, reachable through one access point."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import attrs

from fourcorner.domain.network_services import Environment
from fourcorner.domain.organisation import Address, Contact, UserRef


class ParticipantStatus(enum.Enum):
    """``ACTIVE`` once registered in its SMP and, where the environment has an SML configured,
    in the SML; ``PENDING`` while the SML registration is still to be confirmed (it is retried);
    ``FAILED`` when the SML refused it for good (``statusReason`` says why)."""

    ACTIVE = "ACTIVE"
    PENDING = "PENDING"
    FAILED = "FAILED"


class PublicationState(enum.Enum):
    """``PUBLISHED`` once the directory was asked to index the card (``request-pd-publish``);
    ``OUTDATED`` when the card the SMP serves changed since and the directory is still to be
    asked to index it again (``reason``: what the directory answered the last time); the
    workers ask it again, with backoff, until it answers or a number of attempts have gone
    unanswered (``DirectoryRetry``), when it stays ``OUTDATED`` until the card changes again
    or ``request-pd-publish`` asks."""

    NOT_REQUESTED = "NOT_REQUESTED"
    PUBLISHED = "PUBLISHED"
    OUTDATED = "OUTDATED"


@attrs.frozen
class BusinessCard:
    legal_name: str = ""
    legal_identifier: str = ""
    legal_identifier_code: str = ""
    country_code: str = ""
    website: str = ""
    tax_identifier: str = ""
    global_location_number: str = ""
    duns: str = ""
    business_address: Address | None = None
    contacts: tuple[Contact, ...] = ()


@attrs.frozen
class SupportedDocumentType:
    document_id: str
    process_id: str
    exact_match_only: bool = False


@attrs.frozen
class DirectoryPublication:
    state: PublicationState = PublicationState.NOT_REQUESTED
    published_at: datetime | None = None
    # OUTDATED: when the served card last changed, and why the directory was not told yet
    changed_at: datetime | None = None
    reason: str | None = None

    @property
    def in_directory(self) -> bool:
        """Whether the directory was asked to index the card (it may hold an older one)."""
        return self.state is not PublicationState.NOT_REQUESTED

    def card_changed(self, now: datetime) -> DirectoryPublication:
        """The served card changed at ``now``: a card in the directory is outdated."""
        if not self.in_directory:
            return self
        return attrs.evolve(self, state=PublicationState.OUTDATED, changed_at=now, reason=None)

    def reindexed(self, now: datetime) -> DirectoryPublication:
        """The directory was asked at ``now`` to index the current card."""
        return DirectoryPublication(PublicationState.PUBLISHED, now)

    def not_reindexed(self, reason: str) -> DirectoryPublication:
        return attrs.evolve(self, reason=reason)

    def given_up(self, reason: str, attempts: int) -> DirectoryPublication:
        """Not asked again after ``attempts`` unanswered attempts, the last one answered
        ``reason``: the reason says so, and what asks again."""
        then = "not asked again until the card changes or request-pd-publish asks"
        return attrs.evolve(self, reason=f"{reason} (asked {attempts} times; {then})")


# what an OUTDATED publication stored before retries were kept is due at: at once
LONG_AGO = datetime(1970, 1, 1, tzinfo=UTC)


@attrs.frozen
class DirectoryRetry:
    """The service's own bookkeeping of asking the directory again (never shown).

    ``revision`` counts the changes of the served card while it is in the directory, and
    the withdrawals of its identifier's card made for another participant
    (``Participant.card_withdrawn``): an answer the directory gave for an older card, or
    before such a withdrawal, is never recorded over a newer one.
    ``attempts``: how often the directory was asked since that change and did not answer.
    ``due``: when an ``OUTDATED`` publication is asked for next; a worker's claim moves it on
    by its lease, so no other worker asks meanwhile. ``given_up``: the attempts ran out, and
    the workers ask no more (the card's next change, or ``request-pd-publish``, asks)."""

    revision: int = 0
    attempts: int = 0
    due: datetime | None = None
    given_up: bool = False


def retry_delay(delays: Sequence[timedelta], attempts: int) -> timedelta:
    """The wait after ``attempts`` (≥ 1) unanswered attempts: the delays in turn, then the
    last one for every later attempt."""
    return delays[min(max(attempts, 1), len(delays)) - 1]


@attrs.frozen
class Participant:
    id: uuid.UUID
    org_id: uuid.UUID
    name: str
    participant_identifier: str  # as given: "<ICD>:<value>"
    identifier_key: str  # canonical lower-case form: unique per environment
    smp_ref: uuid.UUID
    ap_ref: uuid.UUID
    environment: Environment
    transport_profile: str
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    last_modified_by: UserRef
    business_card: BusinessCard | None = None
    supported_document_types: tuple[SupportedDocumentType, ...] = ()
    status: ParticipantStatus = ParticipantStatus.ACTIVE
    directory: DirectoryPublication = DirectoryPublication()
    warning: str | None = None
    status_reason: str | None = None
    directory_retry: DirectoryRetry = DirectoryRetry()

    @property
    def directory_due(self) -> datetime | None:
        """When the directory is asked again for an ``OUTDATED`` card; None otherwise (and
        once the attempts ran out)."""
        if self.directory.state is not PublicationState.OUTDATED or self.directory_retry.given_up:
            return None
        return self.directory_retry.due or LONG_AGO

    def card_changed(self, now: datetime, wait: timedelta) -> Participant:
        """The served card changed at ``now``: a card in the directory is outdated, to be
        asked for by the change itself, and by a worker after ``wait`` should that not
        have been answered."""
        if not self.directory.in_directory:
            return self
        retry = DirectoryRetry(self.directory_retry.revision + 1, 0, now + wait)
        return attrs.evolve(self, directory=self.directory.card_changed(now), directory_retry=retry)

    def card_withdrawn(self, now: datetime, wait: timedelta) -> Participant:
        """The directory was told at ``now`` to drop the card of this participant's identifier
        (another participant's, deleted, withdrawn again), which may have taken this one's
        away: a card of its own in the directory is to be indexed again, as after a change
        (``card_changed``); the revision moves on in any case, so that a request to index it
        still in flight, which the withdrawal may have undone, sees it (``same_card``) and
        has it asked for again (``indexed_then_withdrawn``)."""
        if self.directory.in_directory:
            return self.card_changed(now, wait)
        retry = attrs.evolve(self.directory_retry, revision=self.directory_retry.revision + 1)
        return attrs.evolve(self, directory_retry=retry)

    def indexed_then_withdrawn(self, now: datetime, wait: timedelta) -> Participant:
        """The directory was asked at ``now`` to index the card, but the revision moved on
        since it was read (``card_withdrawn``): a withdrawal for another participant may have
        taken the card away after it was indexed. In the directory, outdated: to be asked for
        again at once, and by a worker after ``wait`` should that not have been answered."""
        return self.directory_asked(now, None, ()).card_changed(now, wait)

    def directory_claimed(self, until: datetime) -> Participant:
        """Claimed by a worker that asks the directory until ``until`` at most."""
        return attrs.evolve(self, directory_retry=attrs.evolve(self.directory_retry, due=until))

    def same_publication(self, other: Participant) -> bool:
        """Whether nothing of the publication changed from ``other`` (the same participant
        read earlier): no newer card, no other claim, no answer recorded meanwhile."""
        return self.directory == other.directory and self.directory_retry == other.directory_retry

    def same_card(self, other: Participant) -> bool:
        """Whether the card's publication is the one read as ``other`` (the same participant
        read earlier), its card not changed meanwhile: unlike ``same_publication``, a worker's
        claim, which changes neither, may have come between."""
        return (
            self.directory == other.directory
            and self.directory_retry.revision == other.directory_retry.revision
        )

    def directory_asked(
        self,
        now: datetime,
        reason: str | None,
        delays: Sequence[timedelta],
        attempts: int | None = None,
    ) -> Participant:
        """What came of asking the directory at ``now`` to index the card: indexed (no
        ``reason``), else still outdated, asked again after the next of ``delays``; after
        ``attempts`` unanswered attempts since the change (None: no limit), not asked again."""
        revision = self.directory_retry.revision
        if reason is None:
            return attrs.evolve(
                self,
                directory=self.directory.reindexed(now),
                directory_retry=DirectoryRetry(revision),
            )
        failed = self.directory_retry.attempts + 1
        if attempts is not None and failed >= attempts:
            return attrs.evolve(
                self,
                directory=self.directory.given_up(reason, failed),
                directory_retry=DirectoryRetry(revision, failed, given_up=True),
            )
        retry = DirectoryRetry(revision, failed, now + retry_delay(delays, failed))
        return attrs.evolve(
            self, directory=self.directory.not_reindexed(reason), directory_retry=retry
        )
