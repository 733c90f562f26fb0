"""Python's floor for the main table: an asyncio Protocol on the same interpreter as rustiz that answers every
request head with fixed bytes (`[]`, or `ok` for GET /health, which bench's launch check asks): no parsing
beyond finding the heads, no key, no database. What rustiz does per request is measured against it.

Usage: python3 floor_server.py PORT (standard library only)."""
import asyncio
import sys

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n[]"
HEALTH = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"


class Floor(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        for head in data.split(b"\r\n\r\n")[:-1]:
            self.transport.write(HEALTH if head.startswith(b"GET /health ") else ANSWER)


async def serve(port: int) -> None:
    server = await asyncio.get_running_loop().create_server(Floor, "127.0.0.1", port)
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1])))
