"""`swiss-runner serve CONFIG [--listen HOST[:PORT]] [--token-file F]`: the live web dashboard.

A separate process that reads the event's state and never writes it, so it can be started
and stopped at any time, before, during and after `run`; with admin tokens it also records
the TD's commands (docs/td.md), as `td` does. It binds 127.0.0.1:8080 unless told
otherwise; bound to any other address it requires an access token (``--token-file`` or the
environment variable SWISS_RUNNER_TOKEN).
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import os
import re
import signal
import socket
import sys

from runner.cli.common import err
from runner.cluster.network import split_address
from runner.config import Config
from runner.domain.text import printable
from runner.errors import EXIT_BAD_INPUT, EXIT_OK, missing_extra
from runner.net import is_loopback

TOKEN_ENV = "SWISS_RUNNER_TOKEN"
ADMIN_TOKEN_ENV = "SWISS_RUNNER_ADMIN_TOKEN"


DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8080
MIN_ADMIN_TOKEN = 12
ADMIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
BARE_TOKEN_NAME = "admin"  # the person of a file with one bare token, or of the variable


def read_admin_tokens(path: str) -> dict[str, str]:
    """The admin tokens of FILE by person: lines ``NAME TOKEN`` (blank lines and ``#``
    comments skipped), or a single bare token (the person ``admin``). ValueError naming
    the line and what was expected."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(1 << 20)
        mode = os.stat(path).st_mode
    except (OSError, UnicodeError) as exc:
        raise ValueError(getattr(exc, "strerror", None) or str(exc)) from None
    lines = [(n, line.split()) for n, line in enumerate(text.splitlines(), 1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise ValueError("the file is empty (expected lines 'NAME TOKEN', or one token)")
    if mode & 0o077:
        print(f"warning: --admin-token-file {path}: other users may read it (chmod 600 {path})",
              file=sys.stderr, flush=True)
    if len(lines) == 1 and len(lines[0][1]) == 1:
        return {BARE_TOKEN_NAME: lines[0][1][0]}
    tokens: dict[str, str] = {}
    for number, words in lines:
        if len(words) != 2:
            raise ValueError(f"line {number}: {len(words)} word(s), expected 'NAME TOKEN' "
                             "(a name, a space, the token)")
        name, token = words
        if not ADMIN_NAME.fullmatch(name):
            raise ValueError(f"line {number}: name {printable(name)!r}: expected letters, "
                             "digits and . _ @ - (at most 64)")
        if name in tokens:
            raise ValueError(f"line {number}: {name} is named twice (one token per person)")
        if token in tokens.values():
            raise ValueError(f"line {number}: {name}'s token is another person's too (one "
                             "token per person: the log says who acted)")
        if len(token) < MIN_ADMIN_TOKEN:
            raise ValueError(f"line {number}: {name}'s token has {len(token)} characters, "
                             f"expected at least {MIN_ADMIN_TOKEN}")
        tokens[name] = token
    return tokens


def admin_tokens(args: argparse.Namespace, token: str | None) -> dict[str, str] | None | int:
    """The TD's admin tokens by person (None: the actions are off), or an exit code after
    saying why."""
    path = getattr(args, "admin_token_file", None)
    if path:
        where = f"--admin-token-file {path}"
        try:
            admins = read_admin_tokens(path)
        except ValueError as exc:
            err(f"{where}: {exc}")
            return EXIT_BAD_INPUT
    else:
        where = f"${ADMIN_TOKEN_ENV}"
        bare = os.environ.get(ADMIN_TOKEN_ENV) or ""
        if not bare:
            return None
        admins = {BARE_TOKEN_NAME: bare}
    for name, admin in admins.items():
        if len(admin) < MIN_ADMIN_TOKEN:
            err(f"{where}: the admin token of {name} must have at least {MIN_ADMIN_TOKEN} "
                "characters")
            return EXIT_BAD_INPUT
        if token is not None and admin == token:
            err(f"{where}: the admin token of {name} must differ from the read-only access "
                "token (--token)")
            return EXIT_BAD_INPUT
    return admins


def listen_address(args: argparse.Namespace) -> tuple[str, int]:
    """(host, port) of ``--listen HOST[:PORT]`` or its aliases ``--host``/``--port``;
    ValueError with the reason."""
    listen, host, port = getattr(args, "listen", None), args.host, args.port
    if listen is not None:
        if host is not None or port is not None:
            raise ValueError("--listen and --host/--port: give --listen HOST[:PORT] alone "
                             "(--host and --port are its older spelling)")
        try:
            scheme, host, port = split_address(listen, DEFAULT_PORT)
        except ValueError as exc:
            raise ValueError(f"--listen {listen}: {exc}") from None
        if scheme or not host:
            raise ValueError(f"--listen {listen}: expected HOST[:PORT] ([::1]:8080 for IPv6)")
    host = DEFAULT_HOST if host is None else host
    return host, DEFAULT_PORT if port is None else port


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (OSError with the reason when it cannot be had)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(1024)  # many viewers may connect at once (a page's announcement)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def read_token_file(path: str) -> str:
    """The token in FILE (its first line); ValueError with the reason."""
    try:
        with open(path, encoding="utf-8") as handle:
            token = handle.readline().strip()
        mode = os.stat(path).st_mode
    except (OSError, UnicodeError) as exc:
        raise ValueError(getattr(exc, "strerror", None) or str(exc)) from None
    if not token:
        raise ValueError("the file is empty (expected the token on its first line)")
    if mode & 0o077:
        print(f"warning: --token-file {path}: other users may read it (chmod 600 {path})",
              file=sys.stderr, flush=True)
    return token


def access_token(args: argparse.Namespace, host: str) -> str | None | int:
    """The read-only access token (None: none, allowed on loopback only), or an exit code
    after saying why."""
    token_file = getattr(args, "token_file", None)
    if args.token and token_file:
        err("--token and --token-file: give one of them")
        return EXIT_BAD_INPUT
    if args.token and not is_loopback(host):
        err(f"--token on the command line is readable by every user of this machine "
            f"(/proc/PID/cmdline, ps) and --listen {host} exposes the dashboard beyond it: give "
            f"the token with --token-file FILE or the environment variable {TOKEN_ENV}")
        return EXIT_BAD_INPUT
    if args.token:
        print(f"warning: --token on the command line is readable by every user of this "
              f"machine (ps); prefer --token-file FILE or {TOKEN_ENV}", file=sys.stderr,
              flush=True)
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if token_file:
        try:
            token = read_token_file(token_file)
        except ValueError as exc:
            err(f"--token-file {token_file}: {exc}")
            return EXIT_BAD_INPUT
    if not is_loopback(host) and not token:
        err(f"--listen {host} exposes the dashboard beyond this machine: give an access token "
            f"with --token-file FILE or the environment variable {TOKEN_ENV} (or keep the "
            f"default --listen {DEFAULT_HOST} and put a reverse proxy in front)")
        return EXIT_BAD_INPUT
    if token is not None and len(token) < 8:
        err("the access token must have at least 8 characters")
        return EXIT_BAD_INPUT
    return token


def allowed_hosts(listen: str, given: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The names the dashboard answers to besides localhost: the --listen address, those
    given (--allowed-host), and, listening on every address (0.0.0.0, ::), this machine's
    names and the addresses of its interfaces."""
    names = [*given]
    if listen in ("0.0.0.0", "::", ""):
        names += [socket.gethostname(), socket.getfqdn()]
        with contextlib.suppress(ImportError, OSError):
            import psutil

            names += [a.address.split("%")[0] for addrs in psutil.net_if_addrs().values()
                      for a in addrs if a.family in (socket.AF_INET, socket.AF_INET6)]
    else:
        names.append(listen)
    return tuple(dict.fromkeys(n for n in names if n))


def cli_serve(config: Config, args: argparse.Namespace) -> int:
    """`swiss-runner serve`: 0 after a clean stop; 2 bad options, tokens or address."""
    try:
        host, port = listen_address(args)
    except ValueError as exc:
        err(str(exc))
        return EXIT_BAD_INPUT
    token = access_token(args, host)
    if isinstance(token, int):
        return token
    admin = admin_tokens(args, token)
    if isinstance(admin, int):
        return admin
    if not 0 <= port <= 65535:
        err(f"--port {port}: not a TCP port (0-65535)")
        return EXIT_BAD_INPUT
    for proxy in args.trusted_proxy or ():
        try:
            ipaddress.ip_address(proxy)
        except ValueError:
            err(f"--trusted-proxy {printable(proxy)!r}: expected the proxy's IP address, as "
                "its connections come from (e.g. 127.0.0.1)")
            return EXIT_BAD_INPUT
    if not 0 <= args.nice <= 19:
        err(f"--nice {args.nice}: expected 0 (the priority it was started with) to 19")
        return EXIT_BAD_INPUT
    if args.max_connections < 1:
        err(f"--max-connections {args.max_connections}: expected 1 or more")
        return EXIT_BAD_INPUT
    if not 0 < args.client_timeout <= 3600:
        err(f"--client-timeout {args.client_timeout:g}: expected seconds, more than 0 and "
            "at most 3600")
        return EXIT_BAD_INPUT
    from runner.play.eventloop import LoopChoiceError, loop_choice

    try:
        loop_choice()
    except LoopChoiceError as exc:
        err(str(exc))
        return EXIT_BAD_INPUT
    try:
        import uvicorn  # noqa: F401 - the web extra is there

        from runner.web.app import create_app
        from runner.web.server import Connections, make_server, open_files_for
        from runner.web.shield import Limits
    except ImportError as exc:
        err(f"the dashboard needs the web extra ({exc.name} is missing): "
            f"{missing_extra('web')}")
        return EXIT_BAD_INPUT
    try:
        sock = bind(host, port)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        hint = " (another program uses it: choose another port: --listen HOST:PORT, or --port)" \
            if getattr(exc, "errno", None) == 98 else ""
        err(f"cannot listen on {host}:{port}: {reason}{hint}")
        return EXIT_BAD_INPUT
    if args.nice:  # the event first: engines and runner win the CPU from the viewers
        with contextlib.suppress(OSError):
            os.nice(args.nice)
    actual = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{actual}/"
    print(f"Dashboard of {config.path.name} at {url} ("
          + (f"the TD's actions at admin, for {', '.join(sorted(admin))}" if admin
             else "read-only")
          + "; Ctrl-C stops it)" + ("; access token required" if token else ""), flush=True)
    most = args.max_connections
    files = open_files_for(most)
    if files < most + 32:
        print(f"warning: --max-connections {most}: this process may open only {files} files "
              f"(ulimit -n); connections past about {max(files - 32, 0)} will fail",
              file=sys.stderr, flush=True)
    connections = Connections(max_connections=most, idle_s=args.client_timeout)
    app = create_app(config, token=token, secure_cookie=getattr(args, "secure_cookie", False),
                     trusted_proxies=tuple(args.trusted_proxy or ()),
                     allowed_hosts=allowed_hosts(host, args.allowed_host or ()),
                     limits=Limits(max_streams=most), connections=connections,
                     admin_tokens=admin)
    # open event streams end at once on Ctrl-C, so shutdown does not wait on them
    server = make_server(app, connections, loop=loop_choice(),
                         on_exit=app.state.hub.close_streams)
    # uvicorn handles SIGINT/SIGTERM while it runs (a clean shutdown), then passes the signal
    # on to the handler it found: SIGTERM then ends the command normally too
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # Ctrl-C passed on after the clean shutdown
        pass
    finally:
        sock.close()
    print("Dashboard stopped.", flush=True)
    sys.stdout.flush()
    return EXIT_OK
