"""The queue (issue 26): weekly posting schedules, posts added with type "queue", GET /queue, reorder, re-flow,
pause, a full queue, several processes adding at once, and evergreen posts queued again."""
from __future__ import annotations

import datetime
import json
import threading
import time

import pytest

from support import Database, api, mcp_tool_call

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@pytest.fixture
def server(standby_server):
    """The scheduler stands by: queued posts stay queued whatever a test writes."""
    return standby_server


def week(**days) -> dict:
    return {day: days.get(day, []) for day in DAYS}


def queued(server, channel: str, text: str, key=None, **extra) -> tuple:
    return api(server, "POST", "/public/v1/posts", {
        "type": "queue", "shortLink": False, "tags": [], **extra,
        "posts": [{"integration": {"id": channel}, "value": [{"content": text, "image": []}]}]}, key=key)


def queue_of(server, channel: str, days: int = 14) -> dict:
    status, answer = api(server, "GET", f"/public/v1/queue?integration={channel}&days={days}")
    assert status == 200, answer
    return answer


def filled(answer: dict) -> list:
    return [(slot["date"], slot["post"]["content"]) for slot in answer["slots"] if slot["post"]]


def every_day(*times: str) -> dict:
    return {day: list(times) for day in DAYS}


# --- the weekly schedule ---------------------------------------------------------------------------------------

def test_a_channel_without_a_weekly_schedule_shows_its_daily_times_and_takes_one(server):
    db = Database(server)
    channel = db.channel("Sky", "bluesky")
    assert api(server, "GET", f"/public/v1/integrations/{channel}/schedule") == (200, {
        **every_day("02:00", "06:40", "11:40"), "weekly": False})
    schedule = week(monday=["12:30", "09:00", "09:00"], friday=["23:59"])
    assert api(server, "PUT", f"/public/v1/integrations/{channel}/schedule", schedule) == (200, {
        **week(monday=["09:00", "12:30"], friday=["23:59"]), "weekly": True})
    assert api(server, "GET", f"/public/v1/integrations/{channel}/schedule")[1]["monday"] == ["09:00", "12:30"]
    status, slot = api(server, "GET", f"/public/v1/find-slot/{channel}")
    assert status == 200 and slot["localDate"][11:16] in ("09:00", "12:30", "23:59")
    assert api(server, "GET", f"/public/v1/integrations/{channel}/free-slot") == (200, slot)
    weekday = datetime.date.fromisoformat(slot["localDate"][:10]).weekday()
    assert (weekday, slot["localDate"][11:16]) in ((0, "09:00"), (0, "12:30"), (4, "23:59"))


def test_hostile_schedules_are_400_naming_the_problem_and_other_organizations_channels_404(server):
    db = Database(server)
    channel = db.channel("Sky", "bluesky")
    other_org, other_key = db.organization()
    theirs = db.channel("Theirs", "bluesky", organization_id=other_org)
    path = f"/public/v1/integrations/{channel}/schedule"

    def refused(body) -> list:
        status, answer = api(server, "PUT", path, body)
        assert status == 400, answer
        return answer["message"]

    assert refused(week(monday=["25:00"])) == ['monday: "25:00" is not a time "HH:MM" from 00:00 to 23:59']
    assert refused(week(monday=["9:00"]))[0].startswith("monday: ")
    assert refused({**week(), "someday": []}) == [
        "property someday should not exist (the days are monday, tuesday, wednesday, thursday, friday, saturday, "
        "sunday)"]
    assert refused({"monday": []})[0] == "tuesday is missing: give all seven days, [] for a day without posts"
    many = [f"{minute // 60:02d}:{minute % 60:02d}" for minute in range(0, 1000)]
    assert refused(week(monday=many)) == ["monday has 1000 times; at most 24 a day"]
    assert refused(week(monday=many * 2)) == ['monday must be a list of local times "HH:MM" (at most 24)']
    assert refused(week(monday="09:00")) == ['monday must be a list of local times "HH:MM" (at most 24)']
    assert refused(week(monday=[900])) == ['monday: 900 is not a time "HH:MM" from 00:00 to 23:59']
    status, answer = api(server, "PUT", path, b"[1, 2]")
    assert status == 400
    for method, route, body in (("GET", f"/public/v1/integrations/{theirs}/schedule", None),
                                ("PUT", f"/public/v1/integrations/{theirs}/schedule", week()),
                                ("PUT", f"/public/v1/integrations/{theirs}/queue", {"paused": True}),
                                ("GET", f"/public/v1/queue?integration={theirs}", None),
                                ("POST", "/public/v1/queue/reorder", {"integration": theirs, "postIds": []})):
        assert api(server, method, route, body)[0] == 404, route
    assert api(server, "GET", f"/public/v1/integrations/{channel}/schedule", key=other_key)[0] == 404
    assert api(server, "GET", f"/public/v1/integrations/{theirs}/schedule", key=other_key)[0] == 200


