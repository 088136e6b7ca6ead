"""`swiss-runner serve CONFIG [--host H] [--port P] [--token T]`: the live web dashboard.

A separate, read-only process: it never writes the event's state, so it can be started and
stopped at any time, before, during and after `run`. It binds 127.0.0.1 unless told
otherwise; bound to any other address it requires an access token (``--token`` or the
environment variable SWISS_RUNNER_TOKEN).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys

from runner.cli.common import err
from runner.config import Config
from runner.errors import EXIT_BAD_INPUT, EXIT_OK
from runner.net import is_loopback

TOKEN_ENV = "SWISS_RUNNER_TOKEN"
ADMIN_TOKEN_ENV = "SWISS_RUNNER_ADMIN_TOKEN"


def admin_token(args: argparse.Namespace, token: str | None) -> str | None | int:
    """The TD's admin token (None: the actions are off), or an exit code after saying why."""
    path = getattr(args, "admin_token_file", None)
    if path:
        try:
            admin = read_token_file(path)
        except ValueError as exc:
            err(f"--admin-token-file {path}: {exc} (expected the admin token on its first line)")
            return EXIT_BAD_INPUT
        where = f"--admin-token-file {path}"
    else:
        admin = os.environ.get(ADMIN_TOKEN_ENV) or ""
        where = f"${ADMIN_TOKEN_ENV}"
        if not admin:
            return None
    if len(admin) < 12:
        err(f"{where}: the admin token must have at least 12 characters")
        return EXIT_BAD_INPUT
    if token is not None and admin == token:
        err(f"{where}: the admin token must differ from the read-only access token (--token)")
        return EXIT_BAD_INPUT
    return admin


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
        sock.listen(128)
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


def cli_serve(config: Config, args: argparse.Namespace) -> int:
    host: str = args.host
    port: int = args.port
    token_file = getattr(args, "token_file", None)
    if args.token and token_file:
        err("--token and --token-file: give one of them")
        return EXIT_BAD_INPUT
    if args.token and not is_loopback(host):
        err(f"--token on the command line is readable by every user of this machine "
            f"(/proc/PID/cmdline, ps) and --host {host} exposes the dashboard beyond it: give "
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
        err(f"--host {host} exposes the dashboard beyond this machine: give an access token "
            f"with --token-file FILE or the environment variable {TOKEN_ENV} (or keep the "
            "default --host 127.0.0.1 and put a reverse proxy in front)")
        return EXIT_BAD_INPUT
    if token is not None and len(token) < 8:
        err("the access token must have at least 8 characters")
        return EXIT_BAD_INPUT
    admin = admin_token(args, token)
    if isinstance(admin, int):
        return admin
    if not 0 <= port <= 65535:
        err(f"--port {port}: not a TCP port (0-65535)")
        return EXIT_BAD_INPUT
    from runner.play.eventloop import LoopChoiceError, loop_choice

    try:
        loop_choice()
    except LoopChoiceError as exc:
        err(str(exc))
        return EXIT_BAD_INPUT
    try:
        import uvicorn

        from runner.web.app import DEFAULT_TRUSTED_PROXIES, create_app
    except ImportError as exc:
        err(f"the dashboard needs the web extra ({exc.name} is missing): "
            "pip install 'swiss-runner[web]' (scripts/install.sh installs it)")
        return EXIT_BAD_INPUT
    try:
        sock = bind(host, port)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        hint = " (another program uses it: choose another with --port)" \
            if getattr(exc, "errno", None) == 98 else ""
        err(f"cannot listen on {host}:{port}: {reason}{hint}")
        return EXIT_BAD_INPUT
    actual = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{actual}/"
    print(f"Dashboard of {config.path.name} at {url} ("
          + ("the TD's actions at admin, behind the admin token" if admin else "read-only")
          + "; Ctrl-C stops it)" + ("; access token required" if token else ""), flush=True)
    app = create_app(config, token=token, secure_cookie=getattr(args, "secure_cookie", False),
                     trusted_proxies=tuple(getattr(args, "trusted_proxy", None)
                                           or DEFAULT_TRUSTED_PROXIES),
                     admin_token=admin)
    hub = app.state.hub

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: object) -> None:
            hub.close_streams()  # open event streams end, so shutdown does not wait on them
            super().handle_exit(sig, frame)  # type: ignore[arg-type]

    server = Server(uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", loop=loop_choice(),
        timeout_graceful_shutdown=2, proxy_headers=False))
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
