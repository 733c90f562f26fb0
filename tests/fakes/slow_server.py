"""A server whose every answer is endless, each wait in it short: `opening`, then `line` every `interval`
seconds for `seconds` (a head sent a header line at a time, endless `100 Continue` answers, trailers...).
Requests for which `quick(request)` returns bytes get those bytes at once instead (a webhook's ping)."""
from __future__ import annotations

import socket
import threading
from typing import Callable, Optional


class SlowServer:
    def __init__(self, opening: bytes, line: bytes, interval: float = 0.3, seconds: float = 15.0,
                 quick: Optional[Callable[[bytes], Optional[bytes]]] = None):
        self.opening, self.line, self.interval, self.seconds, self.quick = opening, line, interval, seconds, quick
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.stopping = threading.Event()
        self.requests: list = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    @staticmethod
    def _request(connection: socket.socket) -> bytes:
        """The request's head and its Content-Length body."""
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = connection.recv(65536)
            if not chunk:
                return data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            chunk = connection.recv(65536)
            if not chunk:
                break
            body += chunk
        return head + b"\r\n\r\n" + body

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            try:
                request = self._request(connection)
                self.requests.append(request)
                quick = self.quick(request) if self.quick is not None else None
                if quick is not None:
                    connection.sendall(quick)
                    return
                connection.sendall(self.opening)
                for _ in range(int(self.seconds / self.interval)):
                    if self.stopping.wait(self.interval):
                        return
                    connection.sendall(self.line)
            except OSError:
                return

    def close(self) -> None:
        self.stopping.set()
        self.listener.close()
