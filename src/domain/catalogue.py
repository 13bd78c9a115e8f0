"""The network's reference data: document types, identifier schemes, processes, transports.

Records hold one code-list entry each, with snake_case attributes; how the interface shows
them (camelCase, except the DocumentType, whose kebab-case names the specification shows) is
the HTTP edge's business (its response classes). Names where the
network's own name stands as a word use the neutral word ``net`` (``net-doctype-wildcard``,
``issued_by_opennet``); the published spelling is kept as ``wire_scheme`` / ``wire_profile_id``.
Published URN values (document type and process values) are kept exactly as published.

``neutral`` is the one place where the network's own spellings become the interface's: the code
lists are read through it, and every input that takes such a name or value (transport profiles
in bodies and filters, the document type scheme, the ``issued-by-opennet`` field) accepts both.
"""

from __future__ import annotations

import uuid

import attrs

from fourcorner.domain.errors import InvalidIdentifier
from fourcorner.domain.identifier import ParticipantIdentifier, SchemeRule, local_part_problem
from fourcorner.domain.text import quoted

# Document type ids are uuid5(DOCUMENT_TYPE_NAMESPACE, "<wire scheme>::<value>"): stable across
# restarts and code-list versions. Never change this constant.
DOCUMENT_TYPE_NAMESPACE = uuid.UUID("e7e0871e-27c6-4954-a1c6-7ba72e7a6b6d")

ACTIVE, DEPRECATED, REMOVED = "active", "deprecated", "removed"

# The network's name as a word of identifiers and field names, and the interface's word for it
# (NETWORK.md, first table): ``peppol-transport-as4-v2_0``, ``issued-by-openpeppol``.
_NETWORK_PREFIX, _NEUTRAL_PREFIX = "peppol-", "net-"
_NETWORK_FIELDS = {"issued-by-openpeppol": "issued-by-opennet"}


def neutral(text: str) -> str:
    """The interface's spelling of a name or value the network spells with its own name
    (``peppol-doctype-wildcard`` → ``net-doctype-wildcard``, ``issued-by-openpeppol`` →
    ``issued-by-opennet``); any other text, the neutral spelling included, is unchanged."""
    if text.startswith(_NETWORK_PREFIX):
        return _NEUTRAL_PREFIX + text.removeprefix(_NETWORK_PREFIX)
    return _NETWORK_FIELDS.get(text, text)


def network_spelling(text: str) -> str:
    """The network's own spelling of a name the interface spells neutrally
    (``net-doctype-wildcard`` → ``peppol-doctype-wildcard``: ``neutral`` undone); any other
    text is unchanged."""
    if text.startswith(_NEUTRAL_PREFIX):
        return _NETWORK_PREFIX + text.removeprefix(_NEUTRAL_PREFIX)
    return text


def wire_spellings(name: str) -> tuple[str, ...]:
    """The network's own spellings that ``neutral`` turns into ``name`` (field names)."""
    return tuple(wire for wire, ours in _NETWORK_FIELDS.items() if ours == name)


def document_type_id(wire_scheme: str, value: str) -> str:
    """The ``id`` of the document type (``scheme`` as published on the wire, ``value``)."""
    return str(uuid.uuid5(DOCUMENT_TYPE_NAMESPACE, f"{wire_scheme}::{value}"))


def kebab(name: str) -> str:
    """``issuing_agency`` → ``issuing-agency``."""
    return name.replace("_", "-")


def camel(name: str) -> str:
    """``issuing_agency`` → ``issuingAgency``."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


@attrs.frozen
class ProcessRef:
    """One entry of a document type's ``process-ids``."""

    scheme: str
    value: str

    @property
    def process_id(self) -> str:
        """``<scheme>::<value>``, the ``processId`` of a supported document type entry."""
        return f"{self.scheme}::{self.value}"


@attrs.frozen(kw_only=True)
class DocumentType:
    id: str
    name: str
    scheme: str
    wire_scheme: str
    value: str
    version: str
    initial_release: str
    state: str
    abstract: bool
    issued_by_opennet: bool
    category: str
    process_ids: tuple[ProcessRef, ...]
    bis_version: str | None = None
    comment: str | None = None
    domain_community: str | None = None
    deprecation_release: str | None = None
    removal_date: str | None = None


