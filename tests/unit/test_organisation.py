"""The mode-change rule (AT-1120) and the superadmin's mode setting."""

from datetime import UTC, datetime

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.domain.errors import (
    InvalidInput,
    ModeChangeNeedsBusinessContact,
    ModeChangeToCurrentMode,
    NoModeChangePending,
)
from fourcorner.domain.organisation import Contact, ContactType, Mode, Organisation
from records import organisation

NOW = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)


def org(**changes) -> Organisation:
    return attrs.evolve(organisation(), **{"shared_mode_enabled": True, **changes})


contacts = st.lists(
    st.builds(Contact, contact_type=st.sampled_from(list(ContactType))), max_size=4
).map(tuple)
modes = st.sampled_from(list(Mode))


@given(contacts, modes, modes)
def test_a_request_is_recorded_exactly_when_a_business_contact_exists(cs, current, wanted):
    o = org(contacts=cs, organisation_mode=current)
    has_business = any(c.contact_type is ContactType.BUSINESS for c in cs)
    if wanted is Mode.DEMO:  # never a request: only WHITELABEL and SHARED are
        with pytest.raises(InvalidInput) as refused:
            o.request_mode_change(wanted)
        assert [d.field for d in refused.value.details()] == ["$.modeChangeRequest"]
    elif wanted is current:
        with pytest.raises(ModeChangeToCurrentMode):
            o.request_mode_change(wanted)
    elif not has_business:
        with pytest.raises(ModeChangeNeedsBusinessContact) as e:
            o.request_mode_change(wanted)
        assert e.value.code == "AT-1120"
    else:
        after = o.request_mode_change(wanted)
        assert after.mode_change_request is wanted
        assert after.organisation_mode is current  # the mode itself is unchanged


def test_a_superadmin_grants_a_pending_request_and_the_request_is_cleared():
    business = Contact(name="B", contact_type=ContactType.BUSINESS)
    o = org(contacts=(business,)).request_mode_change(Mode.WHITELABEL)
    granted = o.set_mode(Mode.WHITELABEL)
    assert granted.organisation_mode is Mode.WHITELABEL
    assert granted.mode_change_request is None
    assert granted.shared_mode_enabled is False  # whitelabel lifts the shared-only restriction


def test_shared_mode_keeps_the_shared_restriction():
    business = Contact(name="B", contact_type=ContactType.BUSINESS)
    o = org(contacts=(business,)).request_mode_change(Mode.SHARED)
    assert o.set_mode(Mode.SHARED).shared_mode_enabled is True


@given(st.booleans(), modes, st.sampled_from([Mode.WHITELABEL, Mode.SHARED]), modes)
def test_shared_mode_enabled_follows_the_granted_mode(shared, current, wanted, granted):
    """WHITELABEL lifts the shared-only restriction, SHARED puts it back, DEMO keeps it."""
    business = Contact(name="B", contact_type=ContactType.BUSINESS)
    o = org(contacts=(business,), organisation_mode=current, shared_mode_enabled=shared)
    if wanted is current:
        return
    after = o.request_mode_change(wanted).set_mode(granted)
    assert after.organisation_mode is granted and after.mode_change_request is None
    expected = {Mode.WHITELABEL: False, Mode.SHARED: True, Mode.DEMO: shared}[granted]
    assert after.shared_mode_enabled is expected


def test_whitelabel_then_shared_restores_the_shared_restriction():
    business = Contact(name="B", contact_type=ContactType.BUSINESS)
    o = org(contacts=(business,)).request_mode_change(Mode.WHITELABEL).set_mode(Mode.WHITELABEL)
    assert o.shared_mode_enabled is False
    o = o.request_mode_change(Mode.SHARED).set_mode(Mode.SHARED)
    assert o.organisation_mode is Mode.SHARED and o.shared_mode_enabled is True


def test_the_mode_does_not_change_without_a_pending_request():
    with pytest.raises(NoModeChangePending):
        org().set_mode(Mode.WHITELABEL)
    assert org().set_mode(Mode.DEMO).organisation_mode is Mode.DEMO  # same mode: a no-op


