"""Where the cluster's processes listen, and which scheduler addresses they may use.

The rules (docs/cluster.md, "Security"): a Dask scheduler or worker runs whatever Python a
peer sends it, so nothing listens beyond where it must, and nothing talks plain ``tcp://``
beyond this machine unless the operator says the network is private (``--insecure``,
``Cluster.Insecure: true``; then one warning). ``tls://`` with certificates of the
organiser's CA is the way over any other network.

No Dask import here: the checks run before ``distributed`` is loaded.
"""

from __future__ import annotations

import socket

from runner.net import is_loopback

DEFAULT_PORT = 8786  # Dask's scheduler port


def split_address(address: str, default_port: int | None = None) -> tuple[str, str, int | None]:
    """``tcp://HOST:PORT`` -> ("tcp", HOST, PORT); the scheme is "" when not given, an IPv6
    host is given in brackets ([::1]:8786). ValueError for a port that is not one."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "", address
    if rest.startswith("["):
        host, _, tail = rest[1:].partition("]")
        port_text = tail[1:] if tail.startswith(":") else ""
    elif rest.count(":") == 1:
        host, _, port_text = rest.partition(":")
    else:
        host, port_text = rest, ""
    port = default_port
    if port_text:
        if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
            raise ValueError(f"{port_text!r} is not a TCP port (0-65535)")
        port = int(port_text)
    return scheme, host, port


def plain_problem(address: str, insecure: bool, how: str) -> str | None:
    """Why a scheduler ``address`` may not be used (None: it may): plain ``tcp://`` to a
    host that is not loopback needs ``how`` (the flag or key that allows it)."""
    scheme, host, _ = split_address(address)
    if scheme not in ("tcp", "") or insecure or is_loopback(host):
        return None
    return (f"{address}: a Dask scheduler on another machine over plain tcp:// lets anyone on "
            "that network run programs on every worker; use tls:// with certificates of your "
            "own CA (docs/cluster.md, \"Security\"), or say the network is private with "
            f"{how}")


def plain_warning(address: str) -> str:
    return (f"warning: {address}: plain tcp:// beyond this machine (allowed by --insecure / "
            "Cluster.Insecure): anyone who reaches this network can run programs on the "
            "workers; use tls:// unless the network is private")


def local_address_to(host: str, port: int = DEFAULT_PORT) -> str:
    """The address of this machine's interface that reaches ``host`` (no packet is sent:
    a UDP socket is connected, and the kernel picks the route and its source address)."""
    host = host.strip("[]")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    except (OSError, UnicodeError) as exc:
        raise OSError(f"cannot resolve {host}: {exc}") from None
    family, kind, proto, _, target = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.connect(target)
        found = str(sock.getsockname()[0])
    return f"[{found}]" if ":" in found else found


def listen_host(scheduler: str, given: str | None) -> tuple[str, int | None]:
    """(host, port or None for any) a worker listens on: ``--listen HOST[:PORT]``, else the
    local address it reaches the scheduler from (never every interface unless asked with
    ``--listen 0.0.0.0``). ValueError/OSError with the reason."""
    if given:
        scheme, host, port = split_address(given)
        if scheme:
            raise ValueError("expected HOST[:PORT] (the protocol is the scheduler's)")
        if not host:
            raise ValueError("expected HOST[:PORT]")
        return (f"[{host}]" if ":" in host else host), port
    _, host, port = split_address(scheduler, DEFAULT_PORT)
    return local_address_to(host, port or DEFAULT_PORT), None
