"""Exclusive C14N of the AS4 XML helper and the ``#default`` token of an
``InclusiveNamespaces PrefixList`` (Exclusive XML Canonicalization 1.0): with it the default
namespace is handled as in inclusive C14N, so it is declared on the apex when one is in scope
there, and below wherever it changes (``xmlns=""`` included). WSS4J (phase4, Oxalis, Domibus)
writes the token when an ancestor of a signed element declares a default namespace; lxml drops
it, so the helper handles it. The expected forms are Apache Santuario's (the JDK's copy)."""

from __future__ import annotations

import base64
import hashlib

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from fourcorner.adapters.as4.constants import (
    BASE64_BINARY,
    DS,
    EC,
    EXC_C14N,
    RSA_SHA256,
    SHA256,
    WSSE,
    WSU,
    X509V3,
)
from fourcorner.adapters.as4.signature import verify
from fourcorner.adapters.as4.xml import Element, c14n, index_ids, parse_untrusted
from fourcorner.adapters.pki import new_ca

SOAP = "http://www.w3.org/2003/05/soap-envelope"
REVIEW = (
    f'<S12:Envelope xmlns:S12="{SOAP}" xmlns="urn:d">'
    '<S12:Header><eb:Messaging xmlns:eb="urn:eb"/></S12:Header></S12:Envelope>'
)


def at(xml: str, *path: int) -> Element:
    element = etree.fromstring(xml.encode())
    for index in path:
        element = element[index]
    return element


def test_the_default_token_declares_the_default_namespace_in_scope_at_the_apex():
    """The review's vector: Messaging does not use urn:d, but ``#default`` includes it."""
    messaging = at(REVIEW, 0, 0)
    assert c14n(messaging, ["#default"]) == (
        b'<eb:Messaging xmlns="urn:d" xmlns:eb="urn:eb"></eb:Messaging>'
    )


def test_without_the_default_token_an_unused_default_namespace_is_left_out():
    messaging = at(REVIEW, 0, 0)
    assert c14n(messaging) == b'<eb:Messaging xmlns:eb="urn:eb"></eb:Messaging>'
    assert c14n(messaging, ["S12"]) == (
        f'<eb:Messaging xmlns:S12="{SOAP}" xmlns:eb="urn:eb"></eb:Messaging>'.encode()
    )


def test_a_default_namespace_the_apex_uses_is_declared_once_with_or_without_the_token():
    xml = '<Envelope xmlns="urn:d" xmlns:x="urn:x"><Body x:id="b"><Item a="1"/></Body></Envelope>'
    body = at(xml, 0)
    expected = b'<Body xmlns="urn:d" xmlns:x="urn:x" x:id="b"><Item a="1"></Item></Body>'
    assert c14n(body) == expected
    assert c14n(body, ["#default"]) == expected


def test_below_the_apex_the_token_declares_each_change_of_the_default_namespace():
    """An element that leaves the default namespace (``xmlns=""``) or declares another one
    declares it even where nothing uses it; one that keeps the apex's declares nothing."""
    xml = (
        f'<S12:Envelope xmlns:S12="{SOAP}" xmlns="urn:d"><S12:Header>'
        '<eb:Messaging xmlns:eb="urn:eb"><eb:A xmlns=""><eb:B/><F/></eb:A>'
        '<eb:C xmlns="urn:e"><eb:D/></eb:C><E/></eb:Messaging></S12:Header></S12:Envelope>'
    )
    messaging = at(xml, 0, 0)
    assert c14n(messaging, ["#default"]) == (
        b'<eb:Messaging xmlns="urn:d" xmlns:eb="urn:eb"><eb:A xmlns=""><eb:B></eb:B><F></F>'
        b'</eb:A><eb:C xmlns="urn:e"><eb:D></eb:D></eb:C><E></E></eb:Messaging>'
    )
    # without the token exclusive C14N declares a default namespace only where it is used
    assert c14n(messaging) == (
        b'<eb:Messaging xmlns:eb="urn:eb"><eb:A><eb:B></eb:B><F></F></eb:A><eb:C><eb:D>'
        b'</eb:D></eb:C><E xmlns="urn:d"></E></eb:Messaging>'
    )