def test_the_organization_default_is_what_channels_connected_later_start_with(server):
    db = Database(server)
    before = db.channel("Before", "bluesky")
    default = week(tuesday=["08:15"])
    status, answer = api(server, "PUT", "/public/v1/organization", {"postingSchedule": default})
    assert status == 200 and answer["postingSchedule"] == default
    assert api(server, "GET", "/public/v1/organization")[1]["postingSchedule"] == default
    later = db.channel("Later", "bluesky")
    db.execute("UPDATE integration SET created_at = ? WHERE id = ?", "2999-01-01T00:00:00.000Z", later)
    assert api(server, "GET", f"/public/v1/integrations/{later}/schedule")[1] == {**default, "weekly": True}
    assert api(server, "GET", f"/public/v1/integrations/{before}/schedule")[1]["weekly"] is False
    # A new default: the channel that started with the old one keeps it.
    assert api(server, "PUT", "/public/v1/organization", {"postingSchedule": None})[1]["postingSchedule"] is None
    assert api(server, "GET", f"/public/v1/integrations/{later}/schedule")[1] == {**default, "weekly": True}
    status, answer = api(server, "PUT", "/public/v1/organization", {"postingSchedule": week(monday=["24:00"])})
    assert status == 400 and answer["message"] == ['postingSchedule.monday: "24:00" is not a time "HH:MM" from 00:00 '
                                                   'to 23:59']


def test_weekday_slots_keep_their_local_times_across_a_daylight_saving_change():
    """The slot maker itself, from a chosen moment (no clock knob): Paris moves from +01:00 to +02:00 on
    28 March 2027; Monday and Saturday slots stay at their local times on both sides."""
    from zoneinfo import ZoneInfo
    from rustiz_features.queue import slot_times
    paris = ZoneInfo("Europe/Paris")
    schedule = {**{day: [] for day in DAYS}, "monday": [9 * 60], "saturday": [2 * 60 + 30], "sunday": [2 * 60 + 30]}
    start = datetime.datetime(2027, 3, 20, tzinfo=datetime.timezone.utc)
    slots = slot_times(schedule, paris, start, 14)
    local = [(slot.astimezone(paris).strftime("%a %H:%M"), slot.strftime("%m-%d %H:%M")) for slot in slots]
    assert local == [("Sat 02:30", "03-20 01:30"), ("Sun 02:30", "03-21 01:30"), ("Mon 09:00", "03-22 08:00"),
                     ("Sat 02:30", "03-27 01:30"),
                     ("Sun 03:00", "03-28 01:00"),  # 02:30 does not exist that night: the first minute after
                     ("Mon 09:00", "03-29 07:00"), ("Sat 02:30", "04-03 00:30")]


def test_the_queue_answer_follows_the_weekly_schedule_in_the_organization_timezone(server):
    db = Database(server)
    channel = db.channel("Sky", "bluesky")
    api(server, "PUT", "/public/v1/organization", {"timezone": "America/New_York"})
    api(server, "PUT", f"/public/v1/integrations/{channel}/schedule", week(wednesday=["07:00"], sunday=["18:45"]))
    from zoneinfo import ZoneInfo
    answer = queue_of(server, channel, 90)
    assert answer["integration"] == channel and answer["paused"] is False and answer["reflow"] is True
    assert answer["note"] is None
    assert (answer["evergreen"], answer["evergreenCooldownDays"]) == (False, 30)
    assert 24 <= len(answer["slots"]) <= 28
    for slot in answer["slots"]:
        local = datetime.datetime.fromisoformat(slot["date"].replace("Z", "+00:00")).astimezone(ZoneInfo("America/New_York"))
        assert local.strftime("%A %H:%M") in ("Wednesday 07:00", "Sunday 18:45")
        assert slot["post"] is None and slot["evergreen"] is False
    for days in ("0", "91", "x", "1e3", "-1"):
        assert api(server, "GET", f"/public/v1/queue?integration={channel}&days={days}")[0] == 400
    assert api(server, "GET", "/public/v1/queue")[0] == 404


