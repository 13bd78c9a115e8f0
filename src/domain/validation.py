"""What checking a business document against the published rules found.

Billing documents (a UBL ``Invoice`` or ``CreditNote``, a CII ``CrossIndustryInvoice``) are
checked against the EN 16931 rules and the network's BIS Billing 3.0 rules of their syntax.
Every other document (orders, catalogues, message level statuses, ...) is *not checked*: it is
neither valid nor invalid, because these rules do not apply to it.
"""

from __future__ import annotations

import enum

import attrs


class Flag(enum.Enum):
    """How serious a failed rule is, as the rule itself says (``@flag`` of the assert)."""

    FATAL = "fatal"
    WARNING = "warning"


@attrs.frozen
class FailedAssert:
    """One rule that failed at one place: the same rule failing at two places is two of these.

    ``id`` names the rule (``BR-CO-15``, ``PEPPOL-EN16931-R001``), ``location`` is the XPath of
    the node it failed on, ``text`` the rule's own explanation."""

    id: str
    flag: Flag
    location: str
    text: str


@attrs.frozen
class ValidationResult:
    """``checked``: the rules applied and ran. ``rules`` names the rule sets and their
    versions. ``svrl`` is the rules' report (one SVRL document holding every failed assert of
    every rule set), empty when nothing was checked."""

    checked: bool
    root: str  # the local name of the document's root element (of the payload, in an SBD)
    customization_id: str | None
    profile_id: str | None
    rules: str
    errors: tuple[FailedAssert, ...] = ()
    warnings: tuple[FailedAssert, ...] = ()
    svrl: bytes = b""

    @property
    def valid(self) -> bool | None:
        """True when no fatal rule failed; None when the document was not checked."""
        if not self.checked:
            return None
        return not self.errors

    @classmethod
    def not_checked(
        cls, root: str, customization_id: str | None = None, profile_id: str | None = None
    ) -> ValidationResult:
        return cls(
            checked=False,
            root=root,
            customization_id=customization_id,
            profile_id=profile_id,
            rules="",
        )

    @classmethod
    def of(
        cls,
        root: str,
        customization_id: str | None,
        profile_id: str | None,
        rules: str,
        failed: tuple[FailedAssert, ...] | list[FailedAssert],
        svrl: bytes,
    ) -> ValidationResult:
        """A checked document's result: ``failed`` sorted into errors and warnings by flag."""
        return cls(
            checked=True,
            root=root,
            customization_id=customization_id,
            profile_id=profile_id,
            rules=rules,
            errors=tuple(f for f in failed if f.flag is Flag.FATAL),
            warnings=tuple(f for f in failed if f.flag is Flag.WARNING),
            svrl=svrl,
        )
