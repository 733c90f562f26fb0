"""Posts as files: GET /posts/export (JSON or CSV), POST /posts/import (dry run, all or nothing), and the
`rustiz posts export|import` commands, which call the same class on the database directly.

Rules:
- An imported row is a CreatePost body, as POST /posts takes it (a CSV line is turned into one first); it
  passes the same checks: validate_create_post, the missed-date and republish guards (PostsApi's row
  planning), and the duplicate rule (duplicates.py), also against the import's earlier rows.
- All or nothing: rows are stored only when every row passes, in one transaction (storage.posts.save_post_batches).
  A dry run checks every row the same way and stores nothing.
- Media of a CSV line must be uploads of the organization (its Media rows); an import never fetches a URL:
  POST /upload-from-url does that, through the one outbound client and its address guard.
- Bounded: the body by RUSTIZ_MAX_BODY (the core), at most MAX_IMPORT_ROWS rows; an export holds at most
  MAX_EXPORTED_THREADS threads and MAX_EXPORTED_TEXT_BYTES of text (a 400 asks for a shorter window).
- An import is parsed, checked and stored off the event loop (a large one takes seconds, and every tenant's
  requests would wait): on one thread per worker with a database connection of its own, one import at a time;
  another arriving meanwhile gets a 503 with Retry-After.
- The JSON export is a list of CreatePost bodies that imports back as the same posts.
- CSV formula injection (OWASP): a spreadsheet runs a cell that begins with = + - @ tab or CR as a formula,
  so the export writes such a cell with a single quote before it (the spreadsheet shows the text as is).
  The rule, lossless both ways: export adds one ' before a cell that begins with = + - @ tab CR, or with '
  followed by one of those or by another '; import takes one leading ' off exactly such a cell (a ' followed
  by anything else is content and stays). So "=1+2" exports as "'=1+2", "'=x" as "''=x", "'hello" as is.
"""
from __future__ import annotations

import asyncio
import csv
import io
import json
import re
from types import SimpleNamespace
from typing import Any, Optional

from rustiz import (
    ApiError, Request, Response, bad_request, encode_json, iso_ms, json_dumps, nest_error, parse_iso_instant,
    route_options,
)
from .api_docs import DATE, array_of, documented, parameter, ref
from .api_posts import PostsApi
from .duplicates import duplicate_message, duplicates_allowed, find_duplicates, pending_entries
from .storage import posts as post_store
from .storage.posts import PostBeingPublished
from .validation import validate_create_post
from .storage import channels as channel_store
from .storage import media_library as media_store

MAX_IMPORT_ROWS = 1000
MAX_IMPORTS_AT_ONCE = 1  # per worker: each holds its file's rows and a thread; more wait for a 503's Retry-After
IMPORT_BUSY_RETRY_SECONDS = 5
MAX_EXPORTED_THREADS = 10_000
MAX_EXPORTED_TEXT_BYTES = 64 * 1024 * 1024  # the posts' content, settings and media lists in one export
MAX_CSV_PARTS = 100  # part2 ... part100: the thread parts after the first
CSV_COLUMNS = ("date", "type", "channel", "content", "media", "settings", "tags", "allowDuplicate")
REQUIRED_CSV_COLUMNS = ("date", "channel", "content")
_PART_COLUMN = re.compile(r"part([0-9]+)(Media)?")
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_FLAGS = {"": False, "0": False, "false": False, "1": True, "true": True}


def neutralised_cell(cell: str) -> str:
    """A CSV cell a spreadsheet will not run as a formula (see the module's rule)."""
    escaped = cell.startswith(_FORMULA_STARTS) or (cell[:1] == "'" and cell[1:2] in _FORMULA_STARTS + ("'",))
    return "'" + cell if escaped else cell


def restored_cell(cell: str) -> str:
    """The cell as it was before neutralised_cell (a ' it added is taken off; any other ' is content)."""
    return cell[1:] if cell[:1] == "'" and cell[1:2] in _FORMULA_STARTS + ("'",) else cell


def query_flag(query: dict, name: str) -> bool:
    """A 0/1 (false/true) query parameter; absent is false; anything else is a 400 naming it."""
    value = _FLAGS.get(query.get(name, "").strip().lower())
    if value is None:
        raise bad_request(f"{name} must be 1 or 0 (true or false), not {query[name]!r}")
    return value


