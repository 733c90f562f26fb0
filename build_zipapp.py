#!/usr/bin/env python3
"""Pack rustiz.py, the rustiz_features package (and web/, when it exists) into one runnable file: dist/rustiz.pyz.

    python3 build_zipapp.py                    # standard library only
    python3 build_zipapp.py --with-speedups    # also carries orjson and uvloop for this Python and platform

The archive is byte-for-byte reproducible from the same sources: entries are sorted and carry a
fixed timestamp and mode. It holds the sources and, for the building Python, a .pyc of each so that
start-up skips compiling (other Python versions compile the sources instead).
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import io
import json
import marshal
import os
import shutil
import subprocess
import sys
import tempfile
import tokenize
import zipfile
from typing import Any

ROOT = os.path.dirname(os.path.abspath(__file__))
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
SPEEDUP_PACKAGES = ("orjson", "uvloop")
# `import rustiz`, minus a second decompression and unmarshalling of the whole core: zipimport's find_spec
# reads a module's code only to learn its file name, which costs about 2.5 ms of every start.
MAIN = """import sys
from importlib.util import module_from_spec, spec_from_file_location

spec = spec_from_file_location("rustiz", __loader__.archive + "/rustiz.pyc", loader=__loader__)
rustiz = sys.modules["rustiz"] = module_from_spec(spec)
spec.loader.exec_module(rustiz)
raise SystemExit(rustiz.main())
"""


def add_file(archive: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(name, FIXED_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100000 | mode) << 16
    info.create_system = 3  # unix, so the mode above is honoured whatever the building OS
    archive.writestr(info, data, compresslevel=9)


def python_sources() -> list:
    """(name in the archive, path) of rustiz.py and every module of the rustiz_features package."""
    found = [("rustiz.py", os.path.join(ROOT, "rustiz.py"))]
    for folder, folders, names in os.walk(os.path.join(ROOT, "rustiz_features")):
        folders[:] = sorted(name for name in folders if name != "__pycache__")
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                found.append((os.path.relpath(path, ROOT).replace(os.sep, "/"), path))
    return sorted(found)


def compiled_modules(sources: list) -> dict:
    """name -> the .pyc that start-up loads instead of compiling that source.

    Hash-based (PEP 552), so the build stays reproducible, and unchecked: each is packed beside the very
    source it was compiled from, so it cannot go stale, and zipimport need not read and hash that
    source on every import. optimize=2 leaves out docstrings (rustiz never reads its own), which makes
    the files smaller and quicker to load; the sources in the archive still serve tracebacks."""
    compiled = {}
    with tempfile.TemporaryDirectory() as scratch:
        jobs = [(path, os.path.join(scratch, f"{index}.pyc"), name) for index, (name, path) in enumerate(sources)]
        # A fresh interpreter, so the marshalled bytes do not depend on this process's state; without the
        # column positions of each instruction (-X no_debug_ranges), which are a third of a compressed .pyc
        # and only draw the ^^^ under a traceback's line (the line numbers stay).
        subprocess.run([sys.executable, "-X", "no_debug_ranges", "-c",
                        "import json, sys\nsys.path.insert(0, sys.argv[1])\nimport build_zipapp\n"
                        "for source, target, name in json.loads(sys.argv[2]):\n"
                        "    build_zipapp.compile_to_pyc(source, target, name)",
                        ROOT, json.dumps(jobs)], check=True)
        for _, target, name in jobs:
            with open(target, "rb") as handle:
                compiled[name[:-3] + ".pyc"] = handle.read()
    return compiled


def compile_to_pyc(source_path: str, target: str, name: str) -> None:
    """What py_compile writes with optimize=2 and PycInvalidationMode.UNCHECKED_HASH, compiled from the source
    less its function annotations: nothing reads them at run time (the source beside the .pyc keeps them for
    readers and type checkers), and they are about 3% of a compressed .pyc. Class-level annotations stay: a
    NamedTuple's annotations are its fields."""
    with open(source_path, "rb") as handle:
        source = handle.read()
    tree = ast.parse(source, name)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
            parameters = node.args
            for parameter in (*parameters.posonlyargs, *parameters.args, *parameters.kwonlyargs,
                              parameters.vararg, parameters.kwarg):
                if parameter is not None:
                    parameter.annotation = None
    code = compile(tree, name, "exec", dont_inherit=True, optimize=2)
    unchecked_hash_based = (0b01).to_bytes(4, "little")  # PEP 552 flags: hash-based, source not checked
    with open(target, "wb") as handle:
        handle.write(importlib.util.MAGIC_NUMBER + unchecked_hash_based + importlib.util.source_hash(source)
                     + marshal.dumps(code))


