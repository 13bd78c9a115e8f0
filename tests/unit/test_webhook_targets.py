"""Webhook URLs: a private target is refused at creation in every form the resolver reads."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.domain.errors import InvalidInput
from fourcorner.domain.webhook_target import address_problem, check_url, host_of, legacy_ipv4

NON_GLOBAL_V4 = [
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
]
FULLWIDTH = str.maketrans("0123456789abcdefx.", "０１２３４５６７８９ａｂｃｄｅｆｘ。")


@st.composite
def private_v4(draw: st.DrawFn) -> ipaddress.IPv4Address:
    net = draw(st.sampled_from(NON_GLOBAL_V4))
    return net[draw(st.integers(0, net.num_addresses - 1))]


def _number(draw: st.DrawFn, value: int) -> str:
    style = draw(st.sampled_from(["dec", "oct", "hex"]))
    if style == "dec" and value:
        return str(value)
    if style == "hex":
        digits = format(value, draw(st.sampled_from(["x", "X"])))
        return draw(st.sampled_from(["0x", "0X"])) + "0" * draw(st.integers(0, 3)) + digits
    return "0" * draw(st.integers(1, 3)) + format(value, "o")


@st.composite
def inet_aton_forms(draw: st.DrawFn, address: ipaddress.IPv4Address) -> str:
    """``address`` as one to four parts (the last filling the rest), each decimal, octal or
    hex: what ``inet_aton`` reads as that address."""
    count = draw(st.integers(1, 4))
    packed = address.packed
    head = list(packed[: count - 1])
    last = int.from_bytes(packed[count - 1 :], "big")
    return ".".join(_number(draw, v) for v in [*head, last])


@st.composite
def private_hosts(draw: st.DrawFn) -> str:
    """A host of a URL that reaches a non-global address, in one of the forms resolvers and
    URL parsers accept for it."""
    address = draw(private_v4())
    form = draw(
        st.sampled_from(
            ["aton", "aton.", "wide", "mapped", "mapped-hex", "compat", "nat64", "6to4"]
        )
    )
    if form.startswith("aton"):
        return draw(inet_aton_forms(address)) + ("." if form == "aton." else "")
    if form == "wide":
        return draw(inet_aton_forms(address)).lower().translate(FULLWIDTH)
    if form == "mapped":
        return f"[::ffff:{address}]"
    if form == "mapped-hex":
        return f"[{ipaddress.IPv6Address(int(address) | 0xFFFF00000000).exploded}]"
    if form == "nat64":
        return f"[64:ff9b::{address}]"
    if form == "6to4":
        return f"[2002:{int(address) >> 16:x}:{int(address) & 0xFFFF:x}::1]"
    return f"[::{address}]" if int(address) > 1 else "[::]"


@given(st.data())
def test_the_legacy_forms_are_read_as_inet_aton_reads_them(data):
    address = data.draw(private_v4() | st.ip_addresses(v=4))
    form = data.draw(inet_aton_forms(address))
    assert socket.inet_aton(form) == address.packed
    assert legacy_ipv4(form) == address


@given(st.text("0123456789abcdefxX.", max_size=24))
def test_any_text_inet_aton_reads_is_read_as_the_same_address(text):
    try:
        packed = socket.inet_aton(text)
    except OSError:
        assert legacy_ipv4(text) is None or text == "" or ".." in text
        return
    assert legacy_ipv4(text) == ipaddress.IPv4Address(packed)


@given(private_hosts(), st.sampled_from(["http", "https"]), st.sampled_from(["", ":8080"]))
def test_a_private_address_in_any_form_is_refused_unless_allowed(host, scheme, port):
    url = f"{scheme}://{host}{port}/hook"
    assert address_problem(host) is not None
    with pytest.raises(InvalidInput) as caught:
        check_url(url, allow_private=False)
    assert [d.field for d in caught.value.details()] == ["$.url"]
    check_url(url, allow_private=True)


@pytest.mark.parametrize(
    ("host", "word"),
    [
        ("127.1", "loopback"),
        ("2130706433", "loopback"),
        ("0177.0.0.1", "loopback"),
        ("0x7f.1", "loopback"),
        ("0", "unspecified"),
        ("[::]", "unspecified"),
        ("localhost.", "loopback"),
        ("LOCALHOST", "loopback"),
        ("api.localhost", "loopback"),
        ("intranet", "single-label"),
        ("metadata", "metadata"),
        ("100.64.0.1", "shared"),
        ("[::ffff:127.0.0.1]", "loopback"),
        ("[::1]", "loopback"),
        ("[::127.0.0.1]", "loopback"),
        ("[64:ff9b::a00:1]", "private"),
        ("[2002:7f00:1::]", "loopback"),
        ("[fe80::1%25eth0]", "link-local"),
        ("[fc00::1]", "private"),
        ("[ff02::1]", "multicast"),
        ("⑯⑨.②⑤④.⑯⑨.②⑤④", "metadata"),
        ("１２７。０。０。１", "loopback"),
        ("1.2.3.4.5", "neither"),
        ("example.123", "neither"),
        ("09.0.0.1", "neither"),
        ("a..example", "neither"),
    ],
)
def test_named_forms_are_refused_saying_why(host, word):
    with pytest.raises(InvalidInput) as caught:
        check_url(f"http://{host}/", allow_private=False)
    [detail] = caught.value.details()
    assert detail.field == "$.url" and word in detail.problem, detail


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/x",
        "https://hooks.example.com./x",
        "http://8.8.8.8/",
        "http://134744072/",  # 8.8.8.8
        "https://[2001:4860:4860::8888]/",
        "https://bücher.example/hook",
        "https://user:pw@hooks.example.com:8443/x?y=1",
    ],
)
def test_public_targets_are_accepted(url):
    check_url(url, allow_private=False)


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1/",
        "http://example.com:99999/",
        "http://exa mple.com/",
        "http://127.0.0.1\\@example.com/",
        "http://example.com/\x00",
    ],
)
def test_malformed_urls_are_refused_even_when_private_targets_are_allowed(url):
    with pytest.raises(InvalidInput):
        check_url(url, allow_private=True)


@given(st.integers(0, 65535), st.sampled_from(["http", "https"]), st.booleans())
def test_a_port_is_refused_exactly_when_it_is_0(port, scheme, allow_private):
    """Port 0 passed: no connection is ever made to it, so every delivery would fail."""
    url = f"{scheme}://hooks.example.com:{port}/in"
    if port == 0:
        with pytest.raises(InvalidInput, match="port"):
            check_url(url, allow_private=allow_private)
    else:
        check_url(url, allow_private=allow_private)


# --- one host, however spelled -----------------------------------------------------------------

LABELS = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
# labels IDNA writes in ASCII (``xn--``), and what a URL may hold in their place
UNICODE_LABELS = ["bücher", "münchen", "пример", "例え"]


@st.composite
def hosts(draw: st.DrawFn) -> tuple[str, int, str]:
    """A host and port a webhook's URL may name, in the form ``host_of`` gives (a name in
    ASCII, an address in its usual form), and its scheme."""
    scheme = draw(st.sampled_from(["http", "https"]))
    port = draw(st.sampled_from([80, 443, 8080, 8443]))
    kind = draw(st.sampled_from(["name", "unicode", "v4", "v6"]))
    if kind == "v4":
        return str(draw(st.ip_addresses(v=4))), port, scheme
    if kind == "v6":
        v6 = draw(st.ip_addresses(v=6).filter(lambda ip: ip.ipv4_mapped is None))
        return str(v6), port, scheme
    labels = draw(st.lists(LABELS, min_size=1, max_size=3))
    if kind == "unicode":
        labels.insert(0, draw(st.sampled_from(UNICODE_LABELS)).encode("idna").decode())
    return ".".join([*labels, draw(st.sampled_from(["com", "example", "de"]))]), port, scheme


def _recased(draw: st.DrawFn, text: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(c.upper() if flip else c for c, flip in zip(text, flips, strict=True))


@st.composite
def spellings(draw: st.DrawFn, host: str, port: int, scheme: str) -> str:
    """A URL to ``host`` and ``port`` as a webhook may be given it: a user name (and
    password), any case, a trailing dot, IDNA's other full stops, a label in Unicode rather
    than ``xn--``, an IPv4 address in any form ``inet_aton`` reads or mapped into IPv6, an
    IPv6 one written out in full, the default port written out or left out."""
    default = {"http": 80, "https": 443}[scheme]
    if ":" in host:
        ip = ipaddress.IPv6Address(host)
        text = draw(st.sampled_from([ip.compressed, ip.exploded]))
        name = f"[{_recased(draw, text)}]"
    elif legacy_ipv4(host) is not None:
        address = ipaddress.IPv4Address(host)
        mapped = draw(st.booleans())
        name = f"[::ffff:{address}]" if mapped else draw(inet_aton_forms(address))
    else:
        labels = [
            label.encode().decode("idna")
            if label.startswith("xn--") and draw(st.booleans())
            else label
            for label in host.split(".")
        ]
        name = draw(st.sampled_from([".", "\u3002", "\uff0e"])).join(labels)
        name = _recased(draw, name) + draw(st.sampled_from(["", "."]))
    user = draw(st.sampled_from(["", "a1@", "user:pw@", "A%40b@"]))
    written = "" if port == default and draw(st.booleans()) else f":{port}"
    return f"{_recased(draw, scheme)}://{user}{name}{written}/{draw(st.sampled_from(['', 'in']))}"


@given(st.data())
def test_every_spelling_of_a_host_is_one_host(data):
    """Bounds by host count a host once, however its webhooks' URLs spell it: each spelling
    the service accepts gives the host and port it names, so one organisation cannot make
    "other hosts" of one by spelling it otherwise."""
    host, port, scheme = data.draw(hosts(), label="host")
    bracketed = f"[{host}]" if ":" in host else host
    assert host_of(f"{scheme}://{bracketed}:{port}/") == (host, port)  # its own form
    url = data.draw(spellings(host, port, scheme), label="url")
    check_url(url, allow_private=True)
    assert host_of(url) == (host, port)


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://a1@hooks.example.com/", ("hooks.example.com", 443)),
        ("https://HOOKS.example.com/", ("hooks.example.com", 443)),
        ("https://hooks.example.com:443/", ("hooks.example.com", 443)),
        ("https://hooks.example.com./", ("hooks.example.com", 443)),
        ("http://hooks.example.com/", ("hooks.example.com", 80)),
        ("https://hooks.example.com:8443/", ("hooks.example.com", 8443)),
        ("https://[2001:DB8:0::1]/", ("2001:db8::1", 443)),
        ("https://[::ffff:8.8.8.8]:443/", ("8.8.8.8", 443)),
        ("https://134744072/", ("8.8.8.8", 443)),
        ("https://Bücher.example/", ("xn--bcher-kva.example", 443)),
    ],
)
def test_a_host_is_named_in_one_form(url, host):
    assert host_of(url) == host