# --- adding, reordering, re-flow ------------------------------------------------------------------------------

def test_posts_added_to_the_queue_fill_the_free_slots_in_order_around_a_fixed_date_post(server):
    db = Database(server)
    channel = db.channel("Sky", "bluesky")
    api(server, "PUT", f"/public/v1/integrations/{channel}/schedule", every_day("10:00", "16:00"))
    slots = [slot["date"] for slot in queue_of(server, channel)["slots"]]
    status, fixed = api(server, "POST", "/public/v1/posts", {
        "type": "schedule", "date": slots[1], "shortLink": False, "tags": [],
        "posts": [{"integration": {"id": channel}, "value": [{"content": "Fixed", "image": []}]}]})
    assert status == 201
    made = []
    for text in ("First", "Second", "Third"):
        status, answer = queued(server, channel, text)
        assert status == 201, answer
        made.append(answer[0]["postId"])
    assert filled(queue_of(server, channel)) == [(slots[0], "First"), (slots[1], "Fixed"), (slots[2], "Second"),
                                                 (slots[3], "Third")]
    view = api(server, "GET", f"/public/v1/posts/{made[0]}")[1]
    assert (view["inQueue"], view["evergreen"], view["publishDate"], view["state"]) == (True, False, slots[0], "QUEUE")
    assert api(server, "GET", f"/public/v1/posts/{fixed[0]['postId']}")[1]["inQueue"] is False
    listed = api(server, "GET", f"/public/v1/posts?startDate={slots[0]}&endDate={slots[5]}")[1]["posts"]
    assert {post["content"]: post["inQueue"] for post in listed} == {"First": True, "Fixed": False, "Second": True,
                                                                       "Third": True}
    # Reorder: the slots stay, the posts change places; the fixed-date post never moves.
    status, answer = api(server, "POST", "/public/v1/queue/reorder", {"integration": channel,
                                                                       "postIds": [made[2], made[0], made[1]]})
    assert status == 200 and filled(answer) == [(slots[0], "Third"), (slots[1], "Fixed"), (slots[2], "First"),
                                                (slots[3], "Second")]
    # Deleting a queued post moves the later ones up one slot each.
    assert api(server, "DELETE", f"/public/v1/posts/{made[2]}")[0] == 200
    assert filled(queue_of(server, channel)) == [(slots[0], "First"), (slots[1], "Fixed"), (slots[2], "Second")]
    # Publishing one now (its date now): it leaves the queue, the later ones move up.
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    status, view = api(server, "PUT", f"/public/v1/posts/{made[0]}", {"date": now})
    assert status == 200 and view["inQueue"] is False
    assert filled(queue_of(server, channel)) == [(slots[0], "Second"), (slots[1], "Fixed")]
    # With re-flow off, a deleted post's slot stays empty.
    assert api(server, "PUT", f"/public/v1/integrations/{channel}/queue", {"reflow": False})[1]["reflow"] is False
    status, answer = queued(server, channel, "Fourth")
    assert filled(queue_of(server, channel)) == [(slots[0], "Second"), (slots[1], "Fixed"), (slots[2], "Fourth")]
    assert api(server, "DELETE", f"/public/v1/posts/{made[1]}")[0] == 200
    assert filled(queue_of(server, channel)) == [(slots[1], "Fixed"), (slots[2], "Fourth")]


def test_reorder_takes_exactly_the_queued_posts_of_the_channel(server):
    db = Database(server)
    channel = db.channel("Sky", "bluesky")
    other_org, other_key = db.organization()
    theirs = db.channel("Theirs", "bluesky", organization_id=other_org)
    made = [queued(server, channel, f"Post {n}")[1][0]["postId"] for n in range(3)]
    their_post = queued(server, theirs, "Theirs", key=other_key)[1][0]["postId"]
    fixed = db.post(channel, "2031-01-01T10:00:00.000Z")
    for post_ids in ([], made[:2], made + made[:1], made[:2] + [their_post], made + [fixed], made[:2] + ["nope"],
                     [1, 2, 3], "abc", None, {"a": 1}, made[:2] + [None]):
        status, answer = api(server, "POST", "/public/v1/queue/reorder", {"integration": channel, "postIds": post_ids})
        assert status == 400 and "postIds" in str(answer["message"]), (post_ids, answer)
    assert api(server, "POST", "/public/v1/queue/reorder", {"integration": channel, "postIds": made[::-1]},
               key=other_key)[0] == 404
    for body in ({"postIds": made}, {"integration": 3, "postIds": made}, [], "x"):
        assert api(server, "POST", "/public/v1/queue/reorder", body)[0] in (400, 404)
    assert [slot["post"]["id"] for slot in queue_of(server, channel)["slots"] if slot["post"]] == made


