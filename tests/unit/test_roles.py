"""The role ladder: superadmin ⊇ orgadmin ⊇ orgmember ⊇ user."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain import roles
from domain.errors import RoleNotPermitted
from domain.roles import Role

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
