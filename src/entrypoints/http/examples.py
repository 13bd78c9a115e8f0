"""The examples of the OpenAPI document: one organisation's records, rendered as answers.

Each answer's example is a record of the domain (or the use case's result) rendered through
the answer's own response class (``Answer.dump``), as a handler renders it, so the examples
cannot drift from what the service answers. Request bodies are written out as a client sends
them; the contract test ``test_openapi_descriptions`` reads each one through the converter
(as the server reads it) and checks every example against its schema.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import cattrs

from fourcorner.application.ports import PublishedEndpoint, ReceiverLookup
from fourcorner.application.sml import PreparedMigration
from fourcorner.domain import clock
from fourcorner.domain.api_key import ApiKey
from fourcorner.domain.catalogue import DocumentType, IdentifierScheme, ProcessRef
from fourcorner.domain.certificates import Certificate, CertificateEnvironment, Service
from fourcorner.domain.events import EVENT_NAMES
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.network_services import AccessPoint, Environment, Smp
from fourcorner.domain.organisation import (
    Address,
    Contact,
    ContactType,
    Mode,
    Organisation,
    UserRef,
)
from fourcorner.domain.participant import (
    BusinessCard,
    DirectoryPublication,
    Participant,
    PublicationState,
    SupportedDocumentType,
)
from fourcorner.domain.roles import Role
from fourcorner.domain.transaction import Artefact, ArtefactType, Direction, Status, Transaction
from fourcorner.domain.user import User
from fourcorner.domain.validation import FailedAssert, Flag, ValidationResult
from fourcorner.domain.webhook import Attempt, DeliveryStatus, DeliverySummary, Event, Webhook
from fourcorner.entrypoints.http import answers, responses
from fourcorner.entrypoints.http.catalogue_handlers import ConstantsResponse
from fourcorner.entrypoints.http.rendering import Answer

ORG_ID = uuid.UUID("3f1c2a9e-8b7d-4e6f-9a51-2c3d4e5f6a7b")
OTHER_ORG_ID = uuid.UUID("7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d")
USER_ID = "auth0|5f7c8ec7a1b2c3d4e5f6a7b8"
MEMBER_ID = uuid.UUID("0b9e3c52-6f41-4d8a-9c27-5e1a2b3c4d5e")
KEY_ID = uuid.UUID("5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a")
SMP_ID = uuid.UUID("9c8b7a6f-5e4d-4c3b-a2a1-0f9e8d7c6b5a")
AP_ID = uuid.UUID("2e4f6a8c-0b1d-4f3e-8a5c-7e9f1a3b5c7d")
CERT_ID = uuid.UUID("6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d")
PARTICIPANT_ID = uuid.UUID("8f7e6d5c-4b3a-4291-8f0e-1d2c3b4a5968")
WEBHOOK_ID = uuid.UUID("4b5c6d7e-8f9a-4b0c-9d1e-2f3a4b5c6d7e")
EVENT_ID = uuid.UUID("1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d")
DELIVERY_ID = uuid.UUID("c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f")
TRANSACTION_ID = uuid.UUID("e1d2c3b4-a596-4877-9685-a4b3c2d1e0f9")
ARTEFACT_ID = uuid.UUID("f0e1d2c3-b4a5-4968-8776-655443322110")
DOCUMENT_TYPE_ID = "f679568b-5650-5658-ad6d-ad7ef9bc27b3"

CREATED = datetime(2026, 3, 2, 9, 15, 30, 123000, tzinfo=UTC)
CHANGED = datetime(2026, 3, 5, 14, 2, 11, 456000, tzinfo=UTC)
BY = UserRef(USER_ID)

PARTICIPANT_IDENTIFIER = "0007:5567321707"
RECEIVER_IDENTIFIER = "0007:5560360793"
TRANSPORT_PROFILE = "net-transport-as4-v2_0"
INVOICE = (
    "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice##urn:cen.eu:en16931:2017"
    "#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1"
)
BILLING = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
PEM = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIB9TCCAZugAwIBAgIUQ2VydGlmaWNhdGUgZXhhbXBsZTAKBggqhkjOPQQDAjA2\n"
    "-----END CERTIFICATE-----\n"
)

_CONTACT = Contact(
    name="Anna Lind",
    email="anna.lind@acme.example",
    phone="+46 8 123 456 78",
    title="Head of accounts payable",
    contact_type=ContactType.BUSINESS,
    web_contact_url="https://acme.example/contact",
    annotation="Invoicing questions",
)
_ADDRESS = Address(
    street_address="Storgatan 1", city="Stockholm", country="SE", postal_code="111 22"
)

ORGANISATION = Organisation(
    id=ORG_ID,
    legal_name="Acme Trading AB",
    country_code="SE",
    legal_identifier="5567321707",
    legal_identifier_code="SE:ORGNR",
    legal_key="se:orgnr|5567321707",
    created_at=CREATED,
    created_by=BY,
    last_modified_at=CHANGED,
    last_modified_by=BY,
    short_name="Acme",
    organisation_mode=Mode.WHITELABEL,
    mode_change_request=None,
    contacts=(_CONTACT,),
    business_address=_ADDRESS,
    website="https://acme.example",
    shared_mode_enabled=False,
)
USER = User(
    id=USER_ID,
    email="anna.lind@acme.example",
    created_at=CREATED,
    created_by=BY,
    last_modified_at=CHANGED,
    last_modified_by=BY,
    name="Anna Lind",
    phone="+46 8 123 456 78",
    country_code="SE",
    opted_in_to_receive_info=False,
    role=Role.USER,
    terms_accepted_at=CREATED,
)
MEMBER = Member(
    id=MEMBER_ID,
    org_id=ORG_ID,
    user_ref=USER_ID,
    role=Role.ORGADMIN,
    status=MemberStatus.ACTIVE,
    created_at=CREATED,
    created_by=BY,
    last_modified_at=CHANGED,
    first_name="Anna",
    last_name="Lind",
    member_since=CREATED,
    email="anna.lind@acme.example",
)
API_KEY = ApiKey(
    id=KEY_ID,
    org_id=ORG_ID,
    name="ERP integration",
    description="Sends the invoices of the ERP",
    expires=datetime(2027, 3, 2, 0, 0, tzinfo=UTC),
    is_active=True,
    role=Role.ORGMEMBER,
    key_hash="",
    prefix="fck_Qm9vYX",
    created_at=CREATED,
    created_by=BY,
    last_modified_at=CHANGED,
)
NEW_KEY = "fck_Qm9vYXJkLWtleS1leGFtcGxlLW5vdC1yZWFs"
SMP = Smp(
    id=SMP_ID,
    org_id=OTHER_ORG_ID,
    name="Operator test SMP",
    environment=Environment.TEST,
    url="https://fourcorner.example/smp",
    created_at=CREATED,
)
ACCESS_POINT = AccessPoint(
    id=AP_ID,
    org_id=ORG_ID,
    name="Acme access point",
    ap_url=f"https://fourcorner.example/as4/{ORG_ID}/{AP_ID}",
    certificate_ref=CERT_ID,
    transport_profile=TRANSPORT_PROFILE,
    environment=Environment.TEST,
    created_at=CREATED,
    created_by=BY,
    last_modified_at=CHANGED,
    last_modified_by=BY,
    description="Sends and receives for Acme's participants",
)
CERTIFICATE = Certificate(
    id=CERT_ID,
    org_id=ORG_ID,
    name="AP test certificate 2026",
    service=Service.AP,
    environment=CertificateEnvironment.TEST,
    transport_profile=TRANSPORT_PROFILE,
    cert_pem=PEM,
    ca_chain_pem="",
    valid_from=datetime(2026, 1, 1, tzinfo=UTC),
    valid_until=datetime(2028, 1, 1, tzinfo=UTC),
    subject="CN=PSE000123,OU=NET TEST AP,O=Acme Trading AB,C=SE",
    fingerprint="3b1f6c0e9d2a4b7c8e5f1a2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3",
    sealed_key="",
    created_at=CREATED,
    created_by=BY,
    last_modified_at=CHANGED,
    last_modified_by=BY,
    description="Issued by the network's test CA",
)
SUPPORTED = SupportedDocumentType(DOCUMENT_TYPE_ID, f"cenbii-procid-ubl::{BILLING}")
BUSINESS_CARD = BusinessCard(
    legal_name="Acme Trading AB",
    legal_identifier="5567321707",
    legal_identifier_code="SE:ORGNR",
    country_code="SE",
    website="https://acme.example",
    tax_identifier="SE556732170701",
    global_location_number="7300010000001",
    duns="123456789",
    business_address=_ADDRESS,
    contacts=(_CONTACT,),
)
PARTICIPANT = Participant(
    id=PARTICIPANT_ID,
    org_id=ORG_ID,
    name="Acme invoices",
    participant_identifier=PARTICIPANT_IDENTIFIER,
    identifier_key=PARTICIPANT_IDENTIFIER,
    smp_ref=SMP_ID,
    ap_ref=AP_ID,
    environment=Environment.TEST,
    transport_profile=TRANSPORT_PROFILE,
    created_at=CREATED,
    created_by=BY,
    last_modified_at=CHANGED,
    last_modified_by=BY,
    business_card=BUSINESS_CARD,
    supported_document_types=(SUPPORTED,),
    directory=DirectoryPublication(PublicationState.PUBLISHED, CHANGED),
)
MIGRATION = PreparedMigration(
    PARTICIPANT_ID, PARTICIPANT_IDENTIFIER, Environment.TEST, "aB3$xY7#kQ2%mN9(pR4)tW6*"
)
LOOKUP = ReceiverLookup(
    registered=True,
    smp_url="https://smp.receiver.example",
    document_types=(f"busdox-docid-qns::{INVOICE}",),
    endpoints=(
        PublishedEndpoint(
            TRANSPORT_PROFILE,
            "https://ap.receiver.example/as4",
            "CN=PSE000456,OU=NET TEST AP,O=Receiver AB,C=SE",
            datetime(2027, 6, 30, tzinfo=UTC),
        ),
    ),
    can_receive=True,
)
DOCUMENT_TYPE = DocumentType(
    id=DOCUMENT_TYPE_ID,
    name="Peppol BIS Billing UBL Invoice V3",
    scheme="busdox-docid-qns",
    wire_scheme="busdox-docid-qns",
    value=INVOICE,
    version="9.7",
    initial_release="2",
    state="active",
    abstract=False,
    issued_by_opennet=True,
    category="Invoice",
    process_ids=(ProcessRef("cenbii-procid-ubl", BILLING),),
    bis_version="3",
    domain_community="POAC",
)
IDENTIFIER_SCHEME = IdentifierScheme(
    schemeid="SE:ORGNR",
    iso6523="0007",
    country="SE",
    scheme_name="Organisationsnummer",
    initial_release="1.0.0",
    state="active",
    registrable=True,
    issuing_agency="The National Tax Board",
    display="Single group of 10 digits.",
    examples="2120000787",
    validation_rules="RegEx: [0-9]{10}\nCheck digits: Luhn Algorithm",
)
_CREATED_NS = 1_772_442_930_123_456_789  # CREATED, with the nanoseconds a transaction keeps
TRANSACTION = Transaction(
    id=TRANSACTION_ID,
    org_id=ORG_ID,
    direction=Direction.TO_NETWORK,
    ap_id=AP_ID,
    transport_profile=TRANSPORT_PROFILE,
    sender_id=f"iso6523-actorid-upis::{PARTICIPANT_IDENTIFIER}",
    receiver_id=f"iso6523-actorid-upis::{RECEIVER_IDENTIFIER}",
    doc_type_id=INVOICE,
    process_id=BILLING,
    sender_country="SE",
    doc_instance_id="b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e",
    transaction_status=Status.COMPLETED,
    created_at=clock.from_ns(_CREATED_NS),
    created_ns=_CREATED_NS,
    last_modified_at=CHANGED,
    receiver_country="SE",
    sender_sp="PSE000123",
    receiver_sp="PSE000456",
    mls_response_code="AB",
)
ARTEFACT = Artefact(
    id=ARTEFACT_ID,
    transaction_id=TRANSACTION_ID,
    org_id=ORG_ID,
    type=ArtefactType.BUSINESS_DOCUMENT,
    content_type="application/xml",
    size=18432,
    blob="",
    created_at=CREATED,
)
VALIDATION = ValidationResult(
    checked=True,
    root="Invoice",
    customization_id="urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0",
    profile_id=BILLING,
    rules="CEN-EN16931-UBL 1.3.14, PEPPOL-EN16931-UBL 3.0.19",
    errors=(
        FailedAssert(
            "BR-CO-15",
            Flag.FATAL,
            "/Invoice",
            "Invoice total amount with VAT = Invoice total amount without VAT + VAT total",
        ),
    ),
)
WEBHOOK = Webhook(
    id=WEBHOOK_ID,
    org_id=ORG_ID,
    url="https://erp.acme.example/hooks/fourcorner",
    events=("transaction.received", "transaction.send_failed"),
    is_enabled=True,
    sealed_secret="",
    created_at=CREATED,
    created_by=BY,
    last_modified_at=CHANGED,
    last_modified_by=BY,
    description="ERP inbox",
)
WEBHOOK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # noqa: S105 - an example, not in use
EVENT = Event(
    id=EVENT_ID,
    org_id=ORG_ID,
    event_type="webhook.test",
    payload={"message": "a test event"},
    created_at=CHANGED,
    status=DeliveryStatus.DELIVERED,
    deliveries=(
        DeliverySummary(
            DELIVERY_ID,
            WEBHOOK_ID,
            DeliveryStatus.DELIVERED,
            attempts=(Attempt(1, CHANGED, 84, status_code=200, error=None, response_body="ok"),),
        ),
    ),
)


def _org_certificates() -> list[Any]:
    return [responses.OrganisationCertificate(CERTIFICATE.name, "TEST", CERTIFICATE.id)]


def _memberships() -> list[Any]:
    return [
        responses.Membership(
            ORG_ID,
            Role.ORGADMIN,
            ORGANISATION.legal_name,
            ORGANISATION.legal_identifier,
            CREATED,
            MEMBER_ID,
        )
    ]


# what each answer renders: the record, and the values of its given fields
_RECORDS: Mapping[str, Callable[[], tuple[Any, dict[str, Any]]]] = {
    "Organisation": lambda: (ORGANISATION, {"certificates": _org_certificates()}),
    "User": lambda: (USER, {}),
    "UserWithMemberships": lambda: (USER, {"memberships": _memberships()}),
    "Member": lambda: (MEMBER, {}),
    "ApiKey": lambda: (API_KEY, {}),
    "NewApiKey": lambda: (API_KEY, {"key": NEW_KEY}),
    "Participant": lambda: (PARTICIPANT, {}),
    "SupportedDocumentTypeEntry": lambda: (SUPPORTED, {}),
    "AccessPoint": lambda: (ACCESS_POINT, {}),
    "Certificate": lambda: (CERTIFICATE, {}),
    "Smp": lambda: (SMP, {}),
    "ReceiverLookup": lambda: (LOOKUP, {}),
    "Webhook": lambda: (WEBHOOK, {}),
    "NewWebhook": lambda: (WEBHOOK, {"secret": WEBHOOK_SECRET}),
    "WebhookEvent": lambda: (EVENT, {}),
    "Transaction": lambda: (TRANSACTION, {}),
    "Artefact": lambda: (ARTEFACT, {}),
    "MigrationKey": lambda: (MIGRATION, {}),
    "DocumentType": lambda: (DOCUMENT_TYPE, {}),
    "IdentifierScheme": lambda: (IDENTIFIER_SCHEME, {}),
    "ValidationResult": lambda: (VALIDATION, {}),
    # answers that are not records: the response class holds the values itself
    "ChangedIds": lambda: (answers.IdsResponse((str(PARTICIPANT_ID),)), {}),
    "Status": lambda: (answers.StatusResponse("ok"), {}),
    "Accepted": lambda: (answers.AcceptedResponse(TRANSACTION_ID, Status.UNPROCESSED), {}),
    "UploadUrl": lambda: (
        answers.UploadUrlResponse(
            "https://fourcorner.example/uploads/gAAAAABn0x4c…",
            datetime(2026, 3, 5, 14, 32, 11, 456000, tzinfo=UTC),
            "PUT",
        ),
        {},
    ),
    "Constants": lambda: (ConstantsResponse("WEBHOOK_EVENTS", EVENT_NAMES, None), {}),
    "Confirmation": lambda: (answers.ConfirmationResponse(TRANSACTION_ID, "AP"), {}),
}


def answer(conv: cattrs.Converter, shown: Answer) -> Any:
    """The example of an answer, rendered as its handler renders it; ``None`` if it has none."""
    made = _RECORDS.get(shown.name)
    if made is None:
        return None
    record, given = made()
    return shown.dump(conv, record, **given)


# --- request bodies, as a client sends them ---------------------------------------------------

_CONTACT_JSON = {
    "name": "Anna Lind",
    "email": "anna.lind@acme.example",
    "phone": "+46 8 123 456 78",
    "title": "Head of accounts payable",
    "contactType": "BUSINESS",
}
_ADDRESS_JSON = {
    "streetAddress": "Storgatan 1",
    "city": "Stockholm",
    "country": "SE",
    "postalCode": "111 22",
}

BODIES: Mapping[str, Any] = {
    "CreateOrganisation": {
        "legalName": "Acme Trading AB",
        "countryCode": "SE",
        "legalIdentifierCode": "SE:ORGNR",
        "legalIdentifier": "5567321707",
        "shortName": "Acme",
        "contacts": [_CONTACT_JSON],
        "businessAddress": _ADDRESS_JSON,
        "website": "https://acme.example",
    },
    "UpdateOrganisation": {"contacts": [_CONTACT_JSON], "modeChangeRequest": "WHITELABEL"},
    "UpdateUser": {"name": "Anna Lind", "phone": "+46 8 123 456 78", "countryCode": "SE"},
    "UserIds": {"ids": [USER_ID]},
    "OrgRef": {"orgId": str(ORG_ID)},
    "Ids": {"ids": [str(PARTICIPANT_ID)]},
    "CreateMember": {"email": "erik.berg@acme.example", "role": "orgmember"},
    "UpdateMember": {"role": "orgadmin"},
    "CreateApiKey": {
        "name": "ERP integration",
        "description": "Sends the invoices of the ERP",
        "role": "orgmember",
        "expires": "2027-03-02T00:00:00.000Z",
    },
    "CreateCertificate": {
        "name": "AP test certificate 2026",
        "service": "AP",
        "environment": "test",
        "transportProfile": TRANSPORT_PROFILE,
        "certPem": PEM,
        "privateKeyPem": (
            "-----BEGIN PRIVATE KEY-----\n"
            "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n"
            "-----END PRIVATE KEY-----\n"
        ),
        "caChainPem": "",
        "description": "Issued by the network's test CA",
    },
    "UpdateCertificate": {"description": "Renewed for 2026"},
    "CreateAccessPoint": {
        "name": "Acme access point",
        "certificateRef": str(CERT_ID),
        "environment": "TEST",
        "transportProfile": TRANSPORT_PROFILE,
        "description": "Sends and receives for Acme's participants",
    },
    "UpdateAccessPoint": {"description": "Sends and receives for every Acme participant"},
    "CreateParticipant": {
        "name": "Acme invoices",
        "participantIdentifier": PARTICIPANT_IDENTIFIER,
        "smpRef": str(SMP_ID),
        "apRef": str(AP_ID),
        "transportProfile": TRANSPORT_PROFILE,
    },
    "UpdateParticipant": {
        "name": "Acme invoices",
        "businessCard": {
            "legalName": "Acme Trading AB",
            "legalIdentifier": "5567321707",
            "legalIdentifierCode": "SE:ORGNR",
            "countryCode": "SE",
            "website": "https://acme.example",
            "businessAddress": _ADDRESS_JSON,
            "contacts": [_CONTACT_JSON],
        },
    },
    "SupportedDocumentTypes": {
        "supportedDocumentTypes": [
            {"documentId": DOCUMENT_TYPE_ID, "processId": f"cenbii-procid-ubl::{BILLING}"}
        ]
    },
    "CreateWebhook": {
        "url": "https://erp.acme.example/hooks/fourcorner",
        "events": ["transaction.received", "transaction.send_failed"],
        "description": "ERP inbox",
        "isEnabled": True,
    },
    "UpdateWebhook": {"events": ["transaction.received", "mls.received"]},
    "TriggerEvent": {"eventType": "webhook.test"},
}


def body(cls: type) -> Any:
    """The example of a request body read as ``cls``; ``None`` if it has none."""
    return BODIES.get(cls.__name__)


# --- the document of an upload ------------------------------------------------------------

SBD = f"""<?xml version="1.0" encoding="UTF-8"?>
<sh:StandardBusinessDocument xmlns:sh="http://www.unece.org/cefact/namespaces/StandardBusinessDocumentHeader">
  <sh:StandardBusinessDocumentHeader>
    <sh:HeaderVersion>1.0</sh:HeaderVersion>
    <sh:Sender>
      <sh:Identifier Authority="iso6523-actorid-upis">{PARTICIPANT_IDENTIFIER}</sh:Identifier>
    </sh:Sender>
    <sh:Receiver>
      <sh:Identifier Authority="iso6523-actorid-upis">{RECEIVER_IDENTIFIER}</sh:Identifier>
    </sh:Receiver>
    <sh:DocumentIdentification>
      <sh:Standard>urn:oasis:names:specification:ubl:schema:xsd:Invoice-2</sh:Standard>
      <sh:TypeVersion>2.1</sh:TypeVersion>
      <sh:InstanceIdentifier>{TRANSACTION.doc_instance_id}</sh:InstanceIdentifier>
      <sh:Type>Invoice</sh:Type>
      <sh:CreationDateAndTime>2026-03-02T09:15:00Z</sh:CreationDateAndTime>
    </sh:DocumentIdentification>
    <sh:BusinessScope>
      <sh:Scope>
        <sh:Type>DOCUMENTID</sh:Type>
        <sh:InstanceIdentifier>{INVOICE}</sh:InstanceIdentifier>
        <sh:Identifier>busdox-docid-qns</sh:Identifier>
      </sh:Scope>
      <sh:Scope>
        <sh:Type>PROCESSID</sh:Type>
        <sh:InstanceIdentifier>{BILLING}</sh:InstanceIdentifier>
        <sh:Identifier>cenbii-procid-ubl</sh:Identifier>
      </sh:Scope>
      <sh:Scope>
        <sh:Type>COUNTRY_C1</sh:Type>
        <sh:InstanceIdentifier>SE</sh:InstanceIdentifier>
      </sh:Scope>
    </sh:BusinessScope>
  </sh:StandardBusinessDocumentHeader>
  <Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"
      xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
      xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2">
    <cbc:CustomizationID>urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0</cbc:CustomizationID>
    <cbc:ProfileID>{BILLING}</cbc:ProfileID>
    <cbc:ID>INV-2026-0042</cbc:ID>
    <cbc:IssueDate>2026-03-02</cbc:IssueDate>
    <cbc:InvoiceTypeCode>380</cbc:InvoiceTypeCode>
    <cbc:DocumentCurrencyCode>SEK</cbc:DocumentCurrencyCode>
    <cbc:BuyerReference>PO-7781</cbc:BuyerReference>
    <cac:AccountingSupplierParty><cac:Party>
      <cbc:EndpointID schemeID="0007">5567321707</cbc:EndpointID>
      <cac:PostalAddress><cac:Country><cbc:IdentificationCode>SE</cbc:IdentificationCode></cac:Country></cac:PostalAddress>
      <cac:PartyTaxScheme><cbc:CompanyID>SE556732170701</cbc:CompanyID><cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme></cac:PartyTaxScheme>
      <cac:PartyLegalEntity><cbc:RegistrationName>Acme Trading AB</cbc:RegistrationName></cac:PartyLegalEntity>
    </cac:Party></cac:AccountingSupplierParty>
    <cac:AccountingCustomerParty><cac:Party>
      <cbc:EndpointID schemeID="0007">5560360793</cbc:EndpointID>
      <cac:PostalAddress><cac:Country><cbc:IdentificationCode>SE</cbc:IdentificationCode></cac:Country></cac:PostalAddress>
      <cac:PartyLegalEntity><cbc:RegistrationName>Receiver AB</cbc:RegistrationName></cac:PartyLegalEntity>
    </cac:Party></cac:AccountingCustomerParty>
    <cac:TaxTotal>
      <cbc:TaxAmount currencyID="SEK">250.00</cbc:TaxAmount>
      <cac:TaxSubtotal>
        <cbc:TaxableAmount currencyID="SEK">1000.00</cbc:TaxableAmount>
        <cbc:TaxAmount currencyID="SEK">250.00</cbc:TaxAmount>
        <cac:TaxCategory><cbc:ID>S</cbc:ID><cbc:Percent>25</cbc:Percent><cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme></cac:TaxCategory>
      </cac:TaxSubtotal>
    </cac:TaxTotal>
    <cac:LegalMonetaryTotal>
      <cbc:LineExtensionAmount currencyID="SEK">1000.00</cbc:LineExtensionAmount>
      <cbc:TaxExclusiveAmount currencyID="SEK">1000.00</cbc:TaxExclusiveAmount>
      <cbc:TaxInclusiveAmount currencyID="SEK">1250.00</cbc:TaxInclusiveAmount>
      <cbc:PayableAmount currencyID="SEK">1250.00</cbc:PayableAmount>
    </cac:LegalMonetaryTotal>
    <cac:InvoiceLine>
      <cbc:ID>1</cbc:ID>
      <cbc:InvoicedQuantity unitCode="H87">10</cbc:InvoicedQuantity>
      <cbc:LineExtensionAmount currencyID="SEK">1000.00</cbc:LineExtensionAmount>
      <cac:Item>
        <cbc:Name>Paper, A4, 500 sheets</cbc:Name>
        <cac:ClassifiedTaxCategory><cbc:ID>S</cbc:ID><cbc:Percent>25</cbc:Percent><cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme></cac:ClassifiedTaxCategory>
      </cac:Item>
      <cac:Price><cbc:PriceAmount currencyID="SEK">100.00</cbc:PriceAmount></cac:Price>
    </cac:InvoiceLine>
  </Invoice>
</sh:StandardBusinessDocument>
"""
