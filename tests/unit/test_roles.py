"""The role ladder: superadmin ⊇ orgadmin ⊇ orgmember ⊇ user."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.domain import api_key, roles
from fourcorner.domain.errors import RoleNotPermitted
from fourcorner.domain.roles import Role

LADDER = [Role.USER, Role.ORGMEMBER, Role.ORGADMIN, Role.SUPERADMIN]
any_role = st.sampled_from(LADDER)


@given(any_role, any_role)
def test_a_role_satisfies_exactly_the_roles_below_or_equal(held, required):
    assert held.satisfies(required) == (LADDER.index(held) >= LADDER.index(required))


@given(any_role, any_role, any_role)
def test_the_ladder_is_transitive(a, b, c):
    if a.satisfies(b) and b.satisfies(c):
        assert a.satisfies(c)


@given(any_role)
def test_every_role_satisfies_itself_and_user(role):
    assert role.satisfies(role)
    assert role.satisfies(Role.USER)


def test_require_names_both_roles():
    with pytest.raises(RoleNotPermitted) as e:
        roles.require(Role.ORGMEMBER, Role.ORGADMIN)
    assert e.value.code == "AT-1019"
    assert "orgadmin" in e.value.message() and "orgmember" in e.value.message()


@given(any_role, any_role)
def test_lower_is_the_greatest_role_both_satisfy(a, b):
    low = roles.lower(a, b)
    assert low in (a, b) and low == roles.lower(b, a)
    assert a.satisfies(low) and b.satisfies(low)
    # nothing higher is satisfied by both
    for other in LADDER:
        if a.satisfies(other) and b.satisfies(other):
            assert low.satisfies(other)


@given(
    st.sampled_from(roles.ORG_ROLES),
    st.sampled_from([Role.USER, Role.SUPERADMIN]),
    st.sampled_from([None, *roles.ORG_ROLES]),
)
def test_a_keys_effective_role_never_exceeds_its_creators_standing(own, creator, in_org):
    held = api_key.effective_role(own, creator, in_org)
    if creator is Role.SUPERADMIN:
        assert held is own
    elif in_org is None:
        assert held is None
    else:
        assert held is not None
        assert own.satisfies(held) and in_org.satisfies(held)
        assert held in (own, in_org)
