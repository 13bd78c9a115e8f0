"""Users bound to their identity (issuer, subject): random ids, records from before the binding,
deletion that holds against old tokens, and API keys bounded by their creator's standing."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fourcorner.adapters.auth.local import subject_for
from fourcorner.adapters.memory import InMemoryStorage
from fourcorner.adapters.system import random_id, system_clock_ns
from fourcorner.application import api_keys, users
from fourcorner.application.access import Principal, key_role
from fourcorner.application.collections import API_KEYS, MEMBERS, USERS
from fourcorner.application.context import Context
from fourcorner.application.identity import Identity
from fourcorner.domain.api_key import ApiKey, hash_key
from fourcorner.domain.catalogue import Catalogue
from fourcorner.domain.errors import Unauthorised
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import Role
from fourcorner.domain.user import TOKEN_CLOCK_SKEW, User, identity_key, issued_in_time
from records import user as legacy_user

NOW = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)
ISSUER = "https://idp.example.test"
ORG = uuid.UUID(int=7)
EMPTY = Catalogue("test", (), (), (), ())


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


def new_context(clock: Clock | None = None) -> Context:
    storage = InMemoryStorage()
    return Context(
        uow=storage.unit_of_work,
        reader=storage.reader,
        catalogue=EMPTY,
        clock=clock or Clock(),
        clock_ns=system_clock_ns,
        new_id=random_id,
    )


@pytest.fixture
async def ctx() -> AsyncIterator[Context]:
    yield new_context()


def token(
    subject: str = "ann",
    *,
    at: datetime | None = NOW,
    issuer: str = ISSUER,
    superadmin: bool = False,
) -> Identity:
    """The identity of a token issued ``at`` (``None``: without ``iat``)."""
    return Identity(
        subject,
        f"{subject}@example.com",
        subject.title(),
        superadmin,
        expires_at=NOW + timedelta(days=1),
        issuer=issuer,
        issued_at=at,
    )


ROOT = Principal(user=attrs.evolve(legacy_user("root"), role=Role.SUPERADMIN))


async def add(ctx: Context, *records: object) -> None:
    async with ctx.uow() as uow:
        for r in records:
            collection = {Member: MEMBERS, ApiKey: API_KEYS, User: USERS}[type(r)]
            await uow.repository(collection).add(r)  # type: ignore[arg-type]
        await uow.commit()


def member(uid: str, role: Role = Role.ORGADMIN) -> Member:
    return Member(
        id=uuid.uuid4(),
        org_id=ORG,
        user_ref=uid,
        role=role,
        status=MemberStatus.ACTIVE,
        created_at=NOW,
        created_by=UserRef(uid),
        last_modified_at=NOW,
    )


def key_of(uid: str, role: Role = Role.ORGADMIN) -> tuple[ApiKey, str]:
    secret = f"fck_{uuid.uuid4().hex}{uuid.uuid4().hex}"
    record = ApiKey(
        id=uuid.uuid4(),
        org_id=ORG,
        name="ci",
        description="",
        expires=NOW + timedelta(days=30),
        is_active=True,
        role=role,
        key_hash=hash_key(secret),
        prefix=secret[:10],
        created_at=NOW,
        created_by=UserRef(uid),
        last_modified_at=NOW,
    )
    return record, secret


# --- the rules -------------------------------------------------------------------------------

moments = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)


@given(st.none() | moments, st.none() | moments)
def test_a_token_is_in_time_only_when_issued_after_the_bar(issued_at, not_before):
    ok = issued_in_time(issued_at, not_before)
    if not_before is None:
        assert ok
    else:
        assert ok == (issued_at is not None and issued_at > not_before)


@given(st.text(), st.text(), st.text(), st.text())
def test_identity_keys_differ_for_different_pairs(a, b, c, d):
    assert (identity_key(a, b) == identity_key(c, d)) == ((a, b) == (c, d))


# --- random ids, bound to the identity -------------------------------------------------------


async def test_a_new_user_gets_a_random_id_bound_to_issuer_and_subject(ctx: Context) -> None:
    ann = await users.sign_in(ctx, token("ann"))
    assert uuid.UUID(ann.id).version == 4 and ann.id != "ann"
    assert (ann.issuer, ann.subject) == (ISSUER, "ann")
    assert (await users.sign_in(ctx, token("ann", at=NOW + timedelta(hours=1)))).id == ann.id
    other_issuer = await users.sign_in(ctx, token("ann", issuer="https://other.example.test"))
    assert other_issuer.id != ann.id


@settings(max_examples=25, deadline=None)
@given(st.emails())
def test_a_user_id_cannot_be_worked_out_from_the_email(email: str) -> None:
    async def sign_in_fresh() -> str:
        identity = attrs.evolve(token(subject_for(email)), email=email)
        return (await users.sign_in(new_context(), identity)).id

    first, second = asyncio.run(sign_in_fresh()), asyncio.run(sign_in_fresh())
    assert first != second  # the same person on two fresh services
    assert subject_for(email) not in (first, second)


async def test_a_user_from_before_the_binding_keeps_its_id_and_is_bound(ctx: Context) -> None:
    old = legacy_user(subject_for("ann@example.com"))
    await add(ctx, old, member(old.id))
    identity = attrs.evolve(token(subject_for("ann@example.com")), email="ann@example.com")
    ann = await users.sign_in(ctx, identity)
    assert ann.id == old.id and ann.identity_key == identity_key(ISSUER, old.id)
    async with ctx.reads() as uow:
        assert [m.org_id for m in await uow.repository(MEMBERS).all(userRef=ann.id)] == [ORG]


async def test_a_bound_users_id_is_not_taken_for_a_subject(ctx: Context) -> None:
    ann = await users.sign_in(ctx, token("ann"))
    # someone whose subject happens to be ann's id is not ann
    other = await users.sign_in(ctx, token(ann.id))
    assert other.id != ann.id


async def test_concurrent_first_sign_ins_make_one_user(ctx: Context) -> None:
    made = await asyncio.gather(*(users.sign_in(ctx, token("ann")) for _ in range(20)))
    assert len({u.id for u in made}) == 1
    async with ctx.reads() as uow:
        assert len(await uow.repository(USERS).all()) == 1


# --- deletion --------------------------------------------------------------------------------


async def test_a_deleted_users_tokens_never_sign_in_again(ctx: Context) -> None:
    clock: Clock = ctx.clock  # type: ignore[assignment]
    ann = await users.sign_in(ctx, token("ann"))
    await add(ctx, member(ann.id, Role.ORGMEMBER))  # not the last orgadmin: she may be deleted
    clock.now = deleted = NOW + timedelta(minutes=5)
    assert await users.delete_many(ctx, ROOT, [ann.id]) == [ann.id]
    clock.now = NOW + timedelta(hours=1)
    for stale in (NOW, deleted, deleted + TOKEN_CLOCK_SKEW, None):
        with pytest.raises(Unauthorised):
            await users.sign_in(ctx, token("ann", at=stale))
    async with ctx.reads() as uow:
        assert await uow.repository(USERS).all() == []  # nothing was re-created
    again = await users.sign_in(ctx, token("ann", at=deleted + TOKEN_CLOCK_SKEW * 2))
    assert again.id != ann.id and uuid.UUID(again.id).version == 4
    async with ctx.reads() as uow:
        assert await uow.repository(MEMBERS).all() == []  # the memberships went with ann
    # the old token stays refused for the new user too
    with pytest.raises(Unauthorised):
        await users.sign_in(ctx, token("ann", at=NOW))


async def test_deleting_twice_keeps_the_latest_deletion(ctx: Context) -> None:
    clock: Clock = ctx.clock  # type: ignore[assignment]
    first = await users.sign_in(ctx, token("ann"))
    clock.now = NOW + timedelta(minutes=1)
    await users.delete_many(ctx, ROOT, [first.id])
    clock.now = NOW + timedelta(minutes=10)
    second = await users.sign_in(ctx, token("ann", at=clock.now))
    clock.now = NOW + timedelta(minutes=20)
    await users.delete_many(ctx, ROOT, [second.id])
    with pytest.raises(Unauthorised):
        await users.sign_in(ctx, token("ann", at=NOW + timedelta(minutes=15)))
    third = await users.sign_in(ctx, token("ann", at=NOW + timedelta(minutes=21)))
    assert len({first.id, second.id, third.id}) == 3


async def test_a_user_deleted_before_being_bound_is_refused_by_subject(ctx: Context) -> None:
    old = legacy_user("ann")  # its id is its subject, as before the binding
    await add(ctx, old)
    await users.delete_many(ctx, ROOT, [old.id])
    with pytest.raises(Unauthorised):
        await users.sign_in(ctx, token("ann", at=NOW))
    fresh = await users.sign_in(ctx, token("ann", at=NOW + timedelta(minutes=1)))
    assert fresh.id != old.id


async def test_a_deleted_users_api_keys_stay_dead(ctx: Context) -> None:
    clock: Clock = ctx.clock  # type: ignore[assignment]
    ann = await users.sign_in(ctx, token("ann"))
    record, secret = key_of(ann.id)
    await add(ctx, member(ann.id), member("bob"), record)  # bob: the orgadmin who stays
    assert (await api_keys.authenticate(ctx, secret)).key == record
    await users.delete_many(ctx, ROOT, [ann.id])
    with pytest.raises(Unauthorised):
        await api_keys.authenticate(ctx, secret)
    clock.now = NOW + timedelta(minutes=5)
    again = await users.sign_in(ctx, token("ann", at=clock.now))
    await add(ctx, member(again.id))  # an orgadmin again, under the new id
    with pytest.raises(Unauthorised):
        await api_keys.authenticate(ctx, secret)


# --- a key's role is bounded by its creator's --------------------------------------------------


async def test_a_keys_role_follows_its_creators_current_role(ctx: Context) -> None:
    ann = await users.sign_in(ctx, token("ann"))
    admin = member(ann.id, Role.ORGADMIN)
    record, secret = key_of(ann.id, Role.ORGADMIN)
    await add(ctx, admin, record)

    async def held() -> Role | None:
        async with ctx.uow() as uow:
            return await key_role(uow, record)

    assert await held() is Role.ORGADMIN
    async with ctx.uow() as uow:
        await uow.repository(MEMBERS).update(admin.with_role(Role.ORGMEMBER, NOW))
        await uow.commit()
    assert await held() is Role.ORGMEMBER
    async with ctx.uow() as uow:
        await uow.repository(MEMBERS).remove(admin.id)
        await uow.commit()
    assert await held() is None
    with pytest.raises(Unauthorised):
        await api_keys.authenticate(ctx, secret)


async def test_a_superadmins_key_holds_its_own_role(ctx: Context) -> None:
    root = await users.sign_in(ctx, token("root", superadmin=True))
    record, secret = key_of(root.id, Role.ORGMEMBER)
    await add(ctx, record)
    async with ctx.uow() as uow:
        assert await key_role(uow, record) is Role.ORGMEMBER
    assert (await api_keys.authenticate(ctx, secret)).key == record
