"""Reads the code lists shipped in ``adapters.codelists.data`` into a domain ``Catalogue``.

Files are read when ``load_catalogue()`` is first called, never at import. Where the network's
name stands as a word of an identifier (``peppol-doctype-wildcard``,
``peppol-transport-as4-v2_0``) the neutral word ``net`` replaces it (``domain.catalogue.neutral``);
the published spelling is kept beside it (``wire_scheme``, ``wire_profile_id``). URN values are
kept as published.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from fourcorner.domain.catalogue import (
    Catalogue,
    DocumentType,
    IdentifierScheme,
    Process,
    ProcessRef,
    TransportProfile,
    document_type_id,
    neutral,
)

DATA_PACKAGE = "fourcorner.adapters.codelists.data"
RELEASE = "9.7"
DOCUMENT_TYPES = f"Peppol Code Lists - Document types v{RELEASE}.json"
SCHEMES = f"Peppol Code Lists - Participant identifier schemes v{RELEASE}.json"
PROCESSES = f"Peppol Code Lists - Processes v{RELEASE}.json"
TRANSPORT_PROFILES = f"Peppol Code Lists - Transport profiles v{RELEASE}.json"


def read_list(name: str) -> dict[str, Any]:
    """One code-list file as JSON: ``{"version", "entry-count", "values"}``."""
    text = (resources.files(DATA_PACKAGE) / name).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    if data["entry-count"] != len(data["values"]):
        raise ValueError(f"{name}: entry-count {data['entry-count']} != {len(data['values'])}")
    return data


def document_type(entry: dict[str, Any], version: str) -> DocumentType:
    return DocumentType(
        id=document_type_id(entry["scheme"], entry["value"]),
        name=entry["name"],
        scheme=neutral(entry["scheme"]),
        wire_scheme=entry["scheme"],
        value=entry["value"],
        version=version,
        initial_release=entry["initial-release"],
        state=entry["state"],
        abstract=entry["abstract"],
        issued_by_opennet=entry["issued-by-openpeppol"],
        category=entry["category"],
        process_ids=tuple(ProcessRef(p["scheme"], p["value"]) for p in entry["process-ids"]),
        bis_version=entry.get("bis-version"),
        comment=entry.get("comment"),
        domain_community=entry.get("domain-community"),
        deprecation_release=entry.get("deprecation-release"),
        removal_date=entry.get("removal-date"),
    )


def identifier_scheme(entry: dict[str, Any]) -> IdentifierScheme:
    return IdentifierScheme(
        schemeid=entry["schemeid"],
        iso6523=entry["iso6523"],
        country=entry["country"],
        scheme_name=entry["scheme-name"],
        initial_release=entry["initial-release"],
        state=entry["state"],
        registrable=entry["registrable"],
        issuing_agency=entry.get("issuing-agency"),
        deprecation_release=entry.get("deprecation-release"),
        removal_date=entry.get("removal-date"),
        structure=entry.get("structure"),
        display=entry.get("display"),
        examples=entry.get("examples"),
        validation_rules=entry.get("validation-rules"),
        usage=entry.get("usage"),
    )


def transport_profile(entry: dict[str, Any]) -> TransportProfile:
    return TransportProfile(
        protocol=entry["protocol"],
        profile_version=entry["profile-version"],
        profile_id=neutral(entry["profile-id"]),
        wire_profile_id=entry["profile-id"],
        initial_release=entry["initial-release"],
        state=entry["state"],
        deprecation_release=entry.get("deprecation-release"),
        removal_date=entry.get("removal-date"),
        comment=entry.get("comment"),
    )


@functools.cache
def load_catalogue() -> Catalogue:
    """The code lists of release 9.7, read once and shared (the catalogue is immutable)."""
    lists = {
        name: read_list(name) for name in (DOCUMENT_TYPES, SCHEMES, PROCESSES, TRANSPORT_PROFILES)
    }
    versions = {data["version"] for data in lists.values()}
    if len(versions) != 1:
        raise ValueError(f"the code lists disagree on their version: {sorted(versions)}")
    version = versions.pop()
    return Catalogue(
        version=version,
        document_types=tuple(document_type(e, version) for e in lists[DOCUMENT_TYPES]["values"]),
        schemes=tuple(identifier_scheme(e) for e in lists[SCHEMES]["values"]),
        processes=tuple(
            Process(e["scheme"], e["value"], e["state"]) for e in lists[PROCESSES]["values"]
        ),
        transport_profiles=tuple(transport_profile(e) for e in lists[TRANSPORT_PROFILES]["values"]),
    )
