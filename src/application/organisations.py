"""Use cases of organisations: create, read, update (incl. the mode-change rule), list."""

from __future__ import annotations

import uuid
from typing import Any

import attrs

from fourcorner.application import directory_cards, participants
from fourcorner.application.absent import ABSENT, Absent
from fourcorner.application.access import Principal, authorise
from fourcorner.application.collections import MEMBERS, ORGANISATIONS, PARTICIPANTS
from fourcorner.application.context import Context, Network
from fourcorner.application.listing import ListRequest, build_query
from fourcorner.application.repositories import Certificates, Organisations, Participants, Users
from fourcorner.application.storage import Page, UnitOfWork
from fourcorner.domain.certificates import Certificate
from fourcorner.domain.errors import (
    Conflict,
    Detail,
    DuplicateOrganisation,
    InvalidInput,
    NotFound,
    RoleNotPermitted,
)
from fourcorner.domain.fields import contact_problems, country_problem, optional_problems
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.organisation import (
    Address,
    Contact,
    Mode,
    Organisation,
    UserRef,
    ValidationPolicy,
)
from fourcorner.domain.roles import Role


@attrs.frozen
class CreateOrganisation:
    legal_identifier: str
    legal_name: str
    country_code: str
    legal_identifier_code: str
    short_name: str = ""
    contacts: tuple[Contact, ...] = ()
    business_address: Address | None = None
    website: str = ""


@attrs.frozen
class UpdateOrganisation:
    """A PUT body: fields left out (or null) keep their value; read-only fields are ignored.
    ``modeChangeRequest`` left out keeps the request; null withdraws it."""

    legal_name: str | None = None
    short_name: str | None = None
    country_code: str | None = None
    legal_identifier: str | None = None
    legal_identifier_code: str | None = None
    contacts: tuple[Contact, ...] | None = None
    business_address: Address | None = None
    website: str | None = None
    # null withdraws a pending request; left out, it is kept
    mode_change_request: Mode | Absent | None = ABSENT
    organisation_mode: Mode | None = None
    validation: ValidationPolicy | None = None
    inbound_validation: ValidationPolicy | None = None


def _check_fields(
    legal_name: str | None,
    country_code: str | None,
    website: str | None,
    contacts: tuple[Contact, ...] | None,
) -> None:
    problems: list[Detail] = []
    if legal_name is not None and not legal_name.strip():
        problems.append(Detail("$.legalName", "must not be empty"))
    if legal_name is not None and len(legal_name) > 300:
        problems.append(Detail("$.legalName", "at most 300 characters"))
    if country_code is not None and (problem := country_problem(country_code)):
        problems.append(Detail("$.countryCode", problem))
    problems += optional_problems("$", None, website)
    problems += contact_problems(contacts or (), "$.contacts")
    if problems:
        raise InvalidInput(problems)


def _legal_key(ctx: Context, code: str, identifier: str) -> str:
    scheme, normalised = ctx.catalogue.validate_legal_identifier(code, identifier)
    return f"{scheme.iso6523}:{normalised.lower()}"


async def create(ctx: Context, principal: Principal, cmd: CreateOrganisation) -> Organisation:
    """Any signed-in user creates an organisation (mode DEMO) and becomes its orgadmin."""
    user = principal.require_user()
    _check_fields(cmd.legal_name, cmd.country_code, cmd.website, cmd.contacts)
    legal_key = _legal_key(ctx, cmd.legal_identifier_code, cmd.legal_identifier)
    now, me = ctx.clock(), UserRef(user.id)
    async with ctx.uow() as uow:
        # The user's record is locked so their creations run one at a time: of two at once,
        # only one is their first (sharedModeEnabled). One deleted since signing in founds
        # nothing: its orgadmin would be gone.
        if await Users(uow).lock_for_membership(user.id) is None:
            raise NotFound(resource="user", ident=user.id)
        orgs = Organisations(uow)
        if await orgs.by_legal_key(legal_key) is not None:
            raise DuplicateOrganisation(
                legal_identifier_code=cmd.legal_identifier_code,
                legal_identifier=cmd.legal_identifier,
            )
        first_of_user = await orgs.count_created_by(user.id) == 0
        org = Organisation(
            id=ctx.new_id(),
            legal_name=cmd.legal_name.strip(),
            short_name=cmd.short_name,
            country_code=cmd.country_code,
            legal_identifier=cmd.legal_identifier,
            legal_identifier_code=cmd.legal_identifier_code,
            legal_key=legal_key,
            contacts=cmd.contacts,
            business_address=cmd.business_address,
            website=cmd.website,
            shared_mode_enabled=first_of_user,
            created_at=now,
            created_by=me,
            last_modified_at=now,
            last_modified_by=me,
        )
        admin = Member(
            id=ctx.new_id(),
            org_id=org.id,
            user_ref=user.id,
            role=Role.ORGADMIN,
            status=MemberStatus.ACTIVE,
            first_name=user.first_name,
            last_name=user.last_name,
            email=user.email,
            member_since=now,
            created_at=now,
            created_by=me,
            last_modified_at=now,
        )
        try:
            await orgs.add(org)
        except Conflict:
            raise DuplicateOrganisation(
                legal_identifier_code=cmd.legal_identifier_code,
                legal_identifier=cmd.legal_identifier,
            ) from None
        await uow.repository(MEMBERS).add(admin)
        await uow.commit()
    return org


