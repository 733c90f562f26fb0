"""The composer's look-alike previews (web/previews.js) in a real browser: a preview for EVERY provider
identifier GET /public/v1/providers lists renders without error (a default look covers any provider without
its own), links, hashtags and mentions are styled in an accent colour that keeps AA contrast in light and dark,
a thread shows as replies, media as the platform crops it; and axe-core finds no serious or critical problem
on the composer at 1440 and 390 px, light and dark."""
from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from support import API, Database, api, png_file
from test_web import CHROMIUM, browser, open_page, sign_in  # noqa: F401  (fixtures shared with the web tests)
from playwright.sync_api import expect

assert CHROMIUM
SHOTS = Path(os.environ.get("RUSTIZ_COMPOSER_SHOTS", "/tmp/shots-composer"))
AXE = Path("/work/wt-ci/.venv/lib/python3.11/site-packages/axe_playwright_python/axe.min.js")
try:
    import axe_playwright_python
    AXE = Path(axe_playwright_python.__file__).parent / "axe.min.js"
except ImportError:  # pragma: no cover
    pass
PNG = base64.b64encode(png_file(160, 90, pixel=bytes((16, 185, 129)))).decode()


@pytest.fixture(scope="module")
def server(start_module_server):
    return start_module_server()


GALLERY = """async ([providers, picture]) => {
    const { preview, lookOf } = await import('/web/previews.js');
    const box = document.createElement('div');
    Object.assign(box.style, { display: 'grid', gap: '1rem', alignItems: 'start', gridTemplateColumns: 'repeat(auto-fill, minmax(min(22rem, 100%), 1fr))' });
    document.getElementById('main').replaceChildren(box);
    const results = [];
    for (const [i, p] of providers.entries()) {
        const channel = { id: 'c' + i, name: p.name + ' channel', identifier: p.identifier, profile: 'handle' + i };
        const media = i % 4 === 0 ? [] : Array.from({ length: 1 + (i % 4) }, () => ({ path: picture, alt: 'a green picture' }));
        const parts = [{ text: 'Launch day! Read https://example.com/a/very/long/path/to/the/notes #rustiz @friend.\\nSecond line', media },
                       { text: 'And a reply', media: [] }];
        const article = preview(channel, parts, p.name);
        box.append(article);
        results.push({ identifier: p.identifier, look: lookOf(p.identifier), cls: article.className, text: article.innerText,
                       tag: article.querySelector('.pv-tag')?.textContent, mention: article.querySelector('.pv-mention')?.textContent, replies: article.querySelectorAll('.preview-part.reply').length });
    }
    return results;
}"""

CONTRAST = """() => {
    const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
    const lum = (c) => { const [r, g, b] = rgb(c).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
    const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
    return [...document.querySelectorAll('article.preview')].map((a) => {
        const bg = getComputedStyle(a).backgroundColor;
        const accent = a.querySelector('.pv-tag');
        return [a.dataset.look, ratio(getComputedStyle(accent).color, bg), ratio(getComputedStyle(a.querySelector('.pv-handle, .pv-when, .pv-platform')).color, bg)];
    });
}"""


def upload_picture(page) -> str:
    return page.evaluate("""async (data) => {
        const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
        const form = new FormData(); form.append('file', new File([bytes], 'green.png', { type: 'image/png' }));
        const { session } = await import('/web/util.js');
        const answer = await fetch('/public/v1/upload', { method: 'POST', body: form, headers: { 'X-CSRF-Token': session.csrfToken } });
        return (await answer.json()).path;
    }""", PNG)


@pytest.mark.parametrize("width,scheme", [(1440, "light"), (1440, "dark"), (390, "light"), (390, "dark")])
def test_every_provider_has_a_preview_with_accessible_accents(server, open_page, width, scheme):
    providers = api(server, "GET", f"{API}/providers")[1]
    assert len(providers) >= 30
    page = open_page(server, width=width, height=900)
    page.emulate_media(color_scheme=scheme)
    sign_in(page, server)
    picture = upload_picture(page)
    results = page.evaluate(GALLERY, [[{"identifier": p["identifier"], "name": p["name"]} for p in providers], picture])
    assert [r["identifier"] for r in results] == [p["identifier"] for p in providers]
    for result in results:
        assert f"pv-{result['look']}" in result["cls"], result
        assert result["tag"] == "#rustiz" and result["mention"] == "@friend", result  # (not the full stop after it)
        assert result["replies"] == 1, result
        assert "Launch day!" in result["text"] and "undefined" not in result["text"] and "null" not in result["text"], result
    looks = {r["look"] for r in results}
    assert {"x", "instagram", "linkedin", "facebook", "bluesky", "mastodon", "threads", "tiktok", "youtube", "pinterest",
            "reddit", "chat", "blog", "card"} <= looks
    for look, accent, muted in page.evaluate(CONTRAST):
        assert accent >= 4.5 and muted >= 4.5, (look, accent, muted, scheme)
    # Instagram crops to a square carousel, X to a 16:9 grid of up to four, TikTok to a tall video frame.
    ratio = "e => { const r = e.getBoundingClientRect(); return Math.round(100 * r.width / r.height) / 100; }"
    assert page.locator(".pv-instagram .pv-carousel").first.evaluate(ratio) == 1
    assert abs(page.locator(".pv-x .pv-grid").first.evaluate(ratio) - 16 / 9) < 0.03
    assert page.locator(".pv-tiktok .pv-video").first.evaluate(ratio) < 0.6
    page.wait_for_timeout(200)  # pictures decoded
    assert page.locator("img").evaluate_all("imgs => imgs.filter((i) => i.complete && !i.naturalWidth).length") == 0
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"previews-{width}-{scheme}.png"), full_page=True)
    page.set_viewport_size({"width": 360, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.fixture(scope="module")
def axe_channels(server):
    db = Database(server)
    return [db.channel(name, provider, profile=name.replace(" ", "")) for name, provider in
            (("Axe sky", "bluesky"), ("Axe gram", "instagram-standalone"))]


@pytest.mark.parametrize("width,scheme", [(1440, "light"), (390, "dark")])
def test_axe_finds_no_serious_problem_on_the_composer(server, axe_channels, open_page, width, scheme):
    if not AXE.exists():
        pytest.skip("axe-core (axe-playwright-python) is not installed")
    page = open_page(server, width=width, height=900)
    page.emulate_media(color_scheme=scheme)
    sign_in(page, server)
    page.goto("/#/compose")
    page.get_by_role("checkbox", name="Axe sky").check()
    page.get_by_role("checkbox", name="Axe gram").check()
    page.get_by_label("Post", exact=True).fill("x" * 320 + " #tag")  # over Bluesky's limit: the bar and its fixes show
    page.get_by_role("button", name="+ Add thread part").click()
    page.get_by_role("button", name="Emoji").first.click()
    expect(page.locator(".bar-reason")).to_contain_text("Too long")
    for where in ("global", "channel"):
        if where == "channel":
            page.get_by_role("tab", name="Axe sky").click()
            page.get_by_role("tabpanel").get_by_role("button", name="Customize for Axe sky").click()
        page.evaluate(AXE.read_text() + ";0")  # (through the devtools protocol: the page's policy allows no inline script)
        found = page.evaluate("async () => (await axe.run(document, { resultTypes: ['violations'] })).violations"
                              ".filter((v) => ['serious', 'critical'].includes(v.impact)).map((v) => [v.id, v.nodes.map((n) => n.target.join(' '))])")
        assert found == [], found
