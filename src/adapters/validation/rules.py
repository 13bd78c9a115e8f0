"""Which published rules apply to which document, and where their files lie.

The root element of the business document picks the syntax: a UBL ``Invoice`` or
``CreditNote`` gets the EN 16931 and BIS Billing 3.0 rules bound to UBL, a CII
``CrossIndustryInvoice`` those bound to CII. The rules themselves check ``CustomizationID`` and
``ProfileID``; nothing here skips a document for a missing or foreign one.
"""

from __future__ import annotations

import enum
from importlib import resources
from pathlib import Path

import attrs

UBL_INVOICE = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"
UBL_CREDIT_NOTE = "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2"
CII = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
CBC = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"
RSM = CII
RAM = "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"

DATA_PACKAGE = "fourcorner.adapters.validation.data"
PIPELINE = "schxslt/pipeline-for-svrl.xsl"


class Syntax(enum.Enum):
    UBL = "UBL"
    CII = "CII"


@attrs.frozen
class RuleSet:
    name: str
    version: str
    file: str  # under the data folder

    @property
    def title(self) -> str:
        return f"{self.name} {self.version}"


RULES: dict[Syntax, tuple[RuleSet, ...]] = {
    Syntax.UBL: (
        RuleSet("EN 16931 UBL", "1.3.14.1", "schematron/CEN-EN16931-UBL.sch"),
        RuleSet("BIS Billing 3.0 UBL", "3.0.19", "schematron/PEPPOL-EN16931-UBL.sch"),
    ),
    Syntax.CII: (
        RuleSet("EN 16931 CII", "1.3.14.1", "schematron/CEN-EN16931-CII.sch"),
        RuleSet("BIS Billing 3.0 CII", "3.0.19", "schematron/PEPPOL-EN16931-CII.sch"),
    ),
}

# (namespace, local name) of the root element -> the syntax whose rules apply
BILLING: dict[tuple[str, str], Syntax] = {
    (UBL_INVOICE, "Invoice"): Syntax.UBL,
    (UBL_CREDIT_NOTE, "CreditNote"): Syntax.UBL,
    (CII, "CrossIndustryInvoice"): Syntax.CII,
}


def titles(syntax: Syntax) -> str:
    """The rule sets of ``syntax`` with their versions, as reported with every result."""
    return ", ".join(r.title for r in RULES[syntax])


def data_dir() -> Path:
    """The folder of the rule files (package data, on the file system: Saxon reads them by
    path, and the compiler's includes are resolved relative to it)."""
    return Path(str(resources.files(DATA_PACKAGE)))