@given(contacts, modes, st.sampled_from([None, Mode.WHITELABEL, Mode.SHARED]))
def test_a_withdrawn_request_leaves_nothing_pending_and_the_mode_as_it_was(cs, current, pending):
    """Withdrawing needs no BUSINESS contact, and is a no-op when nothing is pending."""
    o = org(contacts=cs, organisation_mode=current, mode_change_request=pending)
    after = o.withdraw_mode_change()
    assert after.mode_change_request is None
    assert attrs.evolve(after, mode_change_request=pending) == o
    with pytest.raises(NoModeChangePending):
        after.set_mode(Mode.WHITELABEL if current is not Mode.WHITELABEL else Mode.SHARED)


requests = st.sampled_from([None, Mode.WHITELABEL, Mode.SHARED])


def has_business(cs: tuple[Contact, ...]) -> bool:
    return any(c.contact_type is ContactType.BUSINESS for c in cs)


@given(contacts, modes, requests)
def test_a_pending_request_needs_a_business_contact_whatever_changed(cs, current, pending):
    """AT-1120 holds after every change: an organisation with a request pending and no
    BUSINESS contact (its last one removed, say) is refused; with nothing pending, any
    contacts do."""
    o = org(contacts=cs, organisation_mode=current, mode_change_request=pending)
    if pending is not None and not has_business(cs):
        with pytest.raises(ModeChangeNeedsBusinessContact) as e:
            o.check_pending_request()
        assert e.value.code == "AT-1120"
    else:
        o.check_pending_request()
    o.withdraw_mode_change().check_pending_request()  # withdrawn: any contacts do


@given(contacts, modes, requests, modes)
def test_a_superadmin_sets_a_requestable_mode_only_with_a_business_contact(
    cs, current, pending, granted
):
    """Granting WHITELABEL or SHARED (another mode than the current one) needs a BUSINESS
    contact, as the request did; DEMO, or the current mode (the request cleared), does not."""
    o = org(contacts=cs, organisation_mode=current, mode_change_request=pending)
    if pending is None:
        if granted is current:
            assert o.set_mode(granted) == o
        else:
            with pytest.raises(NoModeChangePending):
                o.set_mode(granted)
    elif granted is not current and granted is not Mode.DEMO and not has_business(cs):
        with pytest.raises(ModeChangeNeedsBusinessContact):
            o.set_mode(granted)
    else:
        after = o.set_mode(granted)
        assert after.organisation_mode is granted and after.mode_change_request is None


# a change of an organisation, as ``application.organisations.update`` makes them (new
# contacts with the pending request sent again change the organisation as new contacts do)
changes = st.one_of(
    st.tuples(st.just("contacts"), contacts),
    st.tuples(st.just("request"), st.sampled_from([Mode.WHITELABEL, Mode.SHARED])),
    st.tuples(st.just("withdraw"), st.none()),
    st.tuples(st.just("grant"), modes),
)


def change(o: Organisation, what: str, value) -> Organisation:
    if what == "contacts":
        o = attrs.evolve(o, contacts=value)
    elif what == "request":
        o = o.request_mode_change(value)
    elif what == "withdraw":
        o = o.withdraw_mode_change()
    else:
        o = o.set_mode(value)
    o.check_pending_request()
    return o


@given(contacts, st.lists(changes, max_size=8))
def test_no_sequence_of_changes_leaves_a_request_or_a_granted_mode_without_a_business_contact(
    cs, steps
):
    """Whatever the organisation's changes (each refused one changing nothing), a request is
    never pending without a BUSINESS contact, and WHITELABEL or SHARED is only ever granted
    to an organisation with one."""
    o = org(contacts=cs)
    for what, value in steps:
        try:
            after = change(o, what, value)
        except (
            InvalidInput,
            ModeChangeNeedsBusinessContact,
            ModeChangeToCurrentMode,
            NoModeChangePending,
        ):
            continue
        if after.mode_change_request is not None:
            assert has_business(after.contacts)
        if after.organisation_mode is not o.organisation_mode:
            assert after.organisation_mode is Mode.DEMO or has_business(after.contacts)
        o = after