def test_an_empty_default_namespace_at_the_apex_is_not_declared():
    assert c14n(at('<r xmlns="urn:d"><a xmlns=""><b xmlns="urn:d"/></a></r>', 0), ["#default"]) == (
        b'<a><b xmlns="urn:d"></b></a>'
    )
    assert c14n(at('<r xmlns=""><p:a xmlns:p="urn:p"/></r>', 0), ["#default"]) == (
        b'<p:a xmlns:p="urn:p"></p:a>'
    )


def test_with_the_token_the_rest_of_the_form_is_exclusive_c14n_unchanged():
    """Other prefixes of the list, attributes, escaped text and values and a processing
    instruction whose data looks like a start tag keep their canonical form."""
    xml = (
        '<S12:Envelope xmlns:S12="urn:s" xmlns="urn:d"><S12:Body xmlns:p="urn:p" '
        'p:z="&lt;a&gt; &quot;" a="&#9;&#10;"><?pi a<b c="1" xmlns="x"?>t&lt;<p:x>&amp;<y/>'
        "</p:x></S12:Body></S12:Envelope>"
    )
    body = at(xml, 0)
    assert c14n(body, ["#default", "S12"]) == (
        b'<S12:Body xmlns="urn:d" xmlns:S12="urn:s" xmlns:p="urn:p" a="&#x9;&#xA;" '
        b'p:z="&lt;a> &quot;"><?pi a<b c="1" xmlns="x"?>t&lt;<p:x>&amp;<y></y></p:x>'
        b"</S12:Body>"
    )


DEFAULTS = st.sampled_from(["urn:d", "urn:e", ""])


@st.composite
def trees(draw: st.DrawFn, depth: int = 0) -> str:
    """An element whose default namespace is declared only where the element uses it (an
    unprefixed element), under which prefixed ones (p, q) may declare their prefix again."""
    prefixed = draw(st.sampled_from([None, "p", "q"])) if depth else None
    declarations = []
    if prefixed is None and draw(st.booleans()):
        declarations.append(f'xmlns="{draw(DEFAULTS)}"')
    elif prefixed is not None and draw(st.booleans()):
        declarations.append(f'xmlns:{prefixed}="urn:{prefixed}{draw(st.integers(0, 1))}"')
    if draw(st.booleans()):
        declarations.append(f'{draw(st.sampled_from(["p", "q"]))}:at="v"')
    name = (f"{prefixed}:" if prefixed else "") + draw(st.sampled_from("ab"))
    children = draw(st.lists(trees(depth + 1), max_size=3 if depth < 3 else 0))
    return f"<{name} {' '.join(declarations)}>{''.join(children)}</{name}>"


@given(trees(), DEFAULTS, st.lists(st.sampled_from(["p", "q"]), unique=True))
def test_the_token_changes_nothing_when_the_apex_uses_the_default_namespace(
    apex: str, default: str, prefixes: list[str]
) -> None:
    element = at(f'<root xmlns="{default}" xmlns:p="urn:p" xmlns:q="urn:q">{apex}</root>', 0)
    assert c14n(element, [*prefixes, "#default"]) == c14n(element, prefixes)