def test_queue_settings_are_checked(server):
    db = Database(server)
    channel = db.channel("Sky", "bluesky")
    path = f"/public/v1/integrations/{channel}/queue"
    assert api(server, "PUT", path, {"evergreen": True, "evergreenCooldownDays": 7}) == (200, {
        "paused": False, "reflow": True, "evergreen": True, "evergreenCooldownDays": 7})
    for body, problem in (({"paused": "yes"}, "paused must be a boolean value"),
                          ({"evergreenCooldownDays": 0}, "evergreenCooldownDays must be a whole number of days from 1 "
                                                         "to 3650"),
                          ({"evergreenCooldownDays": 3651}, "evergreenCooldownDays"),
                          ({"evergreenCooldownDays": 2.5}, "evergreenCooldownDays"),
                          ({"schedule": []}, "property schedule should not exist"),
                          ({"color": 1}, "property color should not exist")):
        status, answer = api(server, "PUT", path, body)
        assert status == 400 and problem in answer["message"][0], (body, answer)


def test_pausing_keeps_the_posts_and_resuming_moves_passed_ones_to_the_next_slots(server):
    db = Database(server)
    channel = db.channel("Sky", "bluesky")
    api(server, "PUT", f"/public/v1/integrations/{channel}/schedule", every_day("10:00"))
    made = [queued(server, channel, f"Post {n}")[1][0]["postId"] for n in range(2)]
    assert api(server, "PUT", f"/public/v1/integrations/{channel}/queue", {"paused": True})[1]["paused"] is True
    # The first slot passes while paused (written into the database: no clock knob).
    for table, column, key in (("post", "publish_date", "id"), ("queue_slot", "slot", "post_id")):
        db.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", "2020-01-01T10:00:00.000Z", made[0])
    answer = queue_of(server, channel)
    assert answer["paused"] is True and filled(answer)[0] == ("2020-01-01T10:00:00.000Z", "Post 0")
    assert "When the queue is resumed, they move in their order to the next slots" in answer["note"]
    assert api(server, "PUT", f"/public/v1/integrations/{channel}/queue", {"paused": False})[1]["paused"] is False
    slots = [slot["date"] for slot in queue_of(server, channel)["slots"]]
    assert filled(queue_of(server, channel)) == [(slots[0], "Post 0"), (slots[1], "Post 1")]


def test_a_queue_full_for_90_days_answers_409_saying_what_to_do(server):
    db = Database(server)
    channel = db.channel("Sky", "bluesky")
    api(server, "PUT", f"/public/v1/integrations/{channel}/schedule", week(monday=["09:00"]))
    count = len(queue_of(server, channel, 90)["slots"])
    assert 12 <= count <= 14
    for number in range(count):
        assert queued(server, channel, f"Post {number}")[0] == 201
    status, answer = queued(server, channel, "One too many")
    assert status == 409 and "queue of channel Sky is full" in answer["message"], answer
    assert "PUT /public/v1/integrations/" in answer["message"] and 'type "schedule"' in answer["message"]
    api(server, "PUT", f"/public/v1/integrations/{channel}/schedule", week())
    status, answer = queued(server, channel, "No times")
    assert status == 400 and "Channel Sky has no posting times, so it has no queue" in answer["message"], answer
    status, answer = queued(server, channel, "Repeating", inter=7)
    assert status == 400 and "inter cannot be used with type \"queue\"" in str(answer["message"])
    status, answer = queued(server, channel, "Flag", evergreen="yes")
    assert status == 400 and answer["message"] == ["evergreen must be a boolean value"]