@attrs.frozen(kw_only=True)
class IdentifierScheme:
    """A participant identifier scheme; ``iso6523`` is its 4-digit ICD."""

    schemeid: str
    iso6523: str
    country: str
    scheme_name: str
    initial_release: str
    state: str
    registrable: bool
    issuing_agency: str | None = None
    deprecation_release: str | None = None
    removal_date: str | None = None
    structure: str | None = None
    display: str | None = None
    examples: str | None = None
    validation_rules: str | None = None
    usage: str | None = None
    rule: SchemeRule = attrs.field(init=False, eq=False, repr=False)

    @rule.default
    def _rule(self) -> SchemeRule:
        return SchemeRule.of(self.iso6523, self.validation_rules)

    # Precomputed, so that validation builds no text for valid identifiers.
    registration_refusal: str | None = attrs.field(init=False, eq=False, repr=False)
    warning: str | None = attrs.field(init=False, eq=False, repr=False)

    @registration_refusal.default
    def _refusal(self) -> str | None:
        """Why participants cannot be registered in this scheme, or ``None`` when they can."""
        if self.state == REMOVED:
            on = f" on {self.removal_date}" if self.removal_date else ""
            return f"{self.iso6523}: the scheme {self.schemeid} was removed{on}"
        if not self.registrable:
            return (
                f"{self.iso6523}: participants of the scheme {self.schemeid} cannot be registered"
            )
        return None

    @warning.default
    def _warning(self) -> str | None:
        """A note for identifiers of a deprecated or removed scheme, else ``None``."""
        removal = f", removal date {self.removal_date}" if self.removal_date else ""
        if self.state == DEPRECATED:
            since = f" since code list release {self.deprecation_release}"
            return f"{self.iso6523}: the scheme {self.schemeid} is deprecated{since}{removal}"
        if self.state == REMOVED:
            return f"{self.iso6523}: the scheme {self.schemeid} was removed{removal}"
        return None

    @property
    def code(self) -> str:
        return self.schemeid

    @property
    def example_values(self) -> tuple[str, ...]:
        return tuple(e.strip() for e in (self.examples or "").splitlines() if e.strip())


@attrs.frozen
class Process:
    scheme: str
    value: str
    state: str

    @property
    def process_id(self) -> str:
        return f"{self.scheme}::{self.value}"


@attrs.frozen(kw_only=True)
class TransportProfile:
    protocol: str
    profile_version: str
    profile_id: str
    wire_profile_id: str
    initial_release: str
    state: str
    deprecation_release: str | None = None
    removal_date: str | None = None
    comment: str | None = None


@attrs.frozen
class ValidatedIdentifier:
    """A participant identifier that passed its scheme's rules; ``warning`` if deprecated."""

    identifier: ParticipantIdentifier
    scheme: IdentifierScheme
    warning: str | None = None

    @property
    def canonical(self) -> str:
        return self.identifier.canonical


def _code_key(code: str) -> str:
    return code.strip().upper().replace("_", ":")


