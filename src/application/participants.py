"""Use cases of participants: register in an SMP, announce document types, publish cards."""

from __future__ import annotations

import uuid
from typing import Any

import attrs

from fourcorner.application import directory_cards, sml, sml_tasks
from fourcorner.application.access import Principal, authorise
from fourcorner.application.collections import (
    ACCESS_POINTS,
    CERTIFICATES,
    ORGANISATIONS,
    PARTICIPANTS,
    SMP_REGISTRATIONS,
)
from fourcorner.application.context import Context, Network
from fourcorner.application.publishing import check_supported, registration
from fourcorner.application.repositories import Participants
from fourcorner.application.scoped import InOrg, owned, owned_many, remove_owned
from fourcorner.application.services_to_use import usable
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain.catalogue import neutral
from fourcorner.domain.errors import Conflict, Detail, InvalidInput, NotFound
from fourcorner.domain.fields import check_business_card
from fourcorner.domain.network_services import AccessPoint, Environment, Smp
from fourcorner.domain.participant import (
    BusinessCard,
    Participant,
    SupportedDocumentType,
)
from fourcorner.domain.refusals import ConcurrentChange
from fourcorner.domain.roles import Role
from fourcorner.domain.smp import SmpRegistration


@attrs.frozen
class CreateParticipant:
    name: str
    participant_identifier: str
    smp_ref: uuid.UUID
    ap_ref: uuid.UUID
    # either spelling is taken; the neutral one is kept (domain.catalogue.neutral)
    transport_profile: str = attrs.field(default="net-transport-as4-v2_0", converter=neutral)
    business_card: BusinessCard | None = None
    # a key from the participant's current SMP: completes its move here in the SML
    migration_key: str | None = None


@attrs.frozen
class UpdateParticipant:
    name: str | None = None
    ap_ref: uuid.UUID | None = None
    transport_profile: str | None = attrs.field(
        default=None, converter=attrs.converters.optional(neutral)
    )
    business_card: BusinessCard | None = None


@attrs.frozen
class SupportedDocumentTypes:
    supported_document_types: tuple[SupportedDocumentType, ...]


async def _usable(
    uow: UnitOfWork, org_id: uuid.UUID, smp_ref: uuid.UUID, ap_ref: uuid.UUID
) -> tuple[Smp, AccessPoint]:
    org = await uow.repository(ORGANISATIONS).get(org_id)
    assert org is not None
    smps, aps = await usable(uow, org)
    smp = next((s for s in smps if s.id == smp_ref), None)
    ap = next((a for a in aps if a.id == ap_ref), None)
    problems = []
    if smp is None:
        problems.append(Detail("$.smpRef", "not an SMP this organisation may use (smps/alltouse)"))
    if ap is None:
        problems.append(
            Detail("$.apRef", "not an access point this organisation may use (aps/alltouse)")
        )
    if smp is not None and ap is not None and smp.environment is not ap.environment:
        problems.append(
            Detail(
                "$.apRef",
                f"the access point is {ap.environment.value}, the SMP {smp.environment.value}",
            )
        )
    if problems:
        raise InvalidInput(problems)
    assert smp is not None and ap is not None
    return smp, ap


def _check_transport(ap: AccessPoint, profile: str) -> None:
    if profile != ap.transport_profile:
        raise InvalidInput.one(
            "$.transportProfile", f"the access point supports {ap.transport_profile} only"
        )


async def republish(ctx: Context, net: Network, uow: UnitOfWork, participant: Participant) -> None:
    """Publish ``participant``'s current metadata in its SMP (inside the caller's unit of
    work)."""
    await net.smp.publish(uow, await _registration(ctx, uow, participant))


async def republish_served(ctx: Context, net: Network, uow: UnitOfWork, ap_id: uuid.UUID) -> None:
    """``republish`` the participants the access point ``ap_id`` serves (its certificate or
    name changed, in the caller's unit of work). Each is held first, in id order, as every
    change of a participant's SMP entry holds it (a deletion, ``set_supported``): one
    deleted meanwhile is not published again, one changed meanwhile is published as it is
    now, never as it was read before."""
    ids = [p.id for p in await Participants(uow).served_by(ap_id)]
    for p in await uow.repository(PARTICIPANTS).lock_many(ids):
        await republish(ctx, net, uow, p)


async def republish_card(
    ctx: Context, net: Network, uow: UnitOfWork, participant: Participant
) -> bool:
    """``republish``: whether the business card the SMP serves changed by it (not on its first
    publication)."""
    # what the SMP served until now (the stored registration, with the built-in SMP)
    served = await net.smp.lookup(uow, participant.environment, participant.identifier_key)
    reg = await _registration(ctx, uow, participant)
    await net.smp.publish(uow, reg)
    return served is not None and served.business_card != reg.business_card


