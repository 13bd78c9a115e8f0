"""The SMP wire layer: SMP 1.x documents (rendering and hardened parsing), their enveloped
XML signature, and a lookup client that verifies what an SMP answers."""

from fourcorner.adapters.smp.answers import DEFAULT_TRANSPORT_PROFILE, LookupResult
from fourcorner.adapters.smp.client import SmpLookupClient
from fourcorner.adapters.smp.errors import Problem, SmpLookupError
from fourcorner.adapters.smp.signature import SignatureError, sign_enveloped, verify_enveloped
from fourcorner.adapters.smp.trust import Trust
from fourcorner.adapters.smp.xml import (
    MalformedDocument,
    ParsedEndpoint,
    ParsedMetadata,
    ParsedProcess,
    ParsedRedirect,
    business_card,
    parse_path_segment,
    parse_service_group,
    parse_signed_service_metadata,
    parse_untrusted,
    path_segment,
    read_signed_service_metadata,
    service_group,
    signed_service_metadata,
    split_identifier,
)

__all__ = [
    "DEFAULT_TRANSPORT_PROFILE",
    "LookupResult",
    "MalformedDocument",
    "ParsedEndpoint",
    "ParsedMetadata",
    "ParsedProcess",
    "ParsedRedirect",
    "Problem",
    "SignatureError",
    "SmpLookupClient",
    "SmpLookupError",
    "Trust",
    "business_card",
    "parse_path_segment",
    "parse_service_group",
    "parse_signed_service_metadata",
    "parse_untrusted",
    "path_segment",
    "read_signed_service_metadata",
    "service_group",
    "sign_enveloped",
    "signed_service_metadata",
    "split_identifier",
    "verify_enveloped",
]
