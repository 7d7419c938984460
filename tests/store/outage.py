"""A store that goes away in the middle of an operation: a loopback TCP relay in front of
the S3 server. Armed with a pattern, it forwards bytes unchanged until a request that
matches it (its request line: method and path), then drops every connection and stops
listening, as a store that went down at that moment; `restore` listens again on the same
port, as the store coming back."""

from __future__ import annotations

import contextlib
import re
import socket
import threading

CARRY = 512  # bytes of a chunk kept to find a request line split across two reads


class StoreOutage:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._down = False  # under the lock: taken down, and not restored since
        self._trigger: re.Pattern[bytes] | None = None
        self.went_down = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._serve(self._listener)

    def arm(self, pattern: bytes) -> None:
        """Go down at the first request whose bytes match `pattern`."""
        self._trigger = re.compile(pattern)
        self.went_down.clear()

    def restore(self) -> None:
        """Listen again, unarmed."""
        self._trigger = None
        with self._lock:
            self._down = False
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._serve(self._listener)

    def close(self) -> None:
        self._take_down()

    def _serve(self, listener: socket.socket) -> None:
        def accept() -> None:
            while True:
                try:
                    client, _ = listener.accept()
                except OSError:
                    return  # taken down
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
                with self._lock:
                    down = self._down  # accepted just before the listener closed
                    if not down:
                        self._sockets |= {client, upstream}
                if down:
                    for end in (client, upstream):
                        self._drop(end)
                    return
                threading.Thread(
                    target=self._pump, args=(client, upstream, True), daemon=True
                ).start()
                threading.Thread(
                    target=self._pump, args=(upstream, client, False), daemon=True
                ).start()

        threading.Thread(target=accept, daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, requests: bool) -> None:
        tail = b""
        try:
            while chunk := source.recv(65536):
                seen = tail + chunk
                if requests and self._trigger is not None and self._trigger.search(seen):
                    self._take_down()
                    return
                target.sendall(chunk)
                tail = seen[-CARRY:]
        except OSError:
            pass
        finally:
            for end in (source, target):
                self._drop(end)

    def _take_down(self) -> None:
        self.went_down.set()
        self._trigger = None
        self._drop(self._listener)  # shut down first: an accept() under way returns now
        with self._lock:
            self._down = True
            ends, self._sockets = list(self._sockets), set()
        for end in ends:
            self._drop(end)

    @staticmethod
    def _drop(end: socket.socket) -> None:
        with contextlib.suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)
        end.close()