async def _registration(ctx: Context, uow: UnitOfWork, participant: Participant) -> SmpRegistration:
    ap = await uow.repository(ACCESS_POINTS).get(participant.ap_ref)
    if ap is None:
        raise NotFound(resource="access point", ident=str(participant.ap_ref))
    cert = await uow.repository(CERTIFICATES).get(ap.certificate_ref)
    if cert is None:
        raise NotFound(resource="certificate", ident=str(ap.certificate_ref))
    org = await uow.repository(ORGANISATIONS).get(participant.org_id)
    old = await uow.repository(SMP_REGISTRATIONS).get(registration_id(participant))
    return registration(
        catalogue=ctx.catalogue,
        participant=participant,
        ap=ap,
        certificate=cert,
        org=org,
        created_at=old.created_at if old else ctx.clock(),
        now=ctx.clock(),
    )


def registration_id(participant: Participant) -> uuid.UUID:
    return SmpRegistration.id_for(participant.smp_ref, participant.identifier_key)


async def create(
    ctx: Context, net: Network, principal: Principal, org_id: uuid.UUID, cmd: CreateParticipant
) -> Participant:
    checked = ctx.catalogue.validate_participant_identifier(cmd.participant_identifier)
    if not cmd.name.strip():
        raise InvalidInput.one("$.name", "must not be empty")
    if cmd.business_card is not None:
        check_business_card(cmd.business_card, ctx.catalogue)
    now = ctx.clock()
    async with ctx.uow() as uow:
        # the organisation's lock: its access point is not deleted meanwhile (``delete_aps``)
        await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        smp, ap = await _usable(uow, org_id, cmd.smp_ref, cmd.ap_ref)
        _check_transport(ap, cmd.transport_profile)
        participants = Participants(uow)
        if await participants.by_identifier(checked.canonical, smp.environment) is not None:
            raise Conflict(reason=_registered_already(cmd.participant_identifier, smp.environment))
        participant = Participant(
            id=ctx.new_id(),
            org_id=org_id,
            name=cmd.name,
            participant_identifier=str(checked.identifier),
            identifier_key=checked.canonical,
            smp_ref=smp.id,
            ap_ref=ap.id,
            environment=smp.environment,
            transport_profile=cmd.transport_profile,
            business_card=cmd.business_card,
            warning=checked.warning,
            created_at=now,
            created_by=principal.actor,
            last_modified_at=now,
            last_modified_by=principal.actor,
        )
        participant = await sml.wish_registered(ctx, net, uow, participant, cmd.migration_key)
        try:
            await participants.add(participant)
        except Conflict:
            raise Conflict(
                reason=_registered_already(cmd.participant_identifier, smp.environment)
            ) from None
        await republish(ctx, net, uow, participant)
        await uow.commit()
    return await sml_tasks.register_now(ctx, net, participant)


def _registered_already(identifier: str, environment: Environment) -> str:
    """A participant identifier is unique per environment (each has its own SML)."""
    return f"the participant {identifier} is registered already in {environment.value}"


_PARTICIPANTS = InOrg(PARTICIPANTS, "participant")
get = _PARTICIPANTS.get
list_participants = _PARTICIPANTS.list


async def _own(
    uow: UnitOfWork, org_id: uuid.UUID, pid: uuid.UUID, *, lock: bool = False
) -> Participant:
    return await owned(uow, PARTICIPANTS, org_id, pid, "participant", lock=lock)


async def _chosen(
    ctx: Context, principal: Principal, org_id: uuid.UUID, ids: list[uuid.UUID]
) -> list[Participant]:
    """The organisation's participants ``ids`` (each once), as an orgadmin asks for them."""
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN)
        return [await _own(uow, org_id, pid) for pid in dict.fromkeys(ids)]


async def update(
    ctx: Context,
    net: Network,
    principal: Principal,
    org_id: uuid.UUID,
    pid: uuid.UUID,
    cmd: UpdateParticipant,
) -> Participant:
    async with ctx.uow() as uow:
        # the organisation held, as its update and ``create`` hold it: the card published here
        # is made of what that one committed (and it, of what this one commits)
        await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        # the row held too: a directory's answer recorded meanwhile (``directory_cards.ask``,
        # which holds the row alone) is not written over with the publication read here
        p = await _own(uow, org_id, pid, lock=True)
        changes: dict[str, Any] = {}
        if cmd.name is not None:
            if not cmd.name.strip():
                raise InvalidInput.one("$.name", "must not be empty")
            changes["name"] = cmd.name
        if cmd.business_card is not None:
            check_business_card(cmd.business_card, ctx.catalogue)
            changes["business_card"] = cmd.business_card
        ap_ref = cmd.ap_ref or p.ap_ref
        profile = cmd.transport_profile or p.transport_profile
        if cmd.ap_ref is not None or cmd.transport_profile is not None:
            _, ap = await _usable(uow, org_id, p.smp_ref, ap_ref)
            _check_transport(ap, profile)
            changes |= {"ap_ref": ap_ref, "transport_profile": profile}
        p = attrs.evolve(
            p, **changes, last_modified_at=ctx.clock(), last_modified_by=principal.actor
        )
        p = directory_cards.after_change(ctx, net, p, await republish_card(ctx, net, uow, p))
        await uow.repository(PARTICIPANTS).update(p)
        await uow.commit()
    # a card in the directory that this change altered is indexed again
    return await directory_cards.reindexed(ctx, net, p)


