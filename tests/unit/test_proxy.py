"""The client's address behind trusted reverse proxies: the forwarding header's hops walked
from the right, past trusted proxies, to the first that is not; nothing a client writes left
of its own address is ever believed; unusable hops stop the walk; the work is bounded."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from fourcorner.entrypoints.config import ConfigError, Settings
from fourcorner.entrypoints.http.proxy import (
    MAX_HEADER,
    MAX_HOPS,
    Address,
    TrustedProxies,
    forwarded_for,
    hops,
    node,
)

# the proxies' networks, and addresses inside and outside them
TRUSTED = TrustedProxies([ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("fd00::/8")])
PROXY_ADDRESSES = ("10.0.0.1", "10.1.2.3", "10.255.0.9", "fd00::1", "fd12:3456::9")
CLIENT_ADDRESSES = ("203.0.113.7", "198.51.100.1", "192.0.2.44", "2001:db8::1", "2001:db8:1::5")


def headers(*pairs: tuple[str, str]) -> CIMultiDictProxy[str]:
    return CIMultiDictProxy(CIMultiDict(pairs))


def xff(*lines: str) -> CIMultiDictProxy[str]:
    return headers(*(("X-Forwarded-For", line) for line in lines))


def forwarded(*lines: str) -> CIMultiDictProxy[str]:
    return headers(*(("Forwarded", line) for line in lines))


# --- the walk, as properties -----------------------------------------------------------------

addresses = st.sampled_from(PROXY_ADDRESSES + CLIENT_ADDRESSES)
client_addresses = st.sampled_from(CLIENT_ADDRESSES)
proxy_addresses = st.sampled_from(PROXY_ADDRESSES)
# what a client may write into its own header: anything, addresses of proxies included
forged = st.lists(
    st.one_of(
        addresses,
        st.sampled_from(['"', ",", ";", "for=", 'for="', "unknown", "_x", "\\", "[", " ", "="]),
        st.text(st.characters(codec="ascii", exclude_characters="\r\n"), max_size=20),
    ),
    max_size=12,
).map("".join)


def written(address: str, style: int) -> str:
    """``address`` as a proxy writes it in a ``Forwarded`` element, in one of several ways."""
    v6 = ":" in address
    node_text = [
        f"[{address}]" if v6 else address,
        f"[{address}]:4711" if v6 else f"{address}:4711",
        f"[{address}]:_port" if v6 else f"{address}:_port",
    ][style % 3]
    value = f'"{node_text}"' if v6 or style % 3 or style >= 3 else node_text
    return [
        f"for={value}",
        f"For={value};proto=https",
        f'proto=http;for={value};by="[fd00::5]:80"',
        f'host="shop.example;x,y";for={value}',
    ][style % 4]


@given(
    forged=forged,
    client=client_addresses,
    chain=st.lists(proxy_addresses, min_size=1, max_size=5),
    separate=st.booleans(),
)
def test_behind_trusted_proxies_the_client_is_never_what_it_forged_in_x_forwarded_for(
    forged, client, chain, separate
):
    """A client sends any ``X-Forwarded-For``; each trusted proxy on its way appends the
    address it was reached from. The service, reached from the last proxy, finds the client's
    real address, whatever the client wrote (as the start of the header, or as a line of its
    own)."""
    peer, appended = chain[-1], [client, *chain[:-1]]
    if separate:
        got = TRUSTED.client(peer, xff(*([forged] if forged else []), ", ".join(appended)))
    else:
        got = TRUSTED.client(peer, xff(", ".join(([forged] if forged else []) + appended)))
    assert got == client


@given(
    forged=forged,
    client=client_addresses,
    chain=st.lists(proxy_addresses, min_size=1, max_size=5),
    styles=st.lists(st.integers(0, 11), min_size=6, max_size=6),
)
def test_behind_trusted_proxies_the_client_is_never_what_it_forged_in_forwarded(
    forged, client, chain, styles
):
    """The same with RFC 7239's ``Forwarded``, each proxy writing its element its own way
    (quoted or not, with a port or an obfuscated one, other parameters around): a client's
    unclosed quote, stray commas or its own ``for=`` change nothing."""
    peer, appended = chain[-1], [client, *chain[:-1]]
    elements = [written(a, s) for a, s in zip(appended, styles, strict=False)]
    got = TRUSTED.client(peer, forwarded(", ".join(([forged] if forged else []) + elements)))
    assert got == client


@given(forged=forged, peer=client_addresses)
def test_the_headers_of_a_peer_that_is_no_trusted_proxy_are_never_read(forged, peer):
    for sent in (xff(forged), forwarded(forged), xff("10.0.0.1, " + forged)):
        assert TRUSTED.client(peer, sent) == peer
        assert TrustedProxies().client("10.0.0.1", sent) == "10.0.0.1"  # none trusted


# a hop as written, with the address it stands for (None: no usable address)
hop_values = st.one_of(
    addresses.map(lambda a: (a, a)),
    st.sampled_from(["unknown", "_hidden", "", "1.2.3", "[::1", "::g", "fe80::1%eth0"]).map(
        lambda text: (text, None)
    ),
)


@given(
    trusted=st.sets(addresses),
    peer=addresses,
    chain=st.lists(hop_values, max_size=MAX_HOPS),
)
def test_the_client_is_the_nearest_untrusted_hop_or_the_peer(trusted, peer, chain):
    """For any hops and any set of trusted addresses: an untrusted peer is the client;
    behind a trusted one, the client is the nearest hop that is not trusted, every hop
    between it and the peer trusted; an unusable hop, or the header's end, before any
    untrusted one leaves the last trusted address."""
    proxies = TrustedProxies(ipaddress.ip_network(a) for a in trusted)
    got = proxies.client(peer, xff(", ".join(text for text, _ in chain)))
    if peer not in trusted:
        assert got == peer
        return
    nearest_first: list[str | None] = [value for _, value in reversed(chain)]
    last = peer
    for value in nearest_first:
        if value is None:
            break  # the last trusted address stands
        last = value
        if value not in trusted:
            break
    assert got == last
    # never an address left of the nearest untrusted hop: that part was the client's to write
    untrusted = [i for i, v in enumerate(nearest_first) if v is not None and v not in trusted]
    if untrusted:
        assert got in {peer, *(v for v in nearest_first[: untrusted[0] + 1] if v)}


# --- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("192.0.2.1", "192.0.2.1"),
        ("  192.0.2.1 ", "192.0.2.1"),
        ("192.0.2.1:8080", "192.0.2.1"),
        ("192.0.2.1:_gazonk", "192.0.2.1"),
        ("2001:db8::1", "2001:db8::1"),
        ("2001:DB8:0:0::1", "2001:db8::1"),
        ("[2001:db8::1]", "2001:db8::1"),
        ("[2001:db8::1]:4711", "2001:db8::1"),
        ("[2001:db8::1]:_hidden", "2001:db8::1"),
        ("::ffff:192.0.2.1", "::ffff:c000:201"),
        ("192.0.2.1:65536", None),
        ("192.0.2.1:", None),
        ("192.0.2.1:http", None),
        ("[192.0.2.1]", None),  # brackets are for IPv6
        ("[2001:db8::1", None),
        ("[2001:db8::1]4711", None),
        ("[2001:db8::1]:", None),
        ("2001:db8::1:4711x", None),
        ("fe80::1%eth0", None),  # a zone index means nothing to another host
        ("01.2.3.4", None),
        ("1.2.3.4.5", None),
        ("unknown", None),
        ("_hidden", None),
        ("example.com", None),
        ("", None),
        ("1" * 100, None),
        ("\\x00", None),
    ],
)
def test_a_hop_is_an_address_with_or_without_a_port_or_unusable(text, address):
    found = node(text)
    assert (str(found) if found is not None else None) == address


@pytest.mark.parametrize(
    ("element", "address"),
    [
        ("for=192.0.2.60;proto=http;by=203.0.113.43", "192.0.2.60"),
        ('for="[2001:db8:cafe::17]:4711"', "2001:db8:cafe::17"),
        ('For="192.0.2.43:47011"', "192.0.2.43"),
        ("proto=https;FOR=192.0.2.1", "192.0.2.1"),
        (" for = 192.0.2.1 ; proto=https ", "192.0.2.1"),
        ('host="a;b,c";for=192.0.2.1', "192.0.2.1"),
        ('for="[2001:db8::1]";by=_proxy', "2001:db8::1"),
        ("for=192.0.2.1;", "192.0.2.1"),
        ("for=unknown", None),
        ("for=_hidden", None),
        ('for="_gazonk"', None),
        ("proto=https;by=203.0.113.43", None),  # no for=
        ("for=192.0.2.1;for=192.0.2.2", None),  # which?
        ('for="192.0.2.1', None),
        ('for="192.0.2.1\\"', None),
        ("for=192.0.2.1;;", None),
        ("for=", None),
        ("192.0.2.1", None),
        ("", None),
    ],
)
def test_a_forwarded_element_names_its_one_for_or_is_unusable(element, address):
    found = forwarded_for(element)
    assert (str(found) if found is not None else None) == address


def walked(proxies: TrustedProxies, peer: str, sent: CIMultiDictProxy[str]) -> str | None:
    return proxies.client(peer, sent)


def test_x_forwarded_for_wins_over_forwarded_unless_it_is_blank():
    both = headers(("Forwarded", "for=192.0.2.1"), ("X-Forwarded-For", "198.51.100.1"))
    assert walked(TRUSTED, "10.0.0.1", both) == "198.51.100.1"
    blank = headers(("Forwarded", "for=192.0.2.1"), ("X-Forwarded-For", "  "))
    assert walked(TRUSTED, "10.0.0.1", blank) == "192.0.2.1"
    # an unusable X-Forwarded-For is not passed over for the other header
    bad = headers(("Forwarded", "for=192.0.2.1"), ("X-Forwarded-For", "unknown"))
    assert walked(TRUSTED, "10.0.0.1", bad) == "10.0.0.1"


def test_lines_of_one_header_are_one_list():
    assert walked(TRUSTED, "10.0.0.1", xff("192.0.2.1", "198.51.100.1, 10.0.0.2")) == (
        "198.51.100.1"
    )
    assert walked(TRUSTED, "10.0.0.1", forwarded('for="[2001:db8::1]"', "for=10.0.0.2")) == (
        "2001:db8::1"
    )


@pytest.mark.parametrize(
    ("sent", "client"),
    [
        (xff("192.0.2.1, unknown, 10.0.0.2"), "10.0.0.2"),
        (xff("192.0.2.1, _hidden"), "10.0.0.1"),
        (xff("192.0.2.1,,10.0.0.2"), "10.0.0.2"),
        (xff("10.0.0.3, 10.0.0.2"), "10.0.0.3"),  # trusted throughout: the leftmost
        (forwarded("for=192.0.2.1, for=unknown, for=10.0.0.2"), "10.0.0.2"),
        (forwarded('for=192.0.2.1, for="_x";proto=https'), "10.0.0.1"),
        (forwarded("for=192.0.2.1, garbage"), "10.0.0.1"),
        (headers(), "10.0.0.1"),
    ],
)
def test_an_unusable_hop_stops_the_walk_at_the_last_trusted_address(sent, client):
    assert walked(TRUSTED, "10.0.0.1", sent) == client


def test_a_comma_in_a_quoted_string_does_not_end_a_forwarded_element():
    sent = forwarded('for=192.0.2.1;host="a,b", for=10.0.0.2;host=",,"')
    assert walked(TRUSTED, "10.0.0.1", sent) == "192.0.2.1"


def test_a_peer_on_a_dual_stack_socket_is_trusted_by_its_ipv4_network():
    assert walked(TRUSTED, "::ffff:10.0.0.1", xff("192.0.2.1")) == "192.0.2.1"
    mapped = TrustedProxies([ipaddress.ip_network("::ffff:10.0.0.0/104")])
    assert walked(mapped, "::ffff:10.0.0.1", xff("192.0.2.1")) == "192.0.2.1"
    assert walked(TRUSTED, "fd00::7", xff("2001:db8::9")) == "2001:db8::9"
    assert walked(TRUSTED, "not an address", xff("192.0.2.1")) == "not an address"


def test_a_very_long_header_is_read_only_at_its_right_end():
    """A megabyte of forged hops (valid and trusted ones too) before the proxy's own: only the
    last ``MAX_HEADER`` characters are looked at, at most ``MAX_HOPS`` hops walked, and the
    client is found."""
    junk = ", ".join(["10.0.0.9"] * 100_000)
    assert len(junk) > 999_000
    assert walked(TRUSTED, "10.0.0.1", xff(junk + ", 192.0.2.1, 10.0.0.2")) == "192.0.2.1"
    assert walked(TRUSTED, "10.0.0.1", xff(junk, "192.0.2.1")) == "192.0.2.1"
    lines = ["10.0.0.9, " * 800] * 100 + ["192.0.2.1"]
    assert walked(TRUSTED, "10.0.0.1", xff(*lines)) == "192.0.2.1"
    quoted = 'for="' + "x, " * 400_000 + '", for=192.0.2.1'
    assert walked(TRUSTED, "10.0.0.1", forwarded(quoted)) == "192.0.2.1"
    for sent in (xff(junk), forwarded(junk.replace("10.", "for=10."))):
        walk: Sequence[Address | None] = list(hops(sent))
        assert len(walk) == MAX_HOPS + 1 and walk[-1] is None  # then the bound
        # a chain of trusted hops longer than the bound ends at its last hop walked
        assert walked(TRUSTED, "10.0.0.1", sent) == "10.0.0.9"


@pytest.mark.parametrize("cut", range(11))
@pytest.mark.parametrize(("name", "form"), [("X-Forwarded-For", "{}"), ("Forwarded", "for={}")])
def test_the_hop_the_bound_cuts_through_is_unusable(cut, name, form):
    """A header just over ``MAX_HEADER`` characters, cut through its leftmost hop
    (``203.0.113.7``): what is left of that hop (``3.0.113.7``) is never read as an address,
    and the walk ends at the last trusted one."""
    first, pad, last = (form.format(a) for a in ("203.0.113.7", "10.0.0.3", "10.0.0.2"))
    # trusted hops padded with spaces, none longer than an element may be, to the length
    room = MAX_HEADER + cut - len(first) - len(last) - 1
    middle = [pad + " " * 300] * (room // 320)
    room -= sum(len(m) + 1 for m in middle)
    middle.append(pad + " " * (room - len(pad) - 1))
    header = ",".join([first, *middle, last])
    assert len(header) == MAX_HEADER + cut
    got = walked(TRUSTED, "10.0.0.1", headers((name, header)))
    assert got == ("203.0.113.7" if cut == 0 else "10.0.0.3")


# --- the setting -------------------------------------------------------------------------------


def test_the_setting_lists_addresses_and_networks_and_is_empty_by_default():
    assert Settings().proxy_networks == ()
    settings = Settings(trusted_proxies=" 10.0.0.5, 192.168.0.0/16,,2001:db8::/64 ,fd00::1")
    assert [str(n) for n in settings.check().proxy_networks] == [
        "10.0.0.5/32",
        "192.168.0.0/16",
        "2001:db8::/64",
        "fd00::1/128",
    ]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("10.0.0.5, proxy.internal", "'proxy.internal' is not an IP address or a network"),
        ("10.0.0.0/33", "'10.0.0.0/33' is not an IP address or a network"),
        ("[::1]", "'[::1]' is not an IP address or a network"),
        ("fe80::1%eth0", "'fe80::1%eth0' is not an IP address or a network"),
        ("10.0.0.5/24", "'10.0.0.5/24' has bits set past its prefix; write the network as "),
        ("0.0.0.0/0", "'0.0.0.0/0' is every address"),
        ("10.0.0.5, ::/0", "'::/0' is every address"),
    ],
)
def test_a_malformed_entry_is_refused_at_start_by_name(value, says):
    with pytest.raises(ConfigError) as e:
        Settings.load({"FOURCORNER_TRUSTED_PROXIES": value})
    assert str(e.value).startswith(f"FOURCORNER_TRUSTED_PROXIES: {says}")
    assert "\n" not in str(e.value)
