"""Telegram through the operator's bot in the web app (issue 28, web/telegram-connect.js) in Chromium: "Add
channel" → Telegram offers a connect code with the bot's add links and the /connect message to send, above the
pasted-token form; `/connect <code>` in the chat (the fake Bot API) adds the channel. Without the operator's bot
it says to use one's own bot, whose form stays."""
from __future__ import annotations

import re

import pytest

from conftest import LOCAL_FAKES
from fakes.telegram import FakeTelegram
from test_web import browser, expect  # noqa: F401 (and skips here too where it cannot run)
from test_web_channels import serious_axe_violations, shoot
from test_web_pages import open_page, show, sideways_overflow  # noqa: F401
from support import API, api, wait_for


@pytest.fixture
def telegram():
    fake = FakeTelegram()
    yield fake
    fake.close()


def open_telegram(page):
    show(page, "#/channels")
    page.get_by_role("button", name="Add channel").first.click()
    dialog = page.get_by_role("dialog", name="Add channel")
    dialog.get_by_label("Search platforms").fill("tele")
    dialog.locator("button.provider[data-provider=telegram]").click()
    return dialog


@pytest.mark.parametrize("width,scheme", ((1440, "light"), (390, "dark")))
def test_a_connect_code_to_send_in_the_chat_adds_the_channel(start_server, open_page, telegram, width, scheme):
    server = start_server(env={**LOCAL_FAKES, **telegram.env, "TELEGRAM_TOKEN": telegram.token,
                               "TELEGRAM_BOT_NAME": "rustiz_bot", "RUSTIZ_TELEGRAM_POLL_SECONDS": "1",
                               "RUSTIZ_TELEGRAM_IDLE_SECONDS": "0.2"})
    page = open_page(server, width, scheme)
    dialog = open_telegram(page)
    dialog.get_by_role("button", name="Get a connect code").click()
    command = dialog.locator("code.connect-command")
    expect(command).to_have_text(re.compile(r"^/connect [A-Za-z0-9]{16}$"))
    expect(dialog.get_by_role("link", name="add to a channel")).to_have_attribute(
        "href", "https://t.me/rustiz_bot?startchannel=true&admin=post_messages+delete_messages")
    expect(dialog.get_by_label("Bot token")).to_be_visible()  # one's own bot stays possible
    shoot(page, f"telegram-connect-{width}-{scheme}")
    assert sideways_overflow(page) <= 0
    assert serious_axe_violations(page) == []
    telegram.command(command.inner_text())
    wait_for(lambda: api(server, "GET", f"{API}/integrations")[1], bool)
    dialog.get_by_role("button", name="Show my channels").click()
    expect(page.locator(".channel-list")).to_contain_text("Rustiz News")
    assert page.problems == []


def test_without_the_operators_bot_it_points_to_ones_own_bot(start_server, open_page, telegram):
    server = start_server(env={**LOCAL_FAKES, **telegram.env})
    page = open_page(server, 1440, "light")
    dialog = open_telegram(page)
    dialog.get_by_role("button", name="Get a connect code").click()
    expect(dialog.locator(".telegram-connect .errors")).to_contain_text("This server has no Telegram bot")
    expect(dialog.get_by_label("Bot token")).to_be_visible()
    assert [problem for problem in page.problems if "400" not in problem] == []
