"""Request bodies: organisations (with contacts), members and API keys, valid unless asked
otherwise, each with an almost valid variant (``AT-1006``, ``AT-1123``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from fourcorner.entrypoints.harness.strategies.identifiers import (
    UPPER,
    almost_valid_participant_identifiers,
    local_parts,
)

# names of organisations, contacts, keys and items
NAMES = st.text(UPPER + "abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=20).map(
    lambda s: s.strip() or "A"
)
LEGAL_SCHEMES: Mapping[str, str] = {"SE:ORGNR": "0007", "NO:ORG": "0192", "DK:DIGST": "0184"}


def contacts(*, contact_type: str | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """A contact as ``POST /orgs`` and ``PUT /orgs/{id}`` take it."""
    return st.builds(
        lambda name, n, kind: {"name": name, "email": f"c{n}@example.com", "contactType": kind},
        NAMES,
        st.integers(0, 999),
        st.just(contact_type) if contact_type else st.sampled_from(["BUSINESS", "TECHNICAL"]),
    )


@st.composite
def organisations(
    draw: st.DrawFn, legal_identifiers: st.SearchStrategy[str] | None = None
) -> dict[str, Any]:
    """A ``POST /orgs`` body: a legal identifier of a scheme with check digits."""
    code = draw(st.sampled_from(sorted(LEGAL_SCHEMES)))
    identifier = draw(legal_identifiers or local_parts(LEGAL_SCHEMES[code]))
    body: dict[str, Any] = {
        "legalName": draw(NAMES),
        "countryCode": code[:2],
        "legalIdentifier": identifier,
        "legalIdentifierCode": code,
    }
    if draw(st.booleans()):
        body["contacts"] = draw(st.lists(contacts(), max_size=2))
    return body


@st.composite
def almost_valid_organisations(draw: st.DrawFn) -> dict[str, Any]:
    """A ``POST /orgs`` body whose legal identifier fails its check digit (``AT-1006``)."""
    body = draw(organisations())
    icd = LEGAL_SCHEMES[body["legalIdentifierCode"]]
    wrong = draw(almost_valid_participant_identifiers((icd,)))
    return {**body, "legalIdentifier": wrong.partition(":")[2]}


def members(user_ids: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    """A ``POST /orgs/{id}/members`` body for one of ``user_ids``."""
    return st.fixed_dictionaries(
        {"userId": user_ids, "role": st.sampled_from(["orgmember", "orgadmin"])}
    )


def _expiry(days: int) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def api_key_requests(
    *, roles: tuple[str, ...] = ("orgmember", "orgadmin")
) -> st.SearchStrategy[dict[str, Any]]:
    """A ``POST /orgs/{id}/api_keys`` body, expiring between a day and ten years from now."""
    return st.fixed_dictionaries(
        {
            "name": NAMES,
            "role": st.sampled_from(roles),
            "expires": st.integers(1, 3650).map(_expiry),
        }
    )


def almost_valid_api_key_requests() -> st.SearchStrategy[dict[str, Any]]:
    """An API key request that expired already (``AT-1123``)."""
    return api_key_requests().flatmap(
        lambda body: st.integers(1, 3650).map(lambda d: {**body, "expires": _expiry(-d)})
    )