def export_window(start_text: Any, end_text: Any, names: tuple = ("startDate", "endDate")) -> tuple:
    """The window's two ends as stored instants; a 400 names each that is not ISO 8601 (by `names`: the
    query's, or the CLI's options), or a window that ends before it starts."""
    start, end = parse_iso_instant(start_text), parse_iso_instant(end_text)
    if start is None or end is None:
        raise bad_request([f"{name} must be a valid ISO 8601 date string"
                           for name, value in zip(names, (start, end)) if value is None])
    if end < start:
        raise bad_request(f"{names[1]} {iso_ms(end)} is before {names[0]} {iso_ms(start)}: swap them")
    return iso_ms(start), iso_ms(end)


def _refusal_lines(refused: ApiError) -> list:
    """An API refusal as lines a person reads: the DTO's list, or "<channel> (<provider>): <why>"."""
    body = refused.body if isinstance(refused.body, dict) else {"message": refused.body}
    message = body.get("message")
    if isinstance(message, list):
        return [str(line) for line in message]
    if body.get("provider"):
        return [f"{body.get('name')} ({body['provider']}): {message}"]
    return [str(message)]


def _split_flag(text: str, column: str) -> Any:
    value = _FLAGS.get(text.strip().lower())
    return value if value is not None else f"{column} must be 1, 0, true, false or empty, not {text!r}"


_YES_OR_NO = {"type": "string", "enum": ["0", "1", "true", "false"]}  # (a query flag, in the OpenAPI document)