def web_files() -> list:
    web = os.path.join(ROOT, "web")
    found = []
    for folder, _, names in os.walk(web):
        for name in names:
            path = os.path.join(folder, name)
            found.append((os.path.relpath(path, ROOT).replace(os.sep, "/"), path))
    return sorted(found)


def speedup_files(scratch: str) -> dict:
    """Download the orjson and uvloop wheels for this interpreter and return their unpacked files."""
    wheels = os.path.join(scratch, "wheels")
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--no-deps",
                    "--dest", wheels, *SPEEDUP_PACKAGES], check=True)
    unpacked = os.path.join(scratch, "unpacked")
    for wheel in sorted(os.listdir(wheels)):
        with zipfile.ZipFile(os.path.join(wheels, wheel)) as archive:
            archive.extractall(unpacked)
    strip = shutil.which("strip")
    files = {}
    for folder, _, names in os.walk(unpacked):
        for name in names:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, unpacked).replace(os.sep, "/")
            if ".dist-info/" in relative and not relative.endswith(("METADATA", "LICENSE", "LICENSE.txt")):
                continue
            if name.endswith(".so") and strip:
                # Debug symbols are most of an extension's size and nothing at run time needs them.
                subprocess.run([strip, "--strip-unneeded", path], check=True)
            with open(path, "rb") as handle:
                files[relative] = handle.read()
    return files


def platform_tag() -> str:
    """The tag rustiz compares at start-up, from rustiz itself so the two never disagree."""
    sys.path.insert(0, ROOT)
    import rustiz
    return rustiz.platform_tag()


# The platforms' modules ship as sources alone: each is compiled once per process, on the first publish or
# connect to its platform (milliseconds, beside a network call), so a new platform costs the archive its
# compressed source only (about 5 KB) instead of source and bytecode (about 15 KB). So do the modules only a
# scaled-out instance loads (PostgreSQL, a bucket, `db copy`), compiled once when a process starts with them,
# those only a command loads (the CLI's table, backup, restore, doctor), compiled by the command that runs,
# the OpenAPI document's builder, run once per process on its first request, and the routes an operator calls
# now and then: posts import and export, analytics, single sign-on, the team and its mail, the audit log, client
# review links, connecting a channel, metrics and alerts, the libraries (tags, signatures, sets), the queue's
# settings, API keys and the review of drafts, RSS autopost, with the storage only those use.
COMPILED_ON_FIRST_USE = ("rustiz_features/publishers/", "rustiz_features/postgres.py",
                         "rustiz_features/object_storage.py", "rustiz_features/db_copy.py",
                         "rustiz_features/cli.py", "rustiz_features/ops.py", "rustiz_features/openapi.py",
                         "rustiz_features/posts_files.py", "rustiz_features/analytics.py",
                         "rustiz_features/oidc.py", "rustiz_features/jwt.py", "rustiz_features/elliptic.py",
                         "rustiz_features/team.py", "rustiz_features/mail.py", "rustiz_features/digest.py",
                         "rustiz_features/audit.py", "rustiz_features/client_review.py",
                         "rustiz_features/preview_links.py", "rustiz_features/connect.py",
                         "rustiz_features/metrics.py", "rustiz_features/alerts.py",
                         "rustiz_features/api_library.py", "rustiz_features/api_queue.py",
                         "rustiz_features/api_keys.py", "rustiz_features/review.py",
                         "rustiz_features/storage/mail.py", "rustiz_features/storage/members.py",
                         "rustiz_features/storage/audit.py", "rustiz_features/storage/alerts.py",
                         "rustiz_features/storage/oauth.py", "rustiz_features/autopost.py",
                         "rustiz_features/feeds.py", "rustiz_features/storage/autopost.py",
                         "rustiz_features/oauth_server.py", "rustiz_features/oauth_consent.py",
                         "rustiz_features/storage/oauth_server.py", "rustiz_features/short_links.py",
                         "rustiz_features/storage/short_links.py", "rustiz_features/analytics_snapshots.py",
                         "rustiz_features/storage/analytics.py", "rustiz_features/evergreen.py",
                         "rustiz_features/storage/preview_links.py", "rustiz_features/bech32.py",
                         "rustiz_features/telegram_bot.py", "rustiz_features/storage/telegram_bot.py",
                         "rustiz_features/platform_delete.py", "rustiz_features/media_library.py",
                         "rustiz_features/storage/media_library.py", "rustiz_features/storage/review.py",
                         "rustiz_features/storage/comments.py", "rustiz_features/storage/sets.py",
                         "rustiz_features/storage/signatures.py", "rustiz_features/queue.py",
                         "rustiz_features/storage/queue.py", "rustiz_features/storage/platform_delete.py")
