"""What each property of the OpenAPI document's schemas means, in the user's words.

One table for the request bodies (the application's command classes, read by ``json_schema``)
and the answers (the response classes of ``responses`` and the handlers' modules): the
description of a property is looked up by the schema's name and the property's JSON name, then
by the property's name alone (``COMMON``: fields that mean the same on every record). A
description given on the field itself (``rendering.shown(description=...)``) comes first.

``describe`` writes them into the document; the contract test ``test_openapi_descriptions``
checks that every property of every schema has one, and that every entry here still names a
property. A field added to a class needs a line here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from fourcorner.application.context import DIRECTORY_ATTEMPTS, DIRECTORY_DELAYS


def spoken(wait: timedelta) -> str:
    """``wait`` as the guides write it: ``30 s``, ``5 min``, ``2 h``."""
    seconds = wait.total_seconds()
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g} {unit}"
    return f"{seconds:g} s"


def spoken_delays(delays: Sequence[timedelta]) -> str:
    """Delays of which the last repeats: ``30 s, 5 min and then every 30 min``."""
    *first, last = (spoken(d) for d in delays)
    return f"{', '.join(first)} and then every {last}" if first else f"every {last}"


COMMON: Mapping[str, str] = {
    "orgId": "The organisation the record belongs to.",
    "createdAt": "When the record was created (ISO 8601, UTC).",
    "createdBy": "The user who created the record.",
    "lastModifiedAt": "When the record was last changed (ISO 8601, UTC).",
    "lastModifiedBy": "The user who last changed the record.",
    "type": "The kind of record; the same value on every record of this kind.",
}

_ID = "The record's id, assigned by the service."
_NAME = "A name for the record, chosen by the organisation."
_DESCRIPTION = "Free text about the record, for the organisation's own use."
_TRANSPORT_PROFILE = (
    "The AS4 transport profile, e.g. `net-transport-as4-v2_0` (the network's own spellings, "
    "such as `peppol-transport-as4-v2_0`, are accepted and answered in this form)."
)
_AP_ENVIRONMENT = "The network environment: `TEST` or `PROD` (production)."
_COUNTRY = "Two-letter ISO 3166-1 country code."
_LEGAL_NAME = "The organisation's registered legal name."
_LEGAL_IDENTIFIER = "The organisation's identifier in the register named by legalIdentifierCode."
_LEGAL_IDENTIFIER_CODE = (
    "The register of legalIdentifier: a scheme id of the participant identifier scheme list, "
    "in either spelling (`SE:ORGNR`, `SE_ORGNR`), or its four-digit ICD code (`0007`)."
)
_CONTACTS = "The contacts; a mode change request, while pending, needs a contact of type BUSINESS."
_WEBSITE = "The website's URL."
_MODE = (
    "The service mode: `DEMO` (the operator's test SMP and access point only), `SHARED` (the "
    "operator's shared SMP and access point, test and production) or `WHITELABEL` (own "
    "certificates and access points)."
)
_MODE_REQUEST = (
    "A mode the organisation asked for (`WHITELABEL` or `SHARED`), pending until a superadmin "
    "sets organisationMode; null when none is pending."
)
_ORG_ROLE = "The role in the organisation: `orgmember`, or `orgadmin` who may also manage it."
_EVENTS = "The event names the webhook is called for."
_WEBHOOK_URL = "The http(s) URL that receives the events (a POST of each event)."
_IS_ENABLED = "Whether events are delivered to this webhook."
_EXPIRES = "When the key stops working (ISO 8601)."
_IS_ACTIVE = "Whether the key may be used; a key set inactive is refused."
_TRANSACTION_ID = "The transaction's id."
_TRANSACTION_STATUS = (
    "The transaction's state: `UNPROCESSED` (taken, not yet sent), `PROCESSING`, then one of "
    "`COMPLETED` (delivered and acknowledged), `FAILED` (could not be delivered; see "
    "serviceError) or `REJECTED` (refused by the receiver)."
)
_MLS_CODE = (
    "The code of the message level status the receiver answered: `AP` (accepted: delivered, "
    "and the receiver confirmed it), `AB` (acknowledged: delivered, without confirmation) or "
    "`RE` (rejected)."
)
_DOCUMENT_ID = "The `id` of a document type of `GET /document_types`."
_PROCESS_ID = "A process of that document type: `<scheme>::<value>` of one of its `process-ids`."
_EXACT_MATCH = (
    "Publish the document type only as written; when false, the service may also publish the "
    "document types it stands for (a wildcard)."
)
_SMP_REF = "The id of the SMP the participant is registered in (`GET …/smps/alltouse`)."
_AP_REF = "The id of the access point that sends and receives for the participant."
_CERTIFICATE_REF = "The id of the organisation's certificate the access point uses."
_PARTICIPANT_IDENTIFIER = (
    "The participant's identifier in the network: `<ICD>:<number>` (e.g. `0007:5567321707`), "
    "checked against its scheme's rules."
)
_BUSINESS_CARD = "What the network's public directory shows of the participant."
_PARTICIPANT_NAME = "A name for the participant, chosen by the organisation."
_CERT_PEM = "The certificate, PEM encoded."
_CA_CHAIN_PEM = "The certificates of the issuing chain, PEM encoded; may be empty."
_CERT_ENVIRONMENT = "The environment the certificate is for: `test` or `production`."
_SERVICE = "What the certificate is for: `AP` (an access point) or `SMP`."
_USER_NAME = "The user's full name."
_PHONE = "A phone number."
_OPTED_IN = "Whether the user agreed to receive information from the operator."
_MEMBER_SINCE = "When the membership became active; null while it is pending."
_EVENT_TYPE = "The event's name."
_NEXT_ATTEMPT = "When the next delivery attempt is due; null when none is."
_SCHEME_ID = "The scheme's id: country and register, e.g. `SE:ORGNR`."

PROPERTIES: Mapping[str, Mapping[str, str]] = {
    # --- organisations --------------------------------------------------------------------
    "Organisation": {
        "id": _ID,
        "legalName": _LEGAL_NAME,
        "countryCode": _COUNTRY,
        "legalIdentifier": _LEGAL_IDENTIFIER,
        "legalIdentifierCode": _LEGAL_IDENTIFIER_CODE,
        "shortName": "A short name of the organisation.",
        "organisationMode": _MODE,
        "modeChangeRequest": _MODE_REQUEST,
        "contacts": _CONTACTS,
        "businessAddress": "The organisation's business address.",
        "website": _WEBSITE,
        "sharedModeEnabled": (
            "True while the organisation is held to the operator's shared access point and "
            "SMP (the first organisation a user creates), until it is enabled for whitelabel."
        ),
        "certificates": "The organisation's uploaded certificates.",
    },
    "OrganisationCertificate": {
        "name": "The certificate's name.",
        "type": "`TEST` or `PRODUCTION`: the environment the certificate is for.",
        "id": "The certificate's id.",
    },
    "CreateOrganisation": {
        "legalIdentifier": _LEGAL_IDENTIFIER,
        "legalName": _LEGAL_NAME,
        "countryCode": _COUNTRY,
        "legalIdentifierCode": _LEGAL_IDENTIFIER_CODE,
        "shortName": "A short name of the organisation.",
        "contacts": _CONTACTS,
        "businessAddress": "The organisation's business address.",
        "website": _WEBSITE,
    },
    "UpdateOrganisation": {
        "validation": "What a document with fatal validation errors does when this "
        "organisation sends it: `refuse` (422 AT-1131, nothing stored or sent) or `report` "
        "(sent, with the result as VALIDATION_RESULT artefacts). Absent: unchanged.",
        "inboundValidation": "What a received document with fatal validation errors does: "
        "`report` (received, the result recorded and flagged in `transaction.received`) or "
        "`refuse` (answered with an MLS RE naming the rules, not delivered). Absent: unchanged.",
        "legalName": f"{_LEGAL_NAME} Absent: unchanged.",
        "shortName": "A short name of the organisation. Absent: unchanged.",
        "countryCode": f"{_COUNTRY} Absent: unchanged.",
        "legalIdentifier": f"{_LEGAL_IDENTIFIER} Absent: unchanged.",
        "legalIdentifierCode": f"{_LEGAL_IDENTIFIER_CODE} Absent: unchanged.",
        "contacts": "The contacts, replacing the current ones. Absent: unchanged.",
        "businessAddress": "The business address. Absent: unchanged.",
        "website": f"{_WEBSITE} Absent: unchanged.",
        "modeChangeRequest": (
            "Ask for a mode: `WHITELABEL` or `SHARED`. The organisation needs a contact of "
            "type BUSINESS (else 422 AT-1120) for as long as the request is pending: a "
            "change leaving a pending request without one is refused the same way. A "
            "superadmin grants it. Null withdraws a pending request; absent: unchanged."
        ),
        "organisationMode": (
            "Set the mode (superadmin only); clears a pending modeChangeRequest. Absent: unchanged."
        ),
    },
    "Contact": {
        "name": "The contact's name.",
        "email": "The contact's email address.",
        "phone": _PHONE,
        "title": "The contact's job title.",
        "contactType": "`TECHNICAL` or `BUSINESS`.",
        "webContactUrl": "A web page to contact them through; left out when there is none.",
        "annotation": "Free text about the contact.",
    },
    "Address": {
        "streetAddress": "Street and number.",
        "city": "City.",
        "country": "Country (name or two-letter code).",
        "postalCode": "Postal code.",
    },
    "UserRef": {"userId": "The user's id (the `sub` of their token)."},
    # --- users and members ----------------------------------------------------------------
    "UserWithMemberships": {
        "id": "The user's id: the `sub` of their token.",
        "email": "The user's email address, from their token.",
        "name": _USER_NAME,
        "phone": _PHONE,
        "countryCode": _COUNTRY,
        "optedInToReceiveInfo": _OPTED_IN,
        "role": "`user`, or `superadmin` for the operator's administrators.",
        "termsAcceptedAt": "When the user accepted the operator's terms; null if not yet.",
        "memberships": "The organisations the user is a member of, with their role in each.",
    },
    "Membership": {
        "orgId": "The organisation's id.",
        "role": _ORG_ROLE,
        "legalName": "The organisation's legal name.",
        "legalIdentifier": "The organisation's legal identifier.",
        "memberSince": _MEMBER_SINCE,
        "memberRef": "The id of the member record (`/orgs/{orgId}/members/{memberId}`).",
    },
    "UpdateUser": {
        "name": f"{_USER_NAME} Absent: unchanged.",
        "phone": f"{_PHONE} Absent: unchanged.",
        "countryCode": f"{_COUNTRY} Absent: unchanged.",
        "optedInToReceiveInfo": f"{_OPTED_IN} Absent: unchanged.",
    },
    "UserIds": {"ids": "The ids of the users (their tokens' `sub`)."},
    "OrgRef": {"orgId": "The organisation's id."},
    "Member": {
        "id": "The member record's id.",
        "userRef": "The user's id; empty for an invitation by email not yet accepted.",
        "role": _ORG_ROLE,
        "status": (
            "`PENDING` (asked to join, awaiting an orgadmin), `INVITED` (invited by email), "
            "`ACTIVE` or `REJECTED`."
        ),
        "firstName": "The member's first name.",
        "lastName": "The member's last name.",
        "memberSince": _MEMBER_SINCE,
        "email": "The member's email address.",
    },
    "CreateMember": {
        "userId": "The id of the user to add; give this or email.",
        "role": f"{_ORG_ROLE} Default `orgmember`.",
        "email": (
            "Invite by email instead of userId: the person becomes a member by signing in with "
            "this address. The answer is the same whether or not an account exists."
        ),
    },
    "UpdateMember": {"role": f"{_ORG_ROLE} An organisation keeps at least one orgadmin."},
    # --- API keys -------------------------------------------------------------------------
    "ApiKey": {
        "id": "The key's id.",
        "name": _NAME,
        "description": _DESCRIPTION,
        "expires": _EXPIRES,
        "isActive": _IS_ACTIVE,
        "role": f"{_ORG_ROLE} Never above the role of the key's creator.",
        "prefix": "The first characters of the key, to tell keys apart; the rest is not kept.",
    },
    "NewApiKey": {
        "id": "The key's id.",
        "name": _NAME,
        "description": _DESCRIPTION,
        "expires": _EXPIRES,
        "isActive": _IS_ACTIVE,
        "role": f"{_ORG_ROLE} Never above the role of the key's creator.",
        "prefix": "The first characters of the key, to tell keys apart; the rest is not kept.",
    },
    "CreateApiKey": {
        "name": _NAME,
        "expires": _EXPIRES,
        "role": f"{_ORG_ROLE} At most the caller's own role.",
        "description": _DESCRIPTION,
        "isActive": "Whether the key may be used at once. Default true.",
    },
    # --- SMPs, access points, certificates ------------------------------------------------
    "Smp": {
        "id": "The SMP's id: the smpRef of a participant.",
        "name": "The SMP's name.",
        "environment": _AP_ENVIRONMENT,
        "url": "The SMP's public URL.",
    },
    "AccessPoint": {
        "id": "The access point's id: the apRef of a participant, the `ap` of a send.",
        "name": _NAME,
        "apUrl": (
            "The URL peers send AS4 messages to: `<AP host>/<orgId>/<apId>` (the AP host is "
            "`<public URL>/as4` unless configured)."
        ),
        "certificateRef": _CERTIFICATE_REF,
        "transportProfile": _TRANSPORT_PROFILE,
        "environment": _AP_ENVIRONMENT,
        "description": _DESCRIPTION,
    },
    "CreateAccessPoint": {
        "name": _NAME,
        "certificateRef": f"{_CERTIFICATE_REF} It must be an `AP` certificate.",
        "environment": _AP_ENVIRONMENT,
        "transportProfile": _TRANSPORT_PROFILE,
        "description": _DESCRIPTION,
    },
    "UpdateAccessPoint": {
        "name": f"{_NAME} Absent: unchanged.",
        "description": f"{_DESCRIPTION} Absent: unchanged.",
        "certificateRef": f"{_CERTIFICATE_REF} Absent: unchanged.",
    },
    "Certificate": {
        "id": "The certificate's id: the certificateRef of an access point.",
        "name": _NAME,
        "service": _SERVICE,
        "environment": _CERT_ENVIRONMENT,
        "transportProfile": _TRANSPORT_PROFILE,
        "certPem": _CERT_PEM,
        "caChainPem": _CA_CHAIN_PEM,
        "validFrom": "The start of the certificate's validity, read from the certificate.",
        "validUntil": "The end of the certificate's validity, read from the certificate.",
        "subject": "The certificate's subject (RFC 4514), e.g. `CN=POP000001,O=…,C=SE`.",
        "fingerprint": "SHA-256 of the certificate (DER), lower-case hex.",
        "description": _DESCRIPTION,
    },
    "CreateCertificate": {
        "name": _NAME,
        "service": _SERVICE,
        "environment": _CERT_ENVIRONMENT,
        "certPem": _CERT_PEM,
        "privateKeyPem": (
            "The certificate's private key, PEM encoded. Kept encrypted, never shown again."
        ),
        "transportProfile": _TRANSPORT_PROFILE,
        "caChainPem": _CA_CHAIN_PEM,
        "description": _DESCRIPTION,
    },
    "UpdateCertificate": {
        "name": f"{_NAME} Absent: unchanged.",
        "description": f"{_DESCRIPTION} Absent: unchanged.",
    },
    # --- participants ---------------------------------------------------------------------
    "Participant": {
        "id": _ID,
        "name": _PARTICIPANT_NAME,
        "participantIdentifier": _PARTICIPANT_IDENTIFIER,
        "smpRef": _SMP_REF,
        "apRef": _AP_REF,
        "environment": "The environment of the participant's SMP: `TEST` or `PROD`.",
        "transportProfile": _TRANSPORT_PROFILE,
        "businessCard": f"{_BUSINESS_CARD} Null when none was given.",
        "supportedDocumentTypes": "The document types the participant receives.",
        "status": (
            "Its registration in the network's SML: `ACTIVE` (registered), `PENDING` (being "
            "registered) or `FAILED` (refused; statusReason says why)."
        ),
        "directory": "The participant's publication in the network's public directory.",
        "warning": (
            "A note about the identifier (e.g. its scheme is deprecated); null when there is none."
        ),
        "statusReason": "Why the participant is PENDING or FAILED; null when ACTIVE.",
    },
    "CreateParticipant": {
        "name": _PARTICIPANT_NAME,
        "participantIdentifier": _PARTICIPANT_IDENTIFIER,
        "smpRef": _SMP_REF,
        "apRef": _AP_REF,
        "transportProfile": f"{_TRANSPORT_PROFILE} It must be the access point's; default `net-transport-as4-v2_0`.",
        "businessCard": _BUSINESS_CARD,
        "migrationKey": (
            "The key another service provider gave to move the participant here; absent for "
            "a new participant."
        ),
    },
    "UpdateParticipant": {
        "name": f"{_PARTICIPANT_NAME} Absent: unchanged.",
        "apRef": f"{_AP_REF} Absent: unchanged.",
        "transportProfile": f"{_TRANSPORT_PROFILE} Absent: unchanged.",
        "businessCard": f"{_BUSINESS_CARD} Absent: unchanged.",
    },
    "BusinessCard": {
        "legalName": "The legal name shown in the directory.",
        "legalIdentifier": "The legal identifier shown in the directory.",
        "legalIdentifierCode": _LEGAL_IDENTIFIER_CODE,
        "countryCode": _COUNTRY,
        "website": _WEBSITE,
        "taxIdentifier": "The tax (VAT) identifier.",
        "globalLocationNumber": "The GS1 Global Location Number (GLN).",
        "duns": "The D-U-N-S number.",
        "businessAddress": "The business address.",
        "contacts": "The contacts shown in the directory.",
    },
    "SupportedDocumentType": {
        "documentId": _DOCUMENT_ID,
        "processId": _PROCESS_ID,
        "exactMatchOnly": f"{_EXACT_MATCH} Default false.",
    },
    "SupportedDocumentTypeEntry": {
        "documentId": _DOCUMENT_ID,
        "processId": _PROCESS_ID,
        "exactMatchOnly": _EXACT_MATCH,
    },
    "SupportedDocumentTypes": {
        "supportedDocumentTypes": "The entries, replacing the current ones; may be empty.",
    },
    "DirectoryPublication": {
        "state": (
            "`NOT_REQUESTED`, `PUBLISHED` (after `request-pd-publish`) or `OUTDATED`: the "
            "business card the SMP serves changed since, and the directory could not be asked "
            "to index it again yet (`reason`); the service asks it again after "
            f"{spoken_delays(DIRECTORY_DELAYS)} (by default), for {DIRECTORY_ATTEMPTS} attempts "
            "in all (by default; `reason` then says it is asked no more), and "
            "`request-pd-publish` asks it at once."
        ),
        "publishedAt": "When the directory was last asked to index the card; null when never.",
        "changedAt": "`OUTDATED`: when the served business card changed; null otherwise.",
        "reason": "`OUTDATED`: what the directory answered the last time it was asked.",
    },
    "MigrationKey": {
        "participantId": "The participant's id.",
        "participantIdentifier": "The participant's identifier in the network.",
        "environment": "The environment of the SML the move was prepared in.",
        "migrationKey": (
            "Give this to the new service provider: it registers the participant with it. "
            "Shown this once."
        ),
    },
    "ReceiverLookup": {
        "registered": "The network knows the receiver (its SML and SMP).",
        "smpUrl": "The receiver's SMP; null when it is not registered.",
        "documentTypes": "The document types the receiver lists, as `<scheme>::<value>`.",
        "endpoints": "For the document type asked about: the endpoints the SMP publishes.",
        "canReceive": "A document of that type could be sent to the receiver now.",
        "reason": "Why it cannot receive; null when it can.",
    },
    "PublishedEndpoint": {
        "transportProfile": "The endpoint's transport profile.",
        "url": "The receiving access point's AS4 URL.",
        "certificateSubject": "The subject of its certificate; empty when it cannot be read.",
        "validUntil": "The end of its certificate's validity; null when it cannot be read.",
    },
    # --- the catalogue --------------------------------------------------------------------
    "DocumentType": {
        "id": "The document type's id: the documentId of a supported document type entry.",
        "abstract": "A wildcard that stands for more specific document types.",
        "bis-version": "The BIS version the document type belongs to.",
        "category": "e.g. `Invoice`, `Order`, `Catalogue`.",
        "comment": "The code list's comment.",
        "deprecation-release": "The code list release that deprecated it.",
        "domain-community": "The community that owns it, e.g. `POAC`.",
        "initial-release": "The code list release that introduced it.",
        "issued-by-opennet": "Issued by the network's own authority.",
        "name": "The document type's name.",
        "process-ids": "The processes a document of this type is sent in.",
        "removal-date": "When it is removed from the network.",
        "scheme": "The identifier scheme, e.g. `busdox-docid-qns` or `net-doctype-wildcard`.",
        "state": "`active`, `deprecated` or `removed`.",
        "value": "The document type identifier, as documents carry it.",
        "version": "The code list version that defines it.",
    },
    "ProcessRef": {
        "scheme": "The process identifier scheme, e.g. `cenbii-procid-ubl`.",
        "value": "The process identifier, e.g. `urn:fdc:peppol.eu:2017:poacc:billing:01:1.0`.",
    },
    "IdentifierScheme": {
        "schemeid": _SCHEME_ID,
        "iso6523": "The four-digit ISO 6523 ICD code, e.g. `0007`.",
        "country": "The country of the register (`international` for global schemes).",
        "schemeName": "The register's name.",
        "initialRelease": "The code list release that introduced it.",
        "state": "`active`, `deprecated` or `removed`.",
        "registrable": "New participants may be registered with it.",
        "issuingAgency": "The agency that issues the identifiers.",
        "deprecationRelease": "The code list release that deprecated it.",
        "removalDate": "When it is removed from the network.",
        "structure": "How an identifier of the scheme is built.",
        "display": "How an identifier is written.",
        "examples": "Example identifiers.",
        "validationRules": "The rules an identifier must pass.",
        "usage": "Notes on its use.",
    },
    "Constants": {
        "key": "The key asked for.",
        "values": "The key's values: strings, or objects for processes and transport profiles.",
        "keys": "Without a key: every key that can be asked for.",
    },
    # --- transactions ---------------------------------------------------------------------
    "Accepted": {
        "transactionId": _TRANSACTION_ID,
        "transactionStatus": _TRANSACTION_STATUS,
    },
    "UploadUrl": {
        "uploadUrl": "Where to PUT the SBD: signed, single-use, no credentials needed.",
        "expiresAt": "When the URL stops working (30 minutes after it was made).",
        "method": "The method to use: always `PUT`.",
    },
    "Transaction": {
        "id": _TRANSACTION_ID,
        "transportProfile": "The transport profile the document travelled over.",
        "senderId": "The sender's participant identifier, with its scheme.",
        "receiverId": "The receiver's participant identifier, with its scheme.",
        "docTypeId": "The document type identifier, as the envelope carries it.",
        "processId": "The process identifier, as the envelope carries it.",
        "senderCountry": "The sender's country (C1), from the envelope's scopes.",
        "receiverCountry": "The receiver's country (C4), from the envelope or the document.",
        "senderSP": "The sending access point's id (its certificate's seat id).",
        "receiverSP": "The receiving access point's id (its certificate's seat id).",
        "docInstanceId": "The envelope's document instance identifier.",
        "transactionStatus": _TRANSACTION_STATUS,
        "createdAt": "When the transaction was taken (ISO 8601, UTC, nanoseconds).",
        "apId": "The access point that sent or received it.",
        "direction": "`TO_NETWORK` (sent) or `FROM_NETWORK` (received).",
        "serviceError": (
            "Why sending failed; while a transaction is PROCESSING, why its last attempt failed "
            "(TXE-2006: the receiver is busy, and when the next attempt is)."
        ),
        "mlsResponseCode": f"{_MLS_CODE} Only once one arrived.",
    },
    "ServiceError": {
        "code": "The failure's code, `TXE-nnnn`.",
        "message": "What went wrong, in one sentence.",
        "category": "The kind of failure.",
        "action": (
            "What the sender can do: `RETRY`, `FIX_AND_RETRY`, `CONTACT` (the receiver or the "
            "operator) or `DO_NOT_RETRY`."
        ),
    },
    "Artefact": {
        "id": "The artefact's id.",
        "type": (
            "`BUSINESS_DOCUMENT` (the SBD), `VALIDATION_RESULT`, `TRANSACTION_RECEIPT` (the AS4 "
            "receipt) or `MLS` (the message level status)."
        ),
        "contentType": "The media type of its content.",
        "size": "The content's size in bytes.",
    },
    "Confirmation": {
        "transactionId": "The received transaction that was confirmed.",
        "mlsResponseCode": _MLS_CODE,
    },
    "ValidationResult": {
        "customizationId": "The document's CustomizationID; null when it has none.",
        "profileId": "The document's ProfileID; null when it has none.",
    },
    "FailedAssert": {
        "flag": "`fatal` or `warning`.",
        "text": "The rule's message.",
    },
    # --- webhooks -------------------------------------------------------------------------
    "Webhook": {
        "id": "The webhook's id.",
        "url": _WEBHOOK_URL,
        "events": _EVENTS,
        "isEnabled": _IS_ENABLED,
        "description": _DESCRIPTION,
    },
    "NewWebhook": {
        "id": "The webhook's id.",
        "url": _WEBHOOK_URL,
        "events": _EVENTS,
        "isEnabled": _IS_ENABLED,
        "description": _DESCRIPTION,
    },
    "CreateWebhook": {
        "url": _WEBHOOK_URL,
        "events": _EVENTS,
        "description": _DESCRIPTION,
        "isEnabled": f"{_IS_ENABLED} Default true.",
    },
    "UpdateWebhook": {
        "url": f"{_WEBHOOK_URL} Absent: unchanged.",
        "events": f"{_EVENTS} Absent: unchanged.",
        "description": f"{_DESCRIPTION} Absent: unchanged.",
        "isEnabled": f"{_IS_ENABLED} Absent: unchanged.",
    },
    "TriggerEvent": {
        "eventType": "The event to raise: only `webhook.test` can be raised by hand.",
        "event": "The same as eventType (either name is taken).",
    },
    "WebhookEvent": {
        "id": "The event's id: the `webhook-id` header of its deliveries.",
        "eventType": _EVENT_TYPE,
        "payload": (
            "What the event is about: a transaction record for `transaction.*`, "
            "`{transactionId, mlsResponseCode, originalInstanceId}` for `mls.received`, "
            "`{message}` for `webhook.test`."
        ),
        "createdAt": "When the event was raised.",
        "status": "`PENDING` (being delivered), `DELIVERED` or `FAILED` (every attempt failed).",
        "deliveries": "Its delivery to each subscribed webhook.",
        "nextAttemptAt": _NEXT_ATTEMPT,
    },
    "DeliverySummary": {
        "deliveryId": "The delivery's id.",
        "webhookId": "The webhook it is delivered to.",
        "status": "`PENDING`, `DELIVERED` or `FAILED`.",
        "attempts": "Each attempt so far, oldest first.",
        "nextAttemptAt": _NEXT_ATTEMPT,
    },
    "Attempt": {
        "number": "The attempt's number, from 1.",
        "at": "When it was made.",
        "durationMs": "How long it took, in milliseconds.",
        "statusCode": "The HTTP status answered; null when there was no answer.",
        "error": "Why it failed without an answer (connection, timeout); null otherwise.",
        "responseBody": "The first 1 KiB of the answer's body.",
        "counted": (
            "Whether it used up one of the delivery's three attempts: false for an endpoint's "
            "busy refusal (HTTP 429 or 503) within the retry delays' span (330 s by default) "
            "of the delivery's first one."
        ),
        "busy": (
            "For a busy refusal (HTTP 429 or 503): that the endpoint is busy, the wait its "
            "`Retry-After` asked for, when the next attempt is and whether this one counted "
            "(`the endpoint is busy (HTTP 429, Retry-After 120 s): next attempt at "
            "2026-01-02T10:02:00Z, not counted as an attempt`); null otherwise."
        ),
    },
    # --- answers that are not records -----------------------------------------------------
    "Ids": {"ids": "The ids of the records to act on."},
    "ChangedIds": {"ids": "The ids of the records the operation changed."},
    "Status": {"status": "`ok` (the process is up) or `ready` (it can serve requests)."},
    "Error": {
        "code": "The error's code, `AT-nnnn` (see the list in the document's description).",
        "error": "What went wrong, in one sentence.",
        "details": "The problems of the request, one per field; absent when there are none.",
    },
    "ErrorDetail": {
        "field": "The JSON path of the field (`$.contacts[0].email`) or the parameter's name; "
        "for a failed validation rule, where in the document it failed (an XPath).",
        "problem": "What is wrong with it; for a failed validation rule, the rule's text.",
        "location": "AT-1131: where in the document the rule failed (an XPath).",
        "text": "AT-1131: what the failed rule says.",
    },
}


def _lookup(schema: str, prop: str) -> str:
    return PROPERTIES.get(schema, {}).get(prop) or COMMON.get(prop, "")


def describe(components: dict[str, Any]) -> None:
    """Give every property of the component schemas that has none its description."""
    for name, schema in components.items():
        for prop, value in schema.get("properties", {}).items():
            if value.get("description"):
                continue
            text = _lookup(name, prop)
            if text:
                schema["properties"][prop] = {**value, "description": text}