@attrs.frozen
class OrganisationView:
    org: Organisation
    certificates: list[Certificate]


async def _view(uow: UnitOfWork, org: Organisation) -> OrganisationView:
    return OrganisationView(org, await Certificates(uow).of_org(org.id))


async def get(ctx: Context, principal: Principal, org_id: uuid.UUID) -> OrganisationView:
    async with ctx.reads() as uow:
        return await _view(uow, (await authorise(uow, principal, org_id, Role.ORGADMIN)).org)


# what the SMP publishes of the organisation: the business card's fallbacks (legal name,
# country, website; publishing.business_card) and the endpoints' technical contact
PUBLISHED_FIELDS = ("legal_name", "country_code", "website", "contacts")


async def update(
    ctx: Context, net: Network, principal: Principal, org_id: uuid.UUID, cmd: UpdateOrganisation
) -> OrganisationView:
    """Change the organisation. A change of what the SMP publishes of it publishes its
    participants again, and the directory indexes again the cards that changed by it
    (``directory_cards``)."""
    _check_fields(cmd.legal_name, cmd.country_code, cmd.website, cmd.contacts)
    outdated = []
    async with ctx.uow() as uow:
        # locked: a concurrent grant of the mode (or any edit) is not overwritten by this one
        access = await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        org = before = access.org
        changes: dict[str, Any] = {
            k: v
            for k, v in {
                "legal_name": cmd.legal_name,
                "short_name": cmd.short_name,
                "country_code": cmd.country_code,
                "contacts": cmd.contacts,
                "business_address": cmd.business_address,
                "website": cmd.website,
                "validation": cmd.validation,
                "inbound_validation": cmd.inbound_validation,
            }.items()
            if v is not None
        }
        if cmd.legal_identifier is not None or cmd.legal_identifier_code is not None:
            code = cmd.legal_identifier_code or org.legal_identifier_code
            ident = cmd.legal_identifier or org.legal_identifier
            key = _legal_key(ctx, code, ident)
            clash = await Organisations(uow).by_legal_key(key)
            if clash is not None and clash.id != org.id:
                raise DuplicateOrganisation(legal_identifier_code=code, legal_identifier=ident)
            changes |= {"legal_identifier": ident, "legal_identifier_code": code, "legal_key": key}
        org = attrs.evolve(org, **changes)
        wanted = cmd.mode_change_request
        if wanted is None:
            org = org.withdraw_mode_change()
        elif isinstance(wanted, Mode) and wanted is not org.mode_change_request:
            org = org.request_mode_change(wanted)
        mode = cmd.organisation_mode
        if mode is not None and (mode is not org.organisation_mode or org.mode_change_request):
            if mode is not org.organisation_mode and not principal.is_superadmin:
                raise RoleNotPermitted(required=Role.SUPERADMIN.value, held=access.role.value)
            if principal.is_superadmin:
                org = org.set_mode(mode)
        # whatever changed (the contacts, the request, the mode), a request still pending
        # needs a BUSINESS contact, not only one made now (AT-1120)
        org.check_pending_request()
        org = org.touched(ctx.clock(), principal.actor)
        try:
            await uow.repository(ORGANISATIONS).update(org)
        except Conflict:
            raise DuplicateOrganisation(
                legal_identifier_code=org.legal_identifier_code,
                legal_identifier=org.legal_identifier,
            ) from None
        if any(getattr(org, f) != getattr(before, f) for f in PUBLISHED_FIELDS):
            # each held, in one order, as a participant's own update holds it (the workers
            # that record a status or a directory's answer write the row meanwhile)
            ids = [p.id for p in await Participants(uow).of_org(org.id)]
            for p in await uow.repository(PARTICIPANTS).lock_many(ids):
                changed = await participants.republish_card(ctx, net, uow, p)
                marked = directory_cards.after_change(ctx, net, p, changed)
                if marked is not p:
                    await uow.repository(PARTICIPANTS).update(marked)
                    outdated.append(marked)
        view = await _view(uow, org)
        await uow.commit()
    await directory_cards.reindex(ctx, net, outdated)
    return view


async def list_all(
    ctx: Context, principal: Principal, request: ListRequest
) -> Page[OrganisationView]:
    """Every organisation, for a superadmin (e.g. ``modeChangeRequest:ne:null``)."""
    principal.require(Role.SUPERADMIN)
    query = build_query(ORGANISATIONS, request)
    async with ctx.uow() as uow:
        found = await uow.repository(ORGANISATIONS).list(query)
        views = [await _view(uow, org) for org in found.items]
    return Page(views, found.next_cursor)
