"""Document types under the wildcard scheme (``peppol-doctype-wildcard`` on the wire, the
network's PINT documents): where a registration's ``*`` goes and which registration covers a
document.

A document type value is ``<root namespace>::<local name>##<customization id>::<version>``.
Under the wildcard scheme a registration's customization id may end in ``*``
(``...##urn:peppol:pint:billing-1@jp-1*::2.1``), standing for every customization id that
starts with what comes before it. A sender looks the receiver's registrations up in this
order (Policy for use of identifiers 4.3): the value itself; its customization id with ``*``
appended; then successively shorter customization ids, each cut at its last ``@``, with ``*``
appended (``billing-1@jp-1*``, then ``billing-1*``). A customization id holding a ``*``
elsewhere than at its end matches nothing.
"""

from __future__ import annotations

import attrs

WILDCARD = "*"
PART_SEPARATOR = "@"


@attrs.frozen
class DocumentTypeParts:
    """A document type value cut in three: ``head`` (root namespace ``::`` local name),
    ``customization`` and ``version``."""

    head: str
    customization: str
    version: str

    @staticmethod
    def of(value: str) -> DocumentTypeParts | None:
        """The parts of ``value``; None when it is not in the ``head##customization::version``
        form."""
        head, hashes, rest = value.partition("##")
        customization, colons, version = rest.rpartition("::")
        if not (hashes and colons and head and customization and version):
            return None
        return DocumentTypeParts(head, customization, version)

    def with_customization(self, customization: str) -> str:
        return f"{self.head}##{customization}::{self.version}"


def registered(value: str) -> str:
    """The value a wildcard registration of document type ``value`` publishes: its
    customization id ending in ``*`` (``value`` itself when it already does, or is not in the
    document type form)."""
    parts = DocumentTypeParts.of(value)
    if parts is None or parts.customization.endswith(WILDCARD):
        return value
    return parts.with_customization(parts.customization + WILDCARD)


def candidates(value: str) -> list[str]:
    """The registrations a sender of document type ``value`` looks for, best first (the
    policy's order; a trailing ``*`` of ``value`` is ignored). Empty when the customization id
    holds a ``*`` elsewhere; ``[value]`` when ``value`` is not in the document type form."""
    parts = DocumentTypeParts.of(value)
    if parts is None:
        return [value]
    remaining = parts.customization.removesuffix(WILDCARD)
    if WILDCARD in remaining:
        return []
    found = [parts.with_customization(remaining), parts.with_customization(remaining + WILDCARD)]
    while PART_SEPARATOR in remaining:
        remaining = remaining[: remaining.rindex(PART_SEPARATOR)]
        found.append(parts.with_customization(remaining + WILDCARD))
    return found


def covers(registration: str, value: str) -> bool:
    """Whether a wildcard registration of ``registration`` takes documents of type ``value``:
    a sender of ``value`` would pick it, were it the receiver's only one."""
    return registration in candidates(value)


def best_match(value: str, listed: list[str] | tuple[str, ...]) -> str | None:
    """The registration among ``listed`` that a sender of ``value`` picks, if any."""
    for candidate in candidates(value):
        if candidate in listed:
            return candidate
    return None
