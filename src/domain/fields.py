"""Rules of the plain fields an organisation fills in and the service shows or publishes: a
country code, a web address, an email address, and the contacts and business cards made of
them. Each rule answers the problem as a client reads it, or None."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from fourcorner.domain.catalogue import Catalogue
from fourcorner.domain.errors import Detail, InvalidInput
from fourcorner.domain.organisation import Contact
from fourcorner.domain.participant import BusinessCard

MAX_URL_LENGTH = 2000
_COUNTRY = re.compile(r"[A-Z]{2}")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
_HOST = re.compile(r"[A-Za-z0-9._~%!$&'()*+,;=:\[\]-]+")
_URL_PROBLEM = "an absolute http or https URL, e.g. https://www.example.com"


def country_problem(code: str) -> str | None:
    """A two-letter country code in capitals (ISO 3166-1 alpha-2 shape)."""
    if _COUNTRY.fullmatch(code):
        return None
    return "a two-letter country code in capitals, e.g. SE"


def url_problem(url: str) -> str | None:
    """An absolute http or https URL with a host, no white space, at most
    ``MAX_URL_LENGTH`` characters: what a browser opens as a web page, never a script
    (``javascript:``), a file or a relative path."""
    if len(url) > MAX_URL_LENGTH:
        return f"at most {MAX_URL_LENGTH} characters"
    if any(c.isspace() for c in url):
        return f"{_URL_PROBLEM}, without white space"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        return _URL_PROBLEM
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return _URL_PROBLEM
    if not _HOST.fullmatch(parts.netloc.rpartition("@")[2]):
        return _URL_PROBLEM
    return None


def email_problem(email: str) -> str | None:
    return None if _EMAIL.fullmatch(email) else "an email address"


def published_url(url: str) -> str:
    """``url`` when it may be published (``url_problem``), else "" (left out): records stored
    before the rule was checked on input are checked again where they are published."""
    return "" if url_problem(url) else url


def published_contact_link(link: str) -> str:
    """A technical contact as published (an http(s) URL or ``mailto:`` and an email
    address), else "" (left out)."""
    if link.startswith("mailto:"):
        return "" if email_problem(link.removeprefix("mailto:")) else link
    return published_url(link)


def contact_problems(contacts: Iterable[Contact], path: str) -> list[Detail]:
    """The problems of ``contacts`` (at ``path``, e.g. ``$.contacts``): their email addresses
    and web contact URLs, when given."""
    problems: list[Detail] = []
    for i, c in enumerate(contacts):
        if c.email and (problem := email_problem(c.email)):
            problems.append(Detail(f"{path}[{i}].email", problem))
        if c.web_contact_url and (problem := url_problem(c.web_contact_url)):
            problems.append(Detail(f"{path}[{i}].webContactUrl", problem))
    return problems


def optional_problems(path: str, country_code: str | None, website: str | None) -> list[Detail]:
    """The problems of a country code and a website given (empty or None: left out)."""
    problems: list[Detail] = []
    if country_code and (problem := country_problem(country_code)):
        problems.append(Detail(f"{path}.countryCode", problem))
    if website and (problem := url_problem(website)):
        problems.append(Detail(f"{path}.website", problem))
    return problems


def check_business_card(card: BusinessCard, catalogue: Catalogue) -> None:
    """A participant's business card, published by its SMP and the directory: its country
    code, website and contacts as an organisation's (AT-1001), its legal identifier code a
    scheme in either spelling or its ICD, and with a legal identifier, that identifier valid
    in the scheme (AT-1006)."""
    path = "$.businessCard"
    problems = optional_problems(path, card.country_code, card.website)
    problems += contact_problems(card.contacts, f"{path}.contacts")
    if problems:
        raise InvalidInput(problems)
    if card.legal_identifier_code and card.legal_identifier:
        catalogue.validate_legal_identifier(
            card.legal_identifier_code, card.legal_identifier, within="businessCard."
        )
    elif card.legal_identifier_code:
        catalogue.legal_scheme(card.legal_identifier_code, within="businessCard.")