class PostsFiles:
    """Export and import for one process: the App in the server, or the CLI's (store, config) namespace."""

    def __init__(self, app: Any):
        self.store, self.config = app.store, app.config
        self.posts = PostsApi(app)
        self._imports_running = 0
        self._import_thread: Any = None  # (made on the first import)
        self._import_files: Optional["PostsFiles"] = None  # this class on the import thread's own Store

    # --- export ------------------------------------------------------------------------------------------

    @documented("The posts of a date window as a file: JSON (CreatePost bodies, importable) or CSV (rustiz)",
                ("200", {"description": "The file", "content": {
                    "application/json": {"schema": array_of(ref("CreatePost"))},
                    "text/csv": {"schema": {"type": "string"}}}}), "BadRequest",
                (parameter("query", "format", "json (default) or csv",
                           schema={"type": "string", "enum": ["json", "csv"]}),
                 parameter("query", "startDate", "Main posts dated from this instant", True, DATE),
                 parameter("query", "endDate", "Up to this instant, inclusive", True, DATE)))
    def export(self, request: Request, organization_id: str) -> Response:
        """GET /posts/export?format=json|csv&startDate&endDate: the window's threads as a file."""
        query = request.query
        file_format = query.get("format", "json")
        if file_format not in ("json", "csv"):
            raise bad_request(f"format must be json or csv, not {file_format!r}")
        bodies = self.exported_bodies(organization_id, *export_window(query.get("startDate"), query.get("endDate")))
        content, content_type = self.encoded(bodies, file_format)
        return Response(200, content, content_type,
                        [("Content-Disposition", f'attachment; filename="rustiz-posts.{file_format}"')])

    @staticmethod
    def encoded(bodies: list, file_format: str) -> tuple:
        """(bytes, Content-Type) of exported bodies as JSON or CSV."""
        if file_format == "csv":
            return csv_text(bodies).encode(), "text/csv; charset=utf-8"
        return json_dumps(bodies), "application/json; charset=utf-8"

    def exported_bodies(self, organization_id: str, start: str, end: str) -> list:
        """One CreatePost body per thread whose main post is dated in [start, end]: drafts as type "draft",
        everything else as "schedule" (posts already published or failed are listed too, with their date)."""
        rows = post_store.posts_for_export(self.store, organization_id, start, end, MAX_EXPORTED_THREADS + 1)
        groups: dict = {}
        for row in rows:
            groups.setdefault(row["group"], []).append(row)
        size = sum(len(row["content"]) + len(row["settings"] or "") + len(row["image"] or "") for row in rows)
        if len(groups) > MAX_EXPORTED_THREADS or size > MAX_EXPORTED_TEXT_BYTES:
            raise bad_request(f"Between {start} and {end} there are more posts than one export holds (at most "
                              f"{MAX_EXPORTED_THREADS} threads and {MAX_EXPORTED_TEXT_BYTES // 2**20} MiB of "
                              "text): ask for a shorter window")
        threads = [_in_thread_order(parts) for parts in groups.values()]
        tags = post_store.post_tags(self.store, [thread[0]["id"] for thread in threads])
        return [_create_post_body(thread, [tag["tag"]["name"] for tag in tags.get(thread[0]["id"], [])])
                for thread in threads]

    # --- import ------------------------------------------------------------------------------------------

    @route_options(scope="posts", audit="post.imported")  # (an editor may: the role editor, or a full key)
    @documented("Validate (dryRun=1) or store, all or nothing, posts from a JSON or CSV file (rustiz)",
                ("201", ref("ImportReport")), "BadRequest",
                (parameter("query", "dryRun", "1: validate every row, store nothing, answer 200", schema=_YES_OR_NO),
                 parameter("query", "allowDuplicate", "1: no row is refused as a duplicate", schema=_YES_OR_NO)),
                {"required": True, "content": {
                    "application/json": {"schema": {"anyOf": [array_of(ref("CreatePost")), ref("CreatePost")]}},
                    "text/csv": {"schema": {"type": "string"}}}})
    async def import_posts(self, request: Request, organization_id: str) -> Response:
        """POST /posts/import[?dryRun=1][&allowDuplicate=1]: a JSON array of CreatePost bodies (or one), or a
        CSV file (Content-Type text/csv). 200 for a dry run, 201 once stored, 400 with the failed rows; 503
        while another import runs in this worker. Runs on the import thread (see the module's rules)."""
        if self._imports_running >= MAX_IMPORTS_AT_ONCE:
            raise ApiError(503, {"statusCode": 503, "error": "Service Unavailable", "message": (
                "Another import is being checked and stored on this server right now (one at a time): nothing of "
                f"this file was imported; send it again in {IMPORT_BUSY_RETRY_SECONDS} seconds")},
                [("Retry-After", str(IMPORT_BUSY_RETRY_SECONDS))])
        if self._import_thread is None:
            from concurrent.futures import ThreadPoolExecutor
            self._import_thread = ThreadPoolExecutor(1, thread_name_prefix="rustiz-import")
        self._imports_running += 1
        try:
            answer = await asyncio.get_running_loop().run_in_executor(self._import_thread, self._import_on_thread,
                                                                      request, organization_id)
        finally:
            self._imports_running -= 1
        if answer.status == 201 and self.store.on_posts_changed is not None:
            self.store.on_posts_changed()  # (this worker's scheduler, at once: the import's Store is another)
        return answer

    def _import_on_thread(self, request: Request, organization_id: str) -> Response:
        """(On the import thread) import_now on the thread's own Store (Store.for_a_thread)."""
        if self._import_files is None:
            self._import_files = PostsFiles(SimpleNamespace(store=self.store.for_a_thread(), config=self.config))
        return self._import_files.import_now(request, organization_id)

    def import_now(self, request: Request, organization_id: str) -> Response:
        """POST /posts/import's work, on the calling thread (see import_posts)."""
        dry_run, allow_duplicates = query_flag(request.query, "dryRun"), query_flag(request.query, "allowDuplicate")
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        rows = self.csv_rows(organization_id, request.body) if content_type in ("text/csv", "application/csv") \
            else self.json_rows(request.json())
        report = self.import_rows(organization_id, rows, dry_run, allow_duplicates)
        if not report["ok"]:
            failed = [row for row in report["rows"] if not row["ok"]]
            raise ApiError(400, {"statusCode": 400, "error": "Bad Request", **report, "message": (
                f"{len(failed)} of {len(rows)} rows failed{'' if dry_run else ', so nothing was imported'}: "
                + "; ".join(f"row {row['row']}: {' / '.join(row['errors'])}" for row in failed[:5])
                + ("; ..." if len(failed) > 5 else ""))})
        return Response(200 if dry_run else 201, json_dumps(report), "application/json; charset=utf-8")

    @staticmethod
    def json_rows(document: Any) -> list:
        """The rows of a JSON import: an array of CreatePost bodies, or one body (an object with "posts")."""
        if isinstance(document, dict) and "posts" in document:
            document = [document]
        if not isinstance(document, list):
            raise bad_request("The body must be a JSON array of CreatePost bodies (what GET /posts/export "
                              "answers), or one CreatePost body; for CSV send Content-Type: text/csv")
        _check_row_count(len(document))
        return [row if isinstance(row, dict) else ["row must be a JSON object (a CreatePost body)"]
                for row in document]

    def csv_rows(self, organization_id: str, data: bytes) -> list:
        """The rows of a CSV import as CreatePost bodies (or a row's list of problems); see csv_text."""
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise bad_request("The CSV file is not UTF-8 text; save it as UTF-8") from None
        try:
            lines = [[restored_cell(cell) for cell in line] for line in csv.reader(io.StringIO(text, newline=""))]
        except csv.Error as error:
            raise bad_request(f"The CSV file cannot be read: {error}") from None
        if not lines:
            raise bad_request("The CSV file is empty: its first line names the columns (date, channel, content...)")
        header = [name.strip() for name in lines[0]]
        _check_csv_header(header)
        lines = [line for line in lines[1:] if any(cell.strip() for cell in line)]  # (blank lines are skipped)
        _check_row_count(len(lines))
        records = [dict(zip(header, line + [""] * (len(header) - len(line)))) for line in lines]
        paths = {path for record in records for name, cell in record.items()
                 if name == "media" or name.endswith("Media") for path in cell.split()}
        uploads = media_store.media_ids_by_path(
            self.store, organization_id, [self._upload_url(path) for path in paths]) if paths else {}
        return [self._csv_body(record, uploads) if len(line) <= len(header) else
                [f"the line has {len(line)} cells, but the header names {len(header)} columns (a comma in a cell "
                 'needs the cell in double quotes: "a, b")'] for record, line in zip(records, lines)]

    def _upload_url(self, path: str) -> str:
        """An upload's URL as stored: /uploads/... is taken relative to FRONTEND_URL."""
        return self.config.frontend_url + path if path.startswith("/uploads/") else path

    def _csv_body(self, record: dict, uploads: dict) -> Any:
        problems: list = []

        def media(column: str) -> list:
            found = []
            for path in record.get(column, "").split():
                media_id = uploads.get(self._upload_url(path))
                if media_id is None:
                    problems.append(f"{column}: {path} is not an upload of this organization; upload it first "
                                    "(POST /public/v1/upload-from-url fetches a URL through rustiz's address "
                                    "guard) and give the path it answers")
                found.append({"id": media_id or "", "path": self._upload_url(path)})
            return found

        settings: Any = {}
        if record.get("settings", "").strip():
            try:
                settings = json.loads(record["settings"])
            except ValueError as error:
                problems.append(f"settings is not JSON: {error}")
            if not isinstance(settings, dict):
                problems.append("settings must be a JSON object")
        post_type = record.get("type", "").strip() or "schedule"
        if post_type not in ("schedule", "draft", "now", "queue"):  # (queue: issue 26, the next free slot)
            problems.append(f"type must be schedule, draft, now or queue, not {post_type!r}")
        allow = _split_flag(record.get("allowDuplicate", ""), "allowDuplicate")
        if isinstance(allow, str):
            problems.append(allow)
        values = [{"content": record["content"], "image": media("media")}]
        for number in range(2, MAX_CSV_PARTS + 1):
            if record.get(f"part{number}", "").strip() or record.get(f"part{number}Media", "").strip():
                values.append({"content": record.get(f"part{number}", ""), "image": media(f"part{number}Media")})
        if problems:
            return problems
        tags = [name.strip() for name in record.get("tags", "").split(",") if name.strip()]
        return {"type": post_type, "date": record["date"].strip(), "shortLink": False,
                "tags": [{"value": name, "label": name} for name in tags], "allowDuplicate": allow is True,
                "posts": [{"integration": {"id": record["channel"].strip()}, "value": values, "settings": settings}]}

    def import_rows(self, organization_id: str, rows: list, dry_run: bool, allow_duplicates: bool,
                    creation_method: str = "API") -> dict:
        """Check every row; unless a dry run, store them all in one transaction when every row passes.

        Returns {"dryRun", "ok", "rows": [{"row", "ok", "errors"?, "posts"?}], "imported"?}."""
        pending: list = []
        results, batches = [], []
        for number, row in enumerate(rows, 1):
            problems, batch = (row, None) if isinstance(row, list) else self._checked_row(
                organization_id, row, number, allow_duplicates, pending, creation_method)
            results.append({"row": number, "ok": False, "errors": problems} if problems else {"row": number, "ok": True})
            batches.append(batch)
        ok = all(result["ok"] for result in results)
        report: dict = {"dryRun": dry_run, "ok": ok, "rows": results}
        if ok and not dry_run:
            try:
                post_store.save_post_batches(self.store, organization_id, batches)
            except PostBeingPublished as busy:
                raise nest_error(409, f"Post {busy.post_id} began to be published during the import, which "
                                      "rewrites it; nothing was imported: wait until it is PUBLISHED or ERROR, "
                                      "then import again") from None
            for result, (threads, _, _) in zip(results, batches):
                result["posts"] = [{"postId": thread[0]["id"], "integration": thread[0]["integration_id"]}
                                   for thread in threads]
            report["imported"] = len(rows)
        return report

    def _checked_row(self, organization_id: str, body: dict, number: int, allow_duplicates: bool, pending: list,
                     creation_method: str) -> tuple:
        """(problems, (threads, replaced groups, tags) to store): the checks of POST /posts, and duplicates."""
        try:
            plan = validate_create_post(body, lambda channel_id: channel_store.channel(
                self.store, organization_id, channel_id, include_deleted=True), self.config.frontend_url,
                lambda urls: media_store.media_ids_by_path(self.store, organization_id, urls))
            plan["creationMethod"] = creation_method
            self.posts.plan_queue_date(organization_id, plan)
            threads, replaced_groups = self.posts.planned_rows(organization_id, plan)
        except ApiError as refused:
            return _refusal_lines(refused), None
        if not (allow_duplicates or duplicates_allowed(body)):
            duplicates = find_duplicates(self.store, plan, pending)
            if duplicates:
                return [duplicate_message(duplicates)], None
        pending.extend(pending_entries(plan, row=number, postId=None))
        return [], (threads, replaced_groups, plan["tags"])