@attrs.frozen
class Catalogue:
    """One version of the code lists, with look-ups and identifier validation."""

    version: str
    document_types: tuple[DocumentType, ...]
    schemes: tuple[IdentifierScheme, ...]
    processes: tuple[Process, ...]
    transport_profiles: tuple[TransportProfile, ...]
    _by_id: dict[str, DocumentType] = attrs.field(init=False, eq=False, repr=False)
    _by_value: dict[tuple[str, str], DocumentType] = attrs.field(init=False, eq=False, repr=False)
    _by_icd: dict[str, IdentifierScheme] = attrs.field(init=False, eq=False, repr=False)
    _by_code: dict[str, IdentifierScheme] = attrs.field(init=False, eq=False, repr=False)

    @_by_id.default
    def _index_ids(self) -> dict[str, DocumentType]:
        return {d.id: d for d in self.document_types}

    @_by_value.default
    def _index_values(self) -> dict[tuple[str, str], DocumentType]:
        index = {(d.wire_scheme, d.value): d for d in self.document_types}
        index.update({(d.scheme, d.value): d for d in self.document_types})
        return index

    @_by_icd.default
    def _index_icds(self) -> dict[str, IdentifierScheme]:
        return {s.iso6523: s for s in self.schemes}

    @_by_code.default
    def _index_codes(self) -> dict[str, IdentifierScheme]:
        return {_code_key(s.schemeid): s for s in self.schemes}

    # --- look-ups ---------------------------------------------------------------------------

    def document_type(self, id: str) -> DocumentType | None:
        return self._by_id.get(id)

    def document_type_by_value(self, scheme: str, value: str) -> DocumentType | None:
        """By (scheme, value); ``scheme`` in the neutral or the published spelling."""
        return self._by_value.get((scheme, value))

    def scheme_by_icd(self, icd: str) -> IdentifierScheme | None:
        return self._by_icd.get(icd)

    def scheme_by_code(self, code: str) -> IdentifierScheme | None:
        """By scheme id in either spelling (``SE:ORGNR``, ``se_orgnr``) or by ICD (``0007``)."""
        key = _code_key(code)
        return self._by_icd.get(key) or self._by_code.get(key)

    # --- constants --------------------------------------------------------------------------

    def categories(self) -> tuple[str, ...]:
        return tuple(sorted({d.category for d in self.document_types}))

    def document_type_states(self) -> tuple[str, ...]:
        return tuple(sorted({d.state for d in self.document_types}))

    def process_ids(self) -> tuple[str, ...]:
        return tuple(p.process_id for p in self.processes)

    def transport_profile_ids(self) -> tuple[str, ...]:
        return tuple(t.profile_id for t in self.transport_profiles)

    def transport_profile(self, profile_id: str) -> TransportProfile | None:
        """By profile id, in the neutral or the network's spelling."""
        wanted = neutral(profile_id)
        return next((t for t in self.transport_profiles if t.profile_id == wanted), None)

    # --- identifiers ------------------------------------------------------------------------

    def validate_participant_identifier(
        self, value: str, *, for_registration: bool = True, field: str = "participantIdentifier"
    ) -> ValidatedIdentifier:
        """Check ``NNNN:local`` against the general form and its scheme's rules.

        For registration, schemes that are removed or not registrable are refused. Raises
        ``InvalidIdentifier`` with the broken rule (``"0088: check digit is 5, expected 3"``).
        """
        identifier = ParticipantIdentifier.parse(value, field=field)
        scheme = self._by_icd.get(identifier.icd)
        if scheme is None:
            rule = f"{identifier.icd}: no participant identifier scheme has this ICD"
            raise InvalidIdentifier(value=value, rule=rule, field=field)
        if for_registration and (refusal := scheme.registration_refusal) is not None:
            raise InvalidIdentifier(value=value, rule=refusal, field=field)
        problem = scheme.rule.problem(identifier.local)
        if problem is not None:
            raise InvalidIdentifier(value=value, rule=problem, field=field)
        return ValidatedIdentifier(identifier, scheme, scheme.warning)

    def legal_scheme(self, code: str, within: str = "") -> IdentifierScheme:
        """The scheme of a legal identifier code (either spelling, or the ICD); unknown and
        removed schemes are refused (AT-1006, field ``<within>legalIdentifierCode``)."""
        scheme = self.scheme_by_code(code)
        if scheme is None or scheme.state == REMOVED:
            why = "is not a participant identifier scheme" if scheme is None else "was removed"
            rule = f"the scheme code {quoted(code)} {why}"
            raise InvalidIdentifier(value=code, rule=rule, field=f"{within}legalIdentifierCode")
        return scheme

    def validate_legal_identifier(
        self, code: str, identifier: str, within: str = ""
    ) -> tuple[IdentifierScheme, str]:
        """An organisation's (legal identifier code, legal identifier): the scheme, and the
        identifier without white space, upper case. Removed schemes are refused. ``within``:
        the path of the object holding the two fields (``businessCard.``), for the error."""
        scheme = self.legal_scheme(code, within)
        normalised = "".join(identifier.split()).upper()
        problem = local_part_problem(normalised) or scheme.rule.problem(normalised)
        if problem is not None:
            raise InvalidIdentifier(
                value=identifier, rule=problem, field=f"{within}legalIdentifier"
            )
        return scheme, normalised
