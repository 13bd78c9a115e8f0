"""The membership life cycle as a state machine, checked against a simple model."""

import uuid
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from fourcorner.domain import member as membership
from fourcorner.domain.errors import AlreadyMember, LastOrgAdmin, NotPending
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import ORG_ROLES, Role

NOW = datetime(2026, 1, 2, tzinfo=UTC)
USERS = ["founder", "ann", "bob", "cid"]


def fresh(user: str, status: MemberStatus, role: Role = Role.ORGMEMBER) -> Member:
    return Member(
        id=uuid.uuid4(),
        org_id=uuid.UUID(int=1),
        user_ref=user,
        role=role,
        status=status,
        created_at=NOW,
        created_by=UserRef(user),
        last_modified_at=NOW,
    )


class Membership(RuleBasedStateMachine):
    """Model: user → (status, role). The founder starts as the only orgadmin."""

    def __init__(self) -> None:
        super().__init__()
        founder = fresh("founder", MemberStatus.ACTIVE, Role.ORGADMIN)
        self.members: dict[str, Member] = {"founder": founder}
        self.model: dict[str, tuple[str, str]] = {"founder": ("ACTIVE", "orgadmin")}

    def admins(self) -> int:
        return sum(1 for s, r in self.model.values() if s == "ACTIVE" and r == "orgadmin")

    @rule(user=st.sampled_from(USERS))
    def ask_to_join(self, user: str) -> None:
        existing = self.members.get(user)
        state = self.model.get(user)
        try:
            m = membership.ask_to_join(existing, fresh(user, MemberStatus.PENDING))
        except AlreadyMember:
            assert state is not None and state[0] in ("PENDING", "ACTIVE")
            return
        assert state is None or state[0] == "REJECTED"
        self.members[user] = m
        self.model[user] = ("PENDING", "orgmember")

    @rule(user=st.sampled_from(USERS), approve=st.booleans())
    def decide(self, user: str, approve: bool) -> None:
        m = self.members.get(user)
        if m is None:
            return
        try:
            m = m.approve(NOW) if approve else m.reject(NOW)
        except NotPending:
            assert self.model[user][0] != "PENDING"
            return
        assert self.model[user][0] == "PENDING"
        self.members[user] = m
        self.model[user] = ("ACTIVE" if approve else "REJECTED", self.model[user][1])

    @rule(user=st.sampled_from(USERS), role=st.sampled_from([Role.ORGMEMBER, Role.ORGADMIN]))
    def add_directly(self, user: str, role: Role) -> None:
        try:
            m = membership.add_directly(
                self.members.get(user), fresh(user, MemberStatus.ACTIVE, role)
            )
        except AlreadyMember:
            assert self.model[user][0] == "ACTIVE"
            return
        self.members[user] = m
        self.model[user] = ("ACTIVE", role.value)

    @precondition(lambda self: any(s == "ACTIVE" for s, _ in self.model.values()))
    @rule(user=st.sampled_from(USERS), role=st.sampled_from([Role.ORGMEMBER, Role.ORGADMIN]))
    def change_role(self, user: str, role: Role) -> None:
        m = self.members.get(user)
        if m is None or self.model[user][0] != "ACTIVE":
            return
        try:
            membership.ensure_an_admin_remains(self.members.values(), m, role)
        except LastOrgAdmin:
            assert self.model[user][1] == "orgadmin" and role is Role.ORGMEMBER
            assert self.admins() == 1
            return
        self.members[user] = m.with_role(role, NOW)
        self.model[user] = ("ACTIVE", role.value)

    @rule(user=st.sampled_from(USERS))
    def leave(self, user: str) -> None:
        m = self.members.get(user)
        if m is None:
            return
        try:
            membership.ensure_an_admin_remains(self.members.values(), m, None)
        except LastOrgAdmin:
            assert self.model[user] == ("ACTIVE", "orgadmin") and self.admins() == 1
            return
        del self.members[user], self.model[user]

    @invariant()
    def always_one_admin(self) -> None:
        assert self.admins() >= 1

    @invariant()
    def records_agree_with_the_model(self) -> None:
        for user, m in self.members.items():
            assert (m.status.value, m.role.value) == self.model[user]


TestMembership = Membership.TestCase


@given(
    st.lists(
        st.tuples(
            st.sampled_from(USERS), st.sampled_from(MemberStatus), st.sampled_from(ORG_ROLES)
        ),
        unique_by=lambda m: m[0],
    ),
    st.sets(st.sampled_from(USERS)),
)
def test_deleting_users_keeps_an_orgadmin_that_was_there(rows, deleted):
    """Deleting users (all their memberships) is refused exactly when an orgadmin goes and
    none stays."""
    members = [fresh(user, status, role) for user, status, role in rows]
    admins = {m.user_ref for m in members if m.is_admin}
    try:
        membership.ensure_an_admin_remains_without(members, deleted)
    except LastOrgAdmin as refused:
        assert admins & deleted and not admins - deleted
        assert refused.org_id == str(uuid.UUID(int=1))
    else:
        assert not admins & deleted or admins - deleted