def _check_row_count(count: int) -> None:
    if count == 0:
        raise bad_request("The file holds no rows: nothing to import")
    if count > MAX_IMPORT_ROWS:
        raise bad_request(f"The file holds {count} rows, more than the {MAX_IMPORT_ROWS} one import takes: "
                          "split it into several files")


def _check_csv_header(header: list) -> None:
    unknown = [name for name in header if name not in CSV_COLUMNS and not (
        (match := _PART_COLUMN.fullmatch(name)) and 2 <= int(match.group(1)) <= MAX_CSV_PARTS)]
    if unknown:
        raise bad_request(f"Unknown CSV column {unknown[0]!r}: the columns are {', '.join(CSV_COLUMNS)}, and "
                          f"part2 ... part{MAX_CSV_PARTS} with part2Media ... for the thread parts")
    missing = [name for name in REQUIRED_CSV_COLUMNS if name not in header]
    if missing:
        raise bad_request(f"The CSV file has no {missing[0]} column; its first line must name at least "
                          f"{', '.join(REQUIRED_CSV_COLUMNS)}")
    repeated = next((name for name in header if header.count(name) > 1), None)
    if repeated:
        raise bad_request(f"The CSV column {repeated} appears twice")


def _in_thread_order(parts: list) -> list:
    """A group's posts, root first, then each reply after its parent."""
    children: dict = {}
    for part in parts:
        children.setdefault(part["parentPostId"], []).append(part)
    ordered, pending = [], list(children.get(None, []))[:1]
    while pending:
        part = pending.pop()
        ordered.append(part)
        pending.extend(children.get(part["id"], [])[:1])
    return ordered