# how many times a deletion reads, withdraws and deletes before it gives up: each time but
# the first follows a card indexed by a request that raced it
_DELETE_ATTEMPTS = 3


async def delete_many(
    ctx: Context, net: Network, principal: Principal, org_id: uuid.UUID, ids: list[uuid.UUID]
) -> list[str]:
    """Remove participants from their SMP (and SML). A business card published in the
    directory is withdrawn first, from the directory of the participant's environment only
    (the same identifier's card in the other environment stays): should that directory not
    answer, nothing is deleted and the request may be repeated.

    The withdrawals are network calls, made before the unit of work that deletes: that one
    holds the participants (``owned_many``, in id order) and deletes them only when their
    publication is still the one read before the withdrawals. A card indexed meanwhile
    (``request-pd-publish``, a change's reindexing) is recorded first, which makes the
    deletion withdraw again; one indexed but not yet recorded is withdrawn by whoever asked
    for it, who finds the participant gone (``directory_cards.withdraw_left``)."""
    for _ in range(_DELETE_ATTEMPTS):
        chosen = await _chosen(ctx, principal, org_id, ids)
        for p in chosen:  # network calls, outside any unit of work
            if p.directory.in_directory:
                await net.directory.withdraw(p.environment, p.identifier_key)
        async with ctx.uow() as uow:
            await authorise(uow, principal, org_id, Role.ORGADMIN)
            held = await owned_many(uow, PARTICIPANTS, org_id, ids, "participant")
            if any(
                held[p.id].directory.in_directory and not held[p.id].same_card(p) for p in chosen
            ):
                continue  # a card indexed since it was read: withdrawn first, then deleted
            for p in held.values():  # in id order, as they were locked
                await remove_owned(uow, PARTICIPANTS, p.id, "participant")
                await net.smp.unpublish(uow, p.smp_ref, p.identifier_key)
                await sml.wish_removed(ctx, net, uow, p)
            await uow.commit()
        return [str(p.id) for p in chosen]
    raise ConcurrentChange(
        reason="(the participants' business cards were published again while they were being "
        "deleted)"
    )


async def supported(
    ctx: Context, principal: Principal, org_id: uuid.UUID, pid: uuid.UUID
) -> tuple[SupportedDocumentType, ...]:
    return (await get(ctx, principal, org_id, pid)).supported_document_types


async def set_supported(
    ctx: Context,
    net: Network,
    principal: Principal,
    org_id: uuid.UUID,
    pid: uuid.UUID,
    cmd: SupportedDocumentTypes,
) -> tuple[SupportedDocumentType, ...]:
    entries = check_supported(ctx.catalogue, cmd.supported_document_types)
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN)
        p = await _own(uow, org_id, pid, lock=True)  # as ``update`` holds it
        p = attrs.evolve(
            p,
            supported_document_types=entries,
            last_modified_at=ctx.clock(),
            last_modified_by=principal.actor,
        )
        await uow.repository(PARTICIPANTS).update(p)
        await republish(ctx, net, uow, p)
        await uow.commit()
    return entries


async def request_publication(
    ctx: Context, net: Network, principal: Principal, org_id: uuid.UUID, ids: list[uuid.UUID]
) -> list[str]:
    """Ask the directory of each participant's environment to index its business card (served
    by that environment's SMP): the first time, again, or an ``OUTDATED`` one whose asking
    after a change failed. Should a directory not answer, nothing is recorded (503) and the
    request may be repeated. A card that a withdrawal for a deleted participant of the same
    identifier may have taken away after the directory indexed it (``directory_cards``'s
    ``withdraw_left`` moved the revision on meanwhile) is recorded as asked for and outdated,
    and asked for again at once."""
    chosen = await _chosen(ctx, principal, org_id, ids)
    for p in chosen:  # network calls, outside any unit of work
        await net.directory.publish(p.environment, p.identifier_key)
    now = ctx.clock()
    undone = []
    async with ctx.uow() as uow:
        # held in id order, not the order the client names them: batches over the same
        # participants in other orders wait for each other instead of deadlocking
        held = {p.id: p for p in await uow.repository(PARTICIPANTS).lock_many(ids)}
        for p in chosen:
            current = held.get(p.id)
            if current is None:
                continue
            if current.same_card(p):
                # a worker's retry in flight meanwhile records nothing after this
                await uow.repository(PARTICIPANTS).update(current.directory_asked(now, None, ()))
            elif not current.directory.in_directory:  # its identifier's card withdrawn since
                undone.append(current.indexed_then_withdrawn(now, net.directory_delays[0]))
                await uow.repository(PARTICIPANTS).update(undone[-1])
            # else changed meanwhile: the change asks the directory again itself
        await uow.commit()
    # deleted meanwhile, maybe after the deletion withdrew the card: withdrawn again
    await directory_cards.withdraw_left(ctx, net, [p for p in chosen if p.id not in held])
    await directory_cards.reindex(ctx, net, undone)
    return [str(p.id) for p in chosen]