def test_three_processes_adding_at_once_never_put_two_posts_on_one_slot(start_server):
    server = start_server(env={"RUSTIZ_SCHEDULER": "0", "API_LIMIT": "0", "REQUEST_LIMIT": "0"},
                          args=("--workers", "3"))
    db = Database(server)
    channel = db.channel("Sky", "bluesky")
    api(server, "PUT", f"/public/v1/integrations/{channel}/schedule", every_day("09:00", "12:00", "15:00"))
    answers: list = []

    def add(number: int) -> None:
        for part in range(5):
            answers.append(queued(server, channel, f"Post {number}-{part}")[0])

    threads = [threading.Thread(target=add, args=(number,)) for number in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [201] * 30
    dates = [slot["date"] for slot in queue_of(server, channel, 30)["slots"] if slot["post"]]
    assert len(dates) == 30 and len(set(dates)) == 30
    first_dates = [slot["date"] for slot in queue_of(server, channel, 30)["slots"]][:30]
    assert dates == first_dates  # no gap: the first 30 slots, each once


# --- MCP and the CLI import ----------------------------------------------------------------------------------

def test_the_mcp_schedule_tool_and_the_import_take_type_queue(server):
    db = Database(server)
    channel = db.channel("Sky", "bluesky")
    api(server, "PUT", f"/public/v1/integrations/{channel}/schedule", every_day("10:00"))
    result = mcp_tool_call(server, server.key, "integrationSchedulePostTool", {"socialPost": [{
        "integrationId": channel, "isPremium": False, "date": "2000-01-01T00:00:00Z", "shortLink": False,
        "type": "queue", "evergreen": True, "settings": [],
        "postsAndComments": [{"content": "<p>From an agent</p>", "attachments": []}]}]})
    created = result["structuredContent"]["output"]
    assert isinstance(created, list), result
    status, answer = api(server, "POST", "/public/v1/posts/import", (
        f"date,type,channel,content\r\n,queue,{channel},From a file\r\n").encode(),
        headers={"Content-Type": "text/csv"})
    assert status == 201, answer
    answer = queue_of(server, channel)
    slots = [slot["date"] for slot in answer["slots"]]
    assert filled(answer) == [(slots[0], "<p>From an agent</p>"), (slots[1], "From a file")]
    assert answer["slots"][0]["post"]["evergreen"] is True and answer["slots"][1]["post"]["evergreen"] is False
    imported = answer["slots"][1]["post"]["id"]
    status, view = api(server, "PUT", f"/public/v1/posts/{imported}", {"evergreen": True})
    assert status == 200 and view["evergreen"] is True and view["inQueue"] is True
    assert api(server, "PUT", f"/public/v1/posts/{imported}", {"evergreen": 1})[1]["message"] == [
        "evergreen must be a boolean value"]
    assert api(server, "GET", f"/public/v1/posts/{imported}")[1]["evergreen"] is True


# --- evergreen ------------------------------------------------------------------------------------------------

def test_an_evergreen_post_goes_back_in_the_queue_once_after_its_cooldown(start_server):
    server = start_server(env={"RUSTIZ_EVERGREEN_POLL_SECONDS": "0.2"})
    db = Database(server)
    channel = db.channel("Sky", "bluesky")
    api(server, "PUT", f"/public/v1/integrations/{channel}/schedule", every_day("10:00"))
    status, made = queued(server, channel, "Evergreen tip", evergreen=True)
    assert status == 201
    post_id = made[0]["postId"]
    assert api(server, "GET", f"/public/v1/posts/{post_id}")[1]["evergreen"] is True
    # It went out 10 days ago (written into the database); the cooldown is 30 days: nothing yet.
    ten_days_ago = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=10)).strftime(
        "%Y-%m-%dT%H:%M:%S.000Z")
    db.execute("UPDATE post SET state = 'PUBLISHED', publish_date = ? WHERE id = ?", ten_days_ago, post_id)
    assert api(server, "PUT", f"/public/v1/integrations/{channel}/queue", {"evergreen": True})[0] == 200
    time.sleep(1)
    answer = queue_of(server, channel)
    assert filled(answer) == [] and not any(slot["evergreen"] for slot in answer["slots"])
    # A cooldown of 7 days: it is queued again, as a new post with the same content, exactly once.
    api(server, "PUT", f"/public/v1/integrations/{channel}/queue", {"evergreen": False, "evergreenCooldownDays": 7})
    answer = queue_of(server, channel)
    assert answer["slots"] and not any(slot["evergreen"] for slot in answer["slots"])
    api(server, "PUT", f"/public/v1/integrations/{channel}/queue", {"evergreen": True})
    deadline = time.time() + 10
    while time.time() < deadline and not filled(queue_of(server, channel)):
        time.sleep(0.2)
    time.sleep(1)
    answer = queue_of(server, channel)
    assert [text for _, text in filled(answer)] == ["Evergreen tip"]
    copy = next(slot["post"] for slot in answer["slots"] if slot["post"])
    assert copy["id"] != post_id and copy["inQueue"] is True and copy["evergreen"] is False
    assert db.row("SELECT COUNT(*) FROM post WHERE content = ?", "Evergreen tip")[0] == 2
    # Its copy deleted (not published): the post is queued again, once.
    assert api(server, "DELETE", f"/public/v1/posts/{copy['id']}")[0] == 200
    deadline = time.time() + 10
    while time.time() < deadline and not filled(queue_of(server, channel)):
        time.sleep(0.2)
    time.sleep(1)
    assert [text for _, text in filled(queue_of(server, channel))] == ["Evergreen tip"]
    # PUT /posts/:id takes the flag off.
    status, view = api(server, "PUT", f"/public/v1/posts/{post_id}", {"evergreen": False})
    assert status == 409  # (a published post is not edited; its flag stays)


