"""`rustiz db copy`: a populated SQLite instance into PostgreSQL and back, every row and count checked."""
from __future__ import annotations

import sqlite3

import pytest

from conftest import read_config, run_cli
from support import Database, api, iso, uploaded, png_file


def populate(server) -> dict:
    """Channels, a thread with replies, tags, a webhook, an upload and a second organization, through the API and
    straight rows; returns what the copy must keep."""
    db = Database(server)
    channel = db.channel("Sky", "bluesky", customer_id=db.customer("Acme"))
    db.thread(channel, iso(3600), ["<p>one</p>", "<p>two</p>", "<p>three</p>"])
    db.post(channel, iso(-60), state="PUBLISHED", release_id="r1", release_url="https://bsky.app/x")
    db.organization()
    media = uploaded(server, png_file())
    status, webhook = api(server, "POST", "/public/v1/webhooks",
                          {"name": "ops", "url": "https://example.com/hook", "integrations": [channel]})
    assert status == 201, webhook
    status, posts = api(server, "GET", f"/public/v1/posts?startDate={iso(-86400)}&endDate={iso(86400)}")
    assert status == 200, posts
    return {"channel": channel, "media": media, "posts": posts}


def listing(server) -> tuple:
    posts = api(server, "GET", f"/public/v1/posts?startDate={iso(-86400)}&endDate={iso(86400)}")[1]
    channels = api(server, "GET", "/public/v1/integrations")[1]
    webhooks = api(server, "GET", "/public/v1/webhooks")[1]
    return posts, channels, webhooks


def test_db_copy_moves_a_populated_sqlite_instance_into_postgresql_and_back(start_server, postgres_cluster, pyz,
                                                                           tmp_path):
    source = start_server(data_dir=tmp_path / "sqlite")
    populate(source)
    before = listing(source)
    source.stop()
    config = {"RUSTIZ_CONFIG": str(source.config_path)}

    target = postgres_cluster.create_database("copy")
    copied = run_cli(pyz, "db", "copy", "--to", target, env=config)
    assert copied.returncode == 0, copied.stderr
    assert "all counts match" in copied.stdout
    with sqlite3.connect(read_config(source.config_path)["RUSTIZ_DATABASE"]) as original:
        posts = original.execute("SELECT COUNT(*) FROM post").fetchone()[0]
    assert "post: %d rows" % posts in copied.stderr

    on_postgres = start_server(data_dir=tmp_path / "sqlite", env={"RUSTIZ_DATABASE": target})
    assert listing(on_postgres) == before  # the same key, channels, posts (threads and all) and webhooks
    on_postgres.stop()

    back = tmp_path / "back.db"
    returned = run_cli(pyz, "db", "copy", "--to", str(back), env={**config, "RUSTIZ_DATABASE": target})
    assert returned.returncode == 0, returned.stderr
    on_sqlite_again = start_server(data_dir=tmp_path / "sqlite", env={"RUSTIZ_DATABASE": str(back)})
    assert listing(on_sqlite_again) == before


def test_db_copy_refuses_a_target_that_already_holds_data(start_server, postgres_cluster, pyz, tmp_path):
    source = start_server(data_dir=tmp_path / "sqlite")
    source.stop()
    target = postgres_cluster.create_database("busy")
    config = {"RUSTIZ_CONFIG": str(source.config_path)}
    assert run_cli(pyz, "db", "copy", "--to", target, env=config).returncode == 0
    again = run_cli(pyz, "db", "copy", "--to", target, env=config)
    assert again.returncode != 0
    assert "already holds data (in organization)" in again.stderr
    assert "Traceback" not in again.stderr


@pytest.mark.parametrize("target, words", [("mysql://db/x", "give a postgresql:// URL"),
                                           ("postgresql://nobody@127.0.0.1:1/none", "cannot use its PostgreSQL")])
def test_db_copy_names_a_target_it_cannot_use(start_server, pyz, tmp_path, target, words):
    source = start_server(data_dir=tmp_path / "sqlite")
    source.stop()
    refused = run_cli(pyz, "db", "copy", "--to", target, env={"RUSTIZ_CONFIG": str(source.config_path)})
    assert refused.returncode != 0 and words in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr


def test_db_copy_moves_the_uploads_into_an_empty_bucket_and_the_images_still_load(start_server, postgres_cluster,
                                                                                 pyz, tmp_path):
    from s3_server import S3Server
    s3 = S3Server()
    try:
        bucket = s3.create_bucket("rustiz-moved")
        source = start_server(data_dir=tmp_path / "sqlite")
        media = uploaded(source, png_file(pixel=b"\x11"))
        source.stop()
        target = postgres_cluster.create_database("moved")
        env = {"RUSTIZ_CONFIG": str(source.config_path), **s3.rustiz_env(bucket)}
        env.pop("RUSTIZ_STORAGE")
        copied = run_cli(pyz, "db", "copy", "--to", target, "--uploads-to", f"s3://{bucket}/media", env=env)
        assert copied.returncode == 0, copied.stderr
        assert "1 uploads" in copied.stdout and "SHA-256 checked" in copied.stdout
        key = "media/" + media["path"].split("/uploads/", 1)[1]
        assert s3.read(bucket, key) == png_file(pixel=b"\x11")

        again = run_cli(pyz, "db", "copy", "--to", postgres_cluster.create_database("moved"),
                        "--uploads-to", f"s3://{bucket}/media", env=env)
        assert again.returncode != 0 and "already holds objects" in again.stderr, again.stderr

        moved = start_server(data_dir=tmp_path / "sqlite",
                             env={"RUSTIZ_DATABASE": target, **s3.rustiz_env(bucket)})
        status, headers, _ = moved.request("GET", "/uploads/" + media["path"].split("/uploads/", 1)[1])
        assert status == 200  # (urllib followed the redirect to the presigned URL)
    finally:
        s3.stop()
