"""Webhook URLs: a private target is refused at creation in every form the resolver reads."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.domain.errors import InvalidInput
from fourcorner.domain.webhook_target import address_problem, check_url, legacy_ipv4

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