def test_a_paused_channel_s_due_queued_post_waits_and_publish_now_moves_the_rest_up(start_server, receiver):
    """With the scheduler running: a queued post whose slot came while its channel is paused is not published."""
    from support import webhook_channel
    server = start_server(env={"RUSTIZ_FETCH_ALLOW": "127.0.0.1"})
    channel = webhook_channel(server, receiver, "Hook")
    db = Database(server)
    api(server, "PUT", f"/public/v1/integrations/{channel}/schedule", every_day("10:00"))
    made = [queued(server, channel, f"<p>Post {n}</p>")[1][0]["postId"] for n in range(3)]
    slots = [slot["date"] for slot in queue_of(server, channel)["slots"]]
    api(server, "PUT", f"/public/v1/integrations/{channel}/queue", {"paused": True})
    due = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=5)).strftime(
        "%Y-%m-%dT%H:%M:%S.000Z")
    for table, column, key in (("post", "publish_date", "id"), ("queue_slot", "slot", "post_id")):
        db.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", due, made[0])
    time.sleep(2.5)
    assert api(server, "GET", f"/public/v1/posts/{made[0]}")[1]["state"] == "QUEUE" and receiver.published == []
    api(server, "PUT", f"/public/v1/integrations/{channel}/queue", {"paused": False})
    assert filled(queue_of(server, channel)) == [(slots[0], "<p>Post 0</p>"), (slots[1], "<p>Post 1</p>"),
                                                 (slots[2], "<p>Post 2</p>")]
    # Publish now through POST /posts (the post's id, type "now"): it leaves the queue, the rest move up.
    status, answer = api(server, "POST", "/public/v1/posts", {
        "type": "now", "date": due, "shortLink": False, "tags": [],
        "posts": [{"integration": {"id": channel}, "value": [{"id": made[0], "content": "<p>Post 0</p>", "image": []}],
                   "settings": {"__type": "webhook"}}]})
    assert status == 201, answer
    assert filled(queue_of(server, channel)) == [(slots[0], "<p>Post 1</p>"), (slots[1], "<p>Post 2</p>")]
    deadline = time.time() + 10
    while not receiver.published and time.time() < deadline:
        time.sleep(0.1)
    assert [item["text"] for item in receiver.published] == ["Post 0"]


def test_three_processes_refilling_at_once_queue_one_evergreen_copy(start_server):
    server = start_server(env={"RUSTIZ_EVERGREEN_POLL_SECONDS": "0.05"}, args=("--workers", "3"))
    db = Database(server)
    channel = db.channel("Sky", "bluesky")
    api(server, "PUT", f"/public/v1/integrations/{channel}/schedule", every_day("10:00", "14:00"))
    made = [queued(server, channel, f"Tip {n}", evergreen=True)[1][0]["postId"] for n in range(2)]
    for number, post_id in enumerate(made):  # went out 40 and 50 days ago
        db.execute("UPDATE post SET state = 'PUBLISHED', publish_date = ? WHERE id = ?",
                   f"2020-01-0{number + 1}T10:00:00.000Z", post_id)
    api(server, "PUT", f"/public/v1/integrations/{channel}/queue", {"evergreen": True})
    deadline = time.time() + 10
    while time.time() < deadline and len(filled(queue_of(server, channel))) < 2:
        time.sleep(0.1)
    time.sleep(1)
    # Each evergreen post once, the one that went out longest ago first.
    assert [text for _, text in filled(queue_of(server, channel))] == ["Tip 0", "Tip 1"]
    assert db.row("SELECT COUNT(*) FROM evergreen_post WHERE source_id IS NOT NULL")[0] == 2
