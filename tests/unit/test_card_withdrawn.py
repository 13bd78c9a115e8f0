"""A participant marked because its identifier's card was withdrawn for another (deleted)
participant (``Participant.card_withdrawn``), and a request to index its card that finds it
so marked (``indexed_then_withdrawn``): whatever the publication, the revision moves on, so a
request or a retry read before the mark records nothing over it; a card in the directory is
outdated and due for asking again; one never asked for stays so."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import attrs
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.domain.network_services import Environment
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.participant import (
    DirectoryPublication,
    DirectoryRetry,
    Participant,
    PublicationState,
)

T0 = datetime(2026, 1, 2, tzinfo=UTC)
ME = UserRef("alice")
BASE = Participant(
    uuid.uuid4(), uuid.uuid4(), "ACME", "0088:7300010000001", "0088:7300010000001",
    uuid.uuid4(), uuid.uuid4(), Environment.TEST, "net-transport-as4-v2_0", T0, ME, T0, ME,
)  # fmt: skip
MOMENTS = st.datetimes(
    min_value=datetime(2026, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
)
PARTICIPANTS = st.builds(
    lambda directory, retry: attrs.evolve(BASE, directory=directory, directory_retry=retry),
    st.builds(
        DirectoryPublication,
        st.sampled_from(PublicationState),
        st.none() | MOMENTS,
        st.none() | MOMENTS,
        st.none() | st.text(max_size=5),
    ),
    st.builds(
        DirectoryRetry,
        st.integers(0, 10**6),
        st.integers(0, 20),
        st.none() | MOMENTS,
        st.booleans(),
    ),
)
WAITS = st.integers(1, 3600).map(lambda s: timedelta(seconds=s))


@given(PARTICIPANTS, MOMENTS, WAITS)
def test_a_withdrawal_moves_the_revision_on_and_outdates_a_card_in_the_directory(
    p: Participant, now: datetime, wait: timedelta
) -> None:
    marked = p.card_withdrawn(now, wait)
    assert not marked.same_card(p) and not marked.same_publication(p)
    assert marked.directory_retry.revision == p.directory_retry.revision + 1
    if p.directory.in_directory:
        assert marked.directory.state is PublicationState.OUTDATED
        assert marked.directory_due == now + wait
    else:  # never asked for: nothing to index again
        assert marked.directory == p.directory and marked.directory_due is None


@given(PARTICIPANTS, MOMENTS, WAITS)
def test_a_card_indexed_before_a_withdrawal_is_outdated_and_asked_for_again(
    p: Participant, now: datetime, wait: timedelta
) -> None:
    read = attrs.evolve(p, directory=DirectoryPublication())  # as the request read it
    marked = read.card_withdrawn(now, wait)
    asked = marked.indexed_then_withdrawn(now, wait)
    assert asked.directory.in_directory and asked.directory.state is PublicationState.OUTDATED
    assert asked.directory_due == now + wait
    assert not asked.same_card(marked) and not asked.same_card(read)
