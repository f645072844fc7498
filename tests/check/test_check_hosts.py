"""Which servers /check may connect to once an operator lists hosts: a listed name never leads to an internal
address that is not itself listed, no listing admits a metadata service, and only listed ports are used."""

from __future__ import annotations

import ipaddress

import pytest

from web.check.hosts import DEFAULT_PORTS, METADATA_ADDRESSES, CheckInputError, HostRules, vet_url

PUBLIC_ADDRESS = "93.184.216.34"


def resolver(table: dict[str, list[str]]):  # noqa: ANN201 - the Resolver shape
    return lambda host, port: table[host]


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "10.1.2.3", "172.16.0.5", "192.168.1.1", "169.254.10.10",
                                     "fe80::1", "fd12:3456::1", "100.64.0.1", "0.0.0.0"])
def test_a_listed_name_that_resolves_inside_is_refused(address: str) -> None:
    rules = HostRules.from_config("mcp.example", public=True)
    with pytest.raises(CheckInputError, match="not allowed"):
        vet_url("https://mcp.example/mcp", rules, resolver({"mcp.example": [address]}))


def test_an_internal_address_is_reachable_when_it_is_itself_listed() -> None:
    rules = HostRules.from_config("mcp.example, 10.1.2.3", public=True)
    assert vet_url("https://mcp.example/mcp", rules, resolver({"mcp.example": ["10.1.2.3"]}))[1] == "10.1.2.3"
    rules = HostRules.from_config("mcp.example, 10.0.0.0/8", public=True)
    assert vet_url("http://mcp.example/mcp", rules, resolver({"mcp.example": ["10.9.9.9"]}))[1] == "10.9.9.9"


def test_a_name_that_resolves_partly_inside_is_refused() -> None:
    """DNS rebinding in one answer: one public address and one internal one."""
    rules = HostRules.from_config("mcp.example", public=True)
    with pytest.raises(CheckInputError, match="192.168.0.7"):
        vet_url("https://mcp.example/mcp", rules, resolver({"mcp.example": [PUBLIC_ADDRESS, "192.168.0.7"]}))


@pytest.mark.parametrize("listing", ["169.254.0.0/16", "0.0.0.0/0", "169.254.169.254", "::/0", "fd00:ec2::/64",
                                     "100.64.0.0/10"])
def test_no_listing_admits_a_metadata_service(listing: str) -> None:
    rules = HostRules.from_config(listing, public=True)
    for address in METADATA_ADDRESSES:
        assert not rules.allows(str(address), address, 80)
        assert not rules.allows("metadata.example", address, 80)


def test_the_metadata_service_is_refused_even_from_a_local_visitor() -> None:
    rules = HostRules.from_config("", public=False)
    with pytest.raises(CheckInputError, match="169.254.169.254"):
        vet_url("http://metadata.example/", rules, resolver({"metadata.example": ["169.254.169.254"]}))


def test_listed_hosts_are_checked_on_listed_ports_only() -> None:
    table = {"mcp.example": [PUBLIC_ADDRESS]}
    rules = HostRules.from_config("mcp.example", public=True)
    assert rules.ports == DEFAULT_PORTS
    assert vet_url("https://mcp.example/mcp", rules, resolver(table))[1] == PUBLIC_ADDRESS
    assert vet_url("http://mcp.example:80/mcp", rules, resolver(table))[1] == PUBLIC_ADDRESS
    with pytest.raises(CheckInputError, match="port 22 is not allowed"):
        vet_url("http://mcp.example:22/mcp", rules, resolver(table))
    wider = HostRules.from_config("mcp.example", public=True, ports="443, 8443")
    assert vet_url("https://mcp.example:8443/mcp", wider, resolver(table))[1] == PUBLIC_ADDRESS
    with pytest.raises(CheckInputError, match="port 80 is not allowed"):
        vet_url("http://mcp.example/mcp", wider, resolver(table))


def test_loopback_on_any_port_for_a_visitor_at_this_machine() -> None:
    rules = HostRules.from_config("", public=False)
    assert vet_url("http://127.0.0.1:5000/mcp", rules, resolver({"127.0.0.1": ["127.0.0.1"]}))[1] == "127.0.0.1"
    assert rules.allows("localhost", ipaddress.ip_address("::1"), 65000)


@pytest.mark.parametrize("value", ["http", "0", "70000", "443;80", ","])
def test_a_bad_port_list_is_a_configuration_error_naming_the_setting(value: str) -> None:
    from mrtr_settings.environment import ConfigError, read_settings

    with pytest.raises(ConfigError, match="MRTR_CHECK_PORTS"):
        read_settings({"MRTR_CHECK_PORTS": value})
    assert read_settings({"MRTR_CHECK_PORTS": " 8443 , 443"}).check_ports == "8443,443"
