"""A TCP proxy on 127.0.0.1 for network fault tests: it forwards each connection to a target
port, and can add a delay each way, stall some writes, or black-hole everything (hold it,
close nothing: the connections stay open and carry nothing) until it forwards again."""

from __future__ import annotations

import contextlib
import queue
import random
import socket
import threading
import time


class LinkProxy:
    """``127.0.0.1:port`` -> ``127.0.0.1:target``: ``delay_s`` added to every chunk in each
    direction, ``stall_p`` of the writes held ``stall_s`` more; :meth:`cut` stops forwarding
    (a black hole), :meth:`heal` forwards what was held and the rest."""

    def __init__(self, target: int, *, delay_s: float = 0.0, stall_p: float = 0.0,
                 stall_s: float = 1.0, seed: int = 48) -> None:
        self.target = target
        self.delay_s = delay_s
        self.stall_p = stall_p
        self.stall_s = stall_s
        self.rng = random.Random(seed)
        self.flowing = threading.Event()
        self.flowing.set()
        self.writes = 0
        self.stalls = 0
        self.closed = False
        self.sockets: list[socket.socket] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.server.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        self.flowing.clear()

    def heal(self) -> None:
        self.flowing.set()

    def close(self) -> None:
        self.closed = True
        self.flowing.set()
        for sock in [self.server, *self.sockets]:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self.closed:
            try:
                near, _ = self.server.accept()
                far = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                if self.closed:
                    return
                continue
            self.sockets += [near, far]
            for src, dst in ((near, far), (far, near)):
                chunks: queue.Queue[tuple[float, bytes] | None] = queue.Queue()
                threading.Thread(target=self._read, args=(src, chunks), daemon=True).start()
                threading.Thread(target=self._write, args=(dst, chunks), daemon=True).start()

    def _read(self, src: socket.socket, chunks: queue.Queue[tuple[float, bytes] | None]) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                chunks.put(None)
                return
            chunks.put((time.monotonic(), data))

    def _write(self, dst: socket.socket, chunks: queue.Queue[tuple[float, bytes] | None]) -> None:
        while True:
            item = chunks.get()
            if item is None:
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)
                return
            read_at, data = item
            wait = read_at + self.delay_s - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            self.flowing.wait()  # a black hole: held, not closed
            self.writes += 1
            if self.stall_p and self.rng.random() < self.stall_p:
                self.stalls += 1
                time.sleep(self.stall_s)
            try:
                dst.sendall(data)
            except OSError:
                return
