"""Organisations: their mode, the mode-change rule, and their contacts."""

from __future__ import annotations

import enum
import uuid
from datetime import datetime

import attrs

from fourcorner.domain.errors import (
    InvalidInput,
    ModeChangeNeedsBusinessContact,
    ModeChangeToCurrentMode,
    NoModeChangePending,
)


class Mode(enum.Enum):
    DEMO = "DEMO"
    SHARED = "SHARED"
    WHITELABEL = "WHITELABEL"


# The modes an organisation may ask for (spec section 3): DEMO is where every organisation
# starts, never a request.
REQUESTABLE_MODES = (Mode.WHITELABEL, Mode.SHARED)


class ValidationPolicy(enum.Enum):
    """What happens to a billing document that fails a fatal rule: ``refuse`` it (an upload
    is answered 422, a received document with an MLS RE), or ``report`` it (it goes on, and its
    transaction carries the result)."""

    REFUSE = "refuse"
    REPORT = "report"


class ContactType(enum.Enum):
    TECHNICAL = "TECHNICAL"
    BUSINESS = "BUSINESS"


@attrs.frozen
class UserRef:
    user_id: str


@attrs.frozen
class Contact:
    name: str = ""
    email: str = ""
    phone: str = ""
    title: str = ""
    contact_type: ContactType = ContactType.TECHNICAL
    web_contact_url: str | None = None
    annotation: str = ""


@attrs.frozen
class Address:
    street_address: str = ""
    city: str = ""
    country: str = ""
    postal_code: str = ""


@attrs.frozen
class Organisation:
    id: uuid.UUID
    legal_name: str
    country_code: str
    legal_identifier: str
    legal_identifier_code: str
    # The scheme's ICD and the normalised identifier ("0007:2120000787"): the uniqueness key,
    # whichever spelling of the code the client used.
    legal_key: str
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    last_modified_by: UserRef
    short_name: str = ""
    organisation_mode: Mode = Mode.DEMO
    mode_change_request: Mode | None = None
    contacts: tuple[Contact, ...] = ()
    business_address: Address | None = None
    website: str = ""
    shared_mode_enabled: bool = False
    # documents this organisation sends: refused by default; those it receives: reported
    validation: ValidationPolicy = ValidationPolicy.REFUSE
    inbound_validation: ValidationPolicy = ValidationPolicy.REPORT

    def has_business_contact(self) -> bool:
        return any(c.contact_type is ContactType.BUSINESS for c in self.contacts)

    def request_mode_change(self, mode: Mode) -> Organisation:
        """Record a request for ``mode`` (WHITELABEL or SHARED); it needs a BUSINESS contact
        (AT-1120)."""
        if mode not in REQUESTABLE_MODES:
            allowed = " or ".join(m.value for m in REQUESTABLE_MODES)
            raise InvalidInput.one("$.modeChangeRequest", f"a request is for {allowed}")
        if mode is self.organisation_mode:
            raise ModeChangeToCurrentMode(mode=mode.value)
        if not self.has_business_contact():
            raise ModeChangeNeedsBusinessContact(org_id=str(self.id))
        return attrs.evolve(self, mode_change_request=mode)

    def check_pending_request(self) -> None:
        """The mode-change rule holds after every change, not only when a request is made: a
        pending request needs a BUSINESS contact (AT-1120). A change that leaves a request
        pending without one (the last BUSINESS contact removed, or the request sent again
        without one) is refused; withdrawing the request (null), in the same change or first,
        lets the contacts go."""
        if self.mode_change_request is not None and not self.has_business_contact():
            raise ModeChangeNeedsBusinessContact(org_id=str(self.id))

    def withdraw_mode_change(self) -> Organisation:
        """The organisation takes back its pending request (none pending: unchanged); unlike a
        request, it needs no BUSINESS contact."""
        return attrs.evolve(self, mode_change_request=None)

    def set_mode(self, mode: Mode) -> Organisation:
        """A superadmin grants a pending request: the mode is set and the request cleared.
        Setting a mode that is asked for (WHITELABEL or SHARED) other than the current one
        needs a BUSINESS contact, as the request did (AT-1120); DEMO, or the current mode
        (the request cleared), does not.

        ``shared_mode_enabled`` (restricted to the operator's shared access point and SMP)
        follows the mode: WHITELABEL lifts the restriction, SHARED puts it back, DEMO keeps it
        as it was."""
        if mode is self.organisation_mode and self.mode_change_request is None:
            return self
        if self.mode_change_request is None:
            raise NoModeChangePending()
        needs_contact = mode is not self.organisation_mode and mode in REQUESTABLE_MODES
        if needs_contact and not self.has_business_contact():
            raise ModeChangeNeedsBusinessContact(org_id=str(self.id))
        shared = {Mode.WHITELABEL: False, Mode.SHARED: True}.get(mode, self.shared_mode_enabled)
        return attrs.evolve(
            self, organisation_mode=mode, mode_change_request=None, shared_mode_enabled=shared
        )

    def touched(self, at: datetime, by: UserRef) -> Organisation:
        return attrs.evolve(self, last_modified_at=at, last_modified_by=by)