# A message signed as WSS4J signs it when the Envelope declares a default namespace: both
# PrefixLists hold #default. The canonical forms are Santuario's, not computed here.
INCLUSIVE = f'<ec:InclusiveNamespaces xmlns:ec="{EC}" PrefixList="#default S12"/>'
SIGNED_MESSAGING = (
    f'<eb:Messaging xmlns="urn:d" xmlns:S12="{SOAP}" xmlns:eb="urn:eb" xmlns:wsu="{WSU}" '
    'wsu:Id="m"><eb:SignalMessage></eb:SignalMessage></eb:Messaging>'
).encode()
DIGEST = base64.b64encode(hashlib.sha256(SIGNED_MESSAGING).digest()).decode()
CANONICAL_INCLUSIVE = (
    f'<ec:InclusiveNamespaces xmlns:ec="{EC}" PrefixList="#default S12"></ec:InclusiveNamespaces>'
)
SIGNED_INFO = (
    f'<ds:SignedInfo xmlns="urn:d" xmlns:S12="{SOAP}" xmlns:ds="{DS}">'
    f'<ds:CanonicalizationMethod Algorithm="{EXC_C14N}">{CANONICAL_INCLUSIVE}'
    f'</ds:CanonicalizationMethod><ds:SignatureMethod Algorithm="{RSA_SHA256}">'
    f'</ds:SignatureMethod><ds:Reference URI="#m"><ds:Transforms>'
    f'<ds:Transform Algorithm="{EXC_C14N}">{CANONICAL_INCLUSIVE}</ds:Transform></ds:Transforms>'
    f'<ds:DigestMethod Algorithm="{SHA256}"></ds:DigestMethod><ds:DigestValue>{DIGEST}'
    "</ds:DigestValue></ds:Reference></ds:SignedInfo>"
).encode()


def wss4j_message(signature_value: str, token: str) -> str:
    return (
        f'<S12:Envelope xmlns:S12="{SOAP}" xmlns="urn:d" xmlns:wsu="{WSU}"><S12:Header>'
        f'<wsse:Security xmlns:wsse="{WSSE}"><wsse:BinarySecurityToken '
        f'EncodingType="{BASE64_BINARY}" ValueType="{X509V3}" wsu:Id="X509-1">{token}'
        f'</wsse:BinarySecurityToken><ds:Signature xmlns:ds="{DS}" Id="SIG-1"><ds:SignedInfo>'
        f'<ds:CanonicalizationMethod Algorithm="{EXC_C14N}">{INCLUSIVE}'
        f'</ds:CanonicalizationMethod><ds:SignatureMethod Algorithm="{RSA_SHA256}"/>'
        f'<ds:Reference URI="#m"><ds:Transforms><ds:Transform Algorithm="{EXC_C14N}">'
        f'{INCLUSIVE}</ds:Transform></ds:Transforms><ds:DigestMethod Algorithm="{SHA256}"/>'
        f"<ds:DigestValue>{DIGEST}</ds:DigestValue></ds:Reference></ds:SignedInfo>"
        f"<ds:SignatureValue>{signature_value}</ds:SignatureValue><ds:KeyInfo>"
        f'<wsse:SecurityTokenReference><wsse:Reference URI="#X509-1" ValueType="{X509V3}"/>'
        "</wsse:SecurityTokenReference></ds:KeyInfo></ds:Signature></wsse:Security>"
        '<eb:Messaging xmlns:eb="urn:eb" wsu:Id="m"><eb:SignalMessage/></eb:Messaging>'
        '</S12:Header><S12:Body wsu:Id="b"/></S12:Envelope>'
    )


def test_a_signature_whose_prefix_lists_hold_the_default_token_verifies():
    """The digest of the signed Messaging and the signature over SignedInfo, both made over
    the forms with the Envelope's default namespace, check out (before, EBMS:0101)."""
    certificate, key = new_ca("WSS4J sender")
    assert isinstance(key, rsa.RSAPrivateKey)
    value = key.sign(SIGNED_INFO, padding.PKCS1v15(), hashes.SHA256())
    der = certificate.public_bytes(serialization.Encoding.DER)
    message = wss4j_message(base64.b64encode(value).decode(), base64.b64encode(der).decode())
    root = parse_untrusted(message.encode(), "message")
    verified = verify(root[0][0], index_ids(root))
    assert verified.certificate == certificate
    assert verified.covers(root[0][1])
