"""Which addresses are this machine's own (the loopback rule of the dashboard and the cluster)."""

from __future__ import annotations

import ipaddress
import socket


def is_loopback(host: str) -> bool:
    """True for localhost and the 127.0.0.0/8 and ::1 addresses, bracketed or not (a name
    resolving only to loopback addresses counts as loopback; one that does not resolve does not)."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    return bool(infos) and all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback
                               for info in infos)
