"""How a lookup of a receiver fails: one error with a ``Problem`` saying what kind of failure it
is, shared by discovery (DNS), the SMP client and the trust checks."""

from __future__ import annotations

import enum


class Problem(enum.Enum):
    """What went wrong; only ``UNREACHABLE`` and ``REVOCATION_UNKNOWN`` may go away by asking
    again later."""

    NOT_REGISTERED = "not registered"  # no DNS name, no record, no such participant
    NOT_ACCEPTED = "not accepted"  # registered, but not for this document type and process
    UNREACHABLE = "unreachable"  # DNS or SMP timeouts, network trouble, 5xx
    SMP_UNTRUSTED = "smp untrusted"  # the SMP's answer is unsigned, altered, unreadable, untrusted
    ENDPOINT_UNTRUSTED = "endpoint untrusted"  # the published AP certificate is not trusted
    INSECURE = "insecure"  # a peer reached over plain http that is not allowed
    # whether the SMP's or the endpoint's certificate is revoked cannot be told yet
    REVOCATION_UNKNOWN = "revocation unknown"


class SmpLookupError(Exception):
    """The lookup failed; ``permanent`` is False only when retrying later may succeed."""

    def __init__(self, reason: str, problem: Problem) -> None:
        super().__init__(reason)
        self.reason = reason
        self.problem = problem

    @property
    def permanent(self) -> bool:
        return self.problem not in (Problem.UNREACHABLE, Problem.REVOCATION_UNKNOWN)

    def __repr__(self) -> str:
        return f"SmpLookupError({self.reason!r}, {self.problem.name})"
