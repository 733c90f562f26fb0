"""A local feed server for autopost's tests: RSS 2.0, RSS 1.0 and Atom documents, hostile ones (billion laughs,
an external entity, a 50 MB feed streamed a piece at a time, never held in memory), a feed the test changes
between fetches with ETag / Last-Modified and 304 answers, an article page with an og:image, and a failing feed.

    server = FeedServer(); server.url("/changing"); server.items = [...]; server.close()
"""
from __future__ import annotations

import threading
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape

RSS2 = """<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/" xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel><title>Shop news</title><link>https://shop.example.com/</link><description>News</description>
<item><title>Spring sale &amp; more</title><link>https://shop.example.com/spring</link>
<guid isPermaLink="false">spring-1</guid><description>&lt;p&gt;Everything &lt;b&gt;half&lt;/b&gt; price.&lt;/p&gt;</description>
<pubDate>Tue, 03 Mar 2026 10:00:00 +0100</pubDate><dc:creator>Ana</dc:creator>
<enclosure url="https://shop.example.com/spring.jpg" type="image/jpeg" length="1000"/></item>
<item><title>Winter closing</title><link>https://shop.example.com/winter</link>
<description>We close for a week.</description><pubDate>Mon, 02 Feb 2026 09:00:00 GMT</pubDate>
<media:thumbnail url="https://shop.example.com/winter.png"/></item>
</channel></rss>
"""

RSS1 = """<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"
         xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel rdf:about="https://blog.example.org/"><title>Blog</title><link>https://blog.example.org/</link>
<description>A blog</description></channel>
<item rdf:about="https://blog.example.org/one"><title>First post</title><link>https://blog.example.org/one</link>
<description>Hello from RDF</description><dc:date>2026-01-05T08:30:00Z</dc:date><dc:creator>Bo</dc:creator></item>
</rdf:RDF>
"""

ATOM = """<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:media="http://search.yahoo.com/mrss/">
<title>Atom news</title><id>urn:uuid:feed</id><updated>2026-04-01T12:00:00Z</updated>
<entry><title type="html">&lt;em&gt;Release&lt;/em&gt; 2.0</title><id>urn:uuid:release-2</id>
<link rel="alternate" href="https://atom.example.net/release-2"/><updated>2026-04-01T12:00:00Z</updated>
<summary>Faster and smaller.</summary><author><name>Cy</name></author>
<media:content url="https://atom.example.net/r2.webp" medium="image"/></entry>
<entry><title>Release 1.0</title><id>urn:uuid:release-1</id><link href="https://atom.example.net/release-1"/>
<published>2025-12-01T12:00:00+02:00</published><content type="html">&lt;p&gt;First!&lt;/p&gt;</content></entry>
</feed>
"""

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]>
<rss version="2.0"><channel><item><title>&lol9;</title><guid>x</guid></item></channel></rss>
"""

EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE rss [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<rss version="2.0"><channel><item><title>&secret;</title><guid>y</guid></item></channel></rss>
"""

UNDECLARED_ENTITY = """<?xml version="1.0"?>
<rss version="2.0"><channel><item><title>&secret;</title><guid>z</guid></item></channel></rss>
"""

HUGE_BYTES = 50 * 1024 * 1024


def rss_document(items: list) -> str:
    """An RSS 2.0 document of `items`: dicts with guid, title, and optionally link, description, image."""
    parts = []
    for item in items:
        image = f'<enclosure url="{escape(item["image"])}" type="image/png"/>' if item.get("image") else ""
        parts.append(f"<item><title>{escape(item['title'])}</title><guid>{escape(item['guid'])}</guid>"
                     f"<link>{escape(item.get('link', 'https://example.com/' + item['guid']))}</link>"
                     f"<description>{escape(item.get('description', ''))}</description>{image}</item>")
    return (f'<?xml version="1.0"?><rss version="2.0"><channel><title>Changing</title>'
            f'{"".join(parts)}</channel></rss>')


class FeedServer:
    def __init__(self):
        self.items: list = [{"guid": "old-1", "title": "Old one"}, {"guid": "old-2", "title": "Old two"}]
        self.version = 1  # ETag of the changing feed: bump it with the items (change())
        self.requests: list = []  # (path, If-None-Match, If-Modified-Since)
        self.failing_status = 500
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                with server.lock:
                    server.requests.append((self.path, self.headers.get("If-None-Match"),
                                            self.headers.get("If-Modified-Since")))
                server.serve(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def change(self, items: list) -> None:
        with self.lock:
            self.items, self.version = items, self.version + 1

    def fetches(self, path: str) -> list:
        with self.lock:
            return [request for request in self.requests if request[0] == path]

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path.split("?")[0]
        fixed = {"/rss2": RSS2, "/rss1": RSS1, "/atom": ATOM, "/laughs": BILLION_LAUGHS, "/xxe": EXTERNAL_ENTITY,
                 "/undeclared": UNDECLARED_ENTITY, "/html": "<!DOCTYPE html><html><body>Hi</body></html>"}
        if path in fixed:
            return self.send(handler, 200, fixed[path].encode(), "application/rss+xml")
        if path == "/changing":
            return self.changing(handler)
        if path == "/huge":
            return self.huge(handler)
        if path.startswith("/article/"):
            page = f'<html><head><meta property="og:image" content="{self.url("/og.png")}"></head></html>'
            return self.send(handler, 200, page.encode(), "text/html")
        if path == "/og.png":
            from support import png_file
            return self.send(handler, 200, png_file(), "image/png")
        if path == "/failing":
            return self.send(handler, self.failing_status, b"down", "text/plain")
        return self.send(handler, 404, b"not found", "text/plain")

    def changing(self, handler: BaseHTTPRequestHandler) -> None:
        with self.lock:
            etag, items = f'"v{self.version}"', list(self.items)
        modified = formatdate(1_700_000_000 + self.version * 60, usegmt=True)
        if handler.headers.get("If-None-Match") == etag:
            handler.send_response(304)
            handler.send_header("ETag", etag)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        self.send(handler, 200, rss_document(items).encode(), "application/rss+xml",
                  {"ETag": etag, "Last-Modified": modified})

    @staticmethod
    def huge(handler: BaseHTTPRequestHandler) -> None:
        """50 MB of one RSS document, written a megabyte at a time (never whole in memory)."""
        head = b'<?xml version="1.0"?><rss version="2.0"><channel>'
        handler.send_response(200)
        handler.send_header("Content-Type", "application/rss+xml")
        handler.send_header("Content-Length", str(HUGE_BYTES))
        handler.end_headers()
        piece = b"<item><title>x</title><guid>g</guid></item>" * (1024 * 1024 // 44)
        try:
            handler.wfile.write(head)
            sent = len(head)
            while sent < HUGE_BYTES:
                chunk = piece[:HUGE_BYTES - sent]
                handler.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            pass  # rustiz stopped reading at its bound and closed the connection

    @staticmethod
    def send(handler: BaseHTTPRequestHandler, status: int, body: bytes, kind: str, headers: dict | None = None) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