# Every feature module's source is packed without its comments and docstrings (the repository has them),
# every line staying where it was: it is compiled from, or serves tracebacks beside its .pyc. The core, the
# file an operator reads first, keeps its own.
WITHOUT_COMMENTARY = "rustiz_features/"


def without_commentary(source: bytes, name: str) -> bytes:
    """`source` with its comments removed and each docstring an empty string spanning the same lines, so that
    a traceback's line numbers and code lines are the repository's. Checked: the bytecode is unchanged."""
    text = source.decode()
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(row: int, column: int, in_bytes: bool = False) -> int:
        line = text[starts[row - 1]:starts[row]]
        return starts[row - 1] + (len(line.encode()[:column].decode()) if in_bytes else column)

    edits = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            start = offset(*token.start)
            while start > 0 and text[start - 1] in " \t":
                start -= 1  # the spaces before it too
            edits.append((start, offset(*token.end), ""))
    for node in ast.walk(ast.parse(text, name)):
        body = getattr(node, "body", None) if isinstance(
            node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) else None
        first = body[0] if body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            empty = '"""' + "\n" * (first.end_lineno - first.lineno) + '"""'
            edits.append((offset(first.lineno, first.col_offset, True),
                          offset(first.end_lineno, first.end_col_offset, True), empty))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    stripped = text.encode()
    if code_and_lines(compile(stripped, name, "exec", dont_inherit=True, optimize=2)) != code_and_lines(
            compile(source, name, "exec", dont_inherit=True, optimize=2)):
        raise SystemExit(f"{name}: leaving out its comments and docstrings changed its code")
    return stripped


def code_and_lines(code: Any) -> tuple:
    """What a code object does and the line of each instruction, its nested code objects' too (not the columns,
    which an emptied docstring changes)."""
    constants = tuple(code_and_lines(constant) if hasattr(constant, "co_code") else constant
                      for constant in code.co_consts)
    return code.co_code, constants, code.co_names, code.co_varnames, tuple(code.co_lines())


def build(output: str, with_speedups: bool) -> int:
    sources = python_sources()
    compiled = compiled_modules([(name, path) for name, path in sources if not name.startswith(COMPILED_ON_FIRST_USE)])
    buffer = io.BytesIO()
    buffer.write(b"#!/usr/bin/env python3\n")  # before the archive, so its offsets account for it
    with zipfile.ZipFile(buffer, "w") as archive:
        add_file(archive, "__main__.py", MAIN.encode())
        for name, path in sources:
            with open(path, "rb") as handle:
                source = handle.read()
            add_file(archive, name, without_commentary(source, name) if name.startswith(WITHOUT_COMMENTARY)
                     else source)
            if name[:-3] + ".pyc" in compiled:
                add_file(archive, name[:-3] + ".pyc", compiled[name[:-3] + ".pyc"])
        for name, path in web_files():
            with open(path, "rb") as handle:
                add_file(archive, name, handle.read())
        if with_speedups:
            with tempfile.TemporaryDirectory() as scratch:
                files = speedup_files(scratch)
            digest = hashlib.sha256()
            for name in sorted(files):
                digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
            manifest = {"tag": platform_tag(), "digest": digest.hexdigest(), "files": sorted(files)}
            add_file(archive, "_speedups/manifest.json", json.dumps(manifest, indent=1).encode())
            for name in sorted(files):
                add_file(archive, f"_speedups/files/{name}", files[name])
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    temporary = output + ".tmp"
    with open(temporary, "wb") as handle:
        handle.write(buffer.getvalue())
    os.chmod(temporary, 0o755)
    os.replace(temporary, output)
    print(f"{output}: {os.path.getsize(output)} bytes")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--with-speedups", action="store_true",
                        help="also pack the orjson and uvloop wheels for this Python and platform")
    parser.add_argument("--output", default=os.path.join(ROOT, "dist", "rustiz.pyz"),
                        help="where to write the archive (default: dist/rustiz.pyz)")
    arguments = parser.parse_args()
    return build(arguments.output, arguments.with_speedups)


if __name__ == "__main__":
    sys.exit(main())
