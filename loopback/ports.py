"""Free 127.0.0.1 ports for the servers the tests and benchmarks start, picked below the kernel's ephemeral range.

A port the kernel hands out for `bind(0)` comes from the same range (net.ipv4.ip_local_port_range, 32768-60999
by default) as the source port of every outgoing connection, so on a busy machine a client socket could take it
between the check and the server's own bind ("Address already in use"). Ports below that range are never given
to a client socket; a random pick there, checked by binding it, collides only with another server doing the same.
"""

from __future__ import annotations

import random
import socket

#: Below the ephemeral range (its default low end is 32768) and above the ports services usually claim.
LOW, HIGH = 20_000, 32_767
_random = random.SystemRandom()  # two processes seeded alike must not walk the same ports


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(count: int = 1) -> int:
    """The first of `count` consecutive ports that nothing on 127.0.0.1 holds now (a cluster's replicas take
    REPLICA_PORT and the ports after it)."""
    for _ in range(1000):
        first = _random.randint(LOW, HIGH - count + 1)
        if all(_bindable(first + i) for i in range(count)):
            return first
    raise RuntimeError(f"no {count} free consecutive ports between {LOW} and {HIGH}")