def _create_post_body(thread: list, tag_names: list) -> dict:
    root = thread[0]
    settings = json.loads(root["settings"]) if root["settings"] else {}
    body = {"type": "draft" if root["state"] == "DRAFT" else "schedule", "date": root["publishDate"],
            "shortLink": False, "tags": [{"value": name, "label": name} for name in tag_names],
            "posts": [{"integration": {"id": root["integrationId"]},
                       "value": [{"content": part["content"], "image": json.loads(part["image"] or "[]"),
                                  "delay": part["delay"] or 0} for part in thread],
                       "settings": settings}]}
    if root["intervalInDays"]:
        body["inter"] = root["intervalInDays"]
    return body


def csv_text(bodies: list) -> str:
    """Exported bodies as CSV: date, type, channel, content, media (paths, space-separated), settings (JSON),
    tags (comma-separated), then part2, part2Media ... for the longest thread's parts."""
    longest = max((len(body["posts"][0]["value"]) for body in bodies), default=1)
    parts = [name for number in range(2, longest + 1) for name in (f"part{number}", f"part{number}Media")]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(list(CSV_COLUMNS[:-1]) + parts)  # (the header's names start with a letter)
    for body in bodies:
        post = body["posts"][0]
        values = post["value"]
        cells = [body["date"], body["type"], post["integration"]["id"], values[0]["content"],
                 " ".join(image["path"] for image in values[0]["image"]), encode_json(post["settings"]),
                 ",".join(tag["label"] for tag in body["tags"])]
        for value in values[1:]:
            cells += [value["content"], " ".join(image["path"] for image in value["image"])]
        writer.writerow([neutralised_cell(cell) for cell in cells]
                        + [""] * (len(CSV_COLUMNS) - 1 + len(parts) - len(cells)))
    return out.getvalue()
