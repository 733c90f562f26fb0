"""Postiz's backend installed and built in .bench/postiz/src (BENCH_POSTIZ=1; issue 16), before anything is
measured: it keeps both cores busy for minutes.

Rules: standard library only. The source is POSTIZ_SRC's HEAD (a work tree or a bare/mirror git directory),
a plain folder, or a clone of gitroomhq/postiz-app at POSTIZ_COMMIT; it is copied, never changed. One change
to Postiz, said in the report: it pins Prisma 6.5.0, whose Rust query engine is downloaded at install time
from a host that machines without general internet access cannot reach, so Prisma 6.19.3's engine-free
mode (engineType "client" with @prisma/adapter-pg) replaces it; bcrypt's prebuilt binary (also a download)
is built from source. The built copy is kept and reused while the commit, the recipe and Node are the
same. A step that cannot be done here is named in a note ("Postiz rows skipped: ...") and the Postiz rows
are skipped. Run by bench.sh as `python3 -m bench.postiz_prepare` (see bench/common.py): records the scalars
PZ_COMMIT_USED and PZ_PREP_S, and writes .bench/postiz/ready when the backend can run.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import time

from bench.common import Context, log, note, read_text, record, stop_on_sigterm

POSTIZ_COMMIT = "74b01ada154a177242d558bedc646fcfed100adf"  # 2026-08-21; the commit this recipe was made on
POSTIZ_RECIPE = 1  # bump when the preparation changes, so that an older prepared copy is not reused
BACKEND_MAIN = "dist/apps/backend/src/main.js"  # what nest build makes, under apps/backend
SCHEMA = "libraries/nestjs-libraries/src/database/prisma/schema.prisma"
PRISMA_SERVICE = "libraries/nestjs-libraries/src/database/prisma/prisma.service.ts"


class Skipped(Exception):
    """A step that could not be done: the Postiz rows are skipped, and the note says why."""


def folder(context: Context) -> str:
    return os.path.join(context.bench_dir, "postiz")


def prisma_env(postiz: str) -> dict:
    """Prisma's CLI told the engines are at an empty file, so that it never tries to download one."""
    return {"PRISMA_QUERY_ENGINE_LIBRARY": f"{postiz}/no-engine", "PRISMA_SCHEMA_ENGINE_BINARY": f"{postiz}/no-engine",
            "PRISMA_HIDE_UPDATE_MESSAGE": "1", "CHECKPOINT_DISABLE": "1",
            "DATABASE_URL": "postgresql://postiz@127.0.0.1:1/postiz"}


def step(context: Context, what: str, seconds: int, name: str, command: list, cwd: str = None, env: dict = None) -> None:
    """One preparation step, logged in .bench/results/postiz-NAME.log; Skipped names it when it fails."""
    log(f"Postiz: {what}")
    log_path = context.raw(f"postiz-{name}.log")
    with open(log_path, "wb") as output:
        failed = subprocess.run(["timeout", str(seconds), *command], stdout=output, stderr=subprocess.STDOUT, cwd=cwd,
                                env={**os.environ, **(env or {})}).returncode != 0
    if failed:
        with open(log_path, encoding="utf-8", errors="replace") as written:
            tail = " ".join(written.read().splitlines()[-2:])
        raise Skipped(f"{what} failed (see .bench/results/postiz-{name}.log: {tail[:200]})")


def check_tools(context: Context) -> None:
    """Node 20 or newer, and what Debian gives (installed when allowed; its services kept from starting)."""
    if not (shutil.which("node") and shutil.which("npm")):
        raise Skipped("no node/npm on this machine (Debian: apt-get install nodejs npm)")
    version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    major = int(re.match(r"v(\d+)", version).group(1)) if re.match(r"v(\d+)", version) else 0
    if major < 20:
        raise Skipped(f"Node {version} is too old (Postiz asks for 22.12; 20 works)")
    if major < 22:
        note(f"Postiz is run on Node {version} here (its package.json asks for >= 22.12; pnpm only warns)")
    missing = [package for package, present in (
        ("postgresql", glob.glob("/usr/lib/postgresql/*/bin/initdb")), ("postgresql-client", shutil.which("psql")),
        ("redis-server", shutil.which("redis-server")), ("make g++", shutil.which("make") and shutil.which("g++")),
        ("libnode-dev", os.path.isfile("/usr/include/node/node.h")), ("git", shutil.which("git"))) if not present]
    if missing:
        install_from_debian(context, " ".join(missing).split())


def install_from_debian(context: Context, packages: list) -> None:
    listed = " ".join(packages)
    if os.environ.get("BENCH_NO_INSTALL") == "1" or os.getuid() != 0 or not shutil.which("apt-get"):
        raise Skipped(f"missing {listed} (apt-get install {listed}{'' if shutil.which('apt-get') else '; no apt-get here'})")
    log(f"installing from Debian for Postiz: {listed}")
    # A policy-rc.d that says no while installing: Debian's redis-server and postgresql packages start a service
    # of their own (port 6379, a cluster on 5432) that would outlive this run.
    policy, made = "/usr/sbin/policy-rc.d", False
    if not os.path.exists(policy):
        with open(policy, "w") as refusing:
            refusing.write("#!/bin/sh\nexit 101\n")
        os.chmod(policy, 0o755)
        made = True
    try:
        with open(context.raw("postiz-apt.log"), "wb") as output:
            done = subprocess.run(["timeout", "300", "apt-get", "update", "-qq"], stdout=output,
                                  stderr=subprocess.STDOUT).returncode == 0 and subprocess.run(
                ["timeout", "900", "apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages], stdout=output,
                stderr=subprocess.STDOUT, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}).returncode == 0
    finally:
        if made:
            os.remove(policy)
    if not done:
        raise Skipped(f"apt-get install {listed} failed (see .bench/results/postiz-apt.log)")


def is_git(path: str) -> bool:
    """A work tree or a bare/mirror git directory of its own (not a folder inside another repository)."""
    bare = subprocess.run(["git", "-C", path, "rev-parse", "--is-bare-repository"], capture_output=True, text=True)
    return os.path.exists(os.path.join(path, ".git")) or bare.stdout.strip() == "true"


def source(context: Context) -> tuple:
    """(the folder to copy from, its commit): POSTIZ_SRC's, or a clone at POSTIZ_COMMIT."""
    given = os.environ.get("POSTIZ_SRC", "")
    if given:
        if not os.path.isdir(given):
            raise Skipped(f"POSTIZ_SRC={given} is not a folder")
        origin = os.path.abspath(given)
        commit = f"folder:{origin}"
        if is_git(origin):
            commit = subprocess.run(["git", "-C", origin, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        return origin, commit
    clone = os.path.join(folder(context), "clone")
    head = subprocess.run(["git", "-C", clone, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    if head != POSTIZ_COMMIT:
        shutil.rmtree(clone, ignore_errors=True)
        try:
            step(context, "cloning gitroomhq/postiz-app (no POSTIZ_SRC given)", 900, "clone",
                 ["git", "clone", "--quiet", "--no-checkout", "https://github.com/gitroomhq/postiz-app.git", clone])
        except Skipped:
            note("set POSTIZ_SRC to a Postiz checkout on a machine that cannot reach GitHub")
            raise
        with open(context.raw("postiz-clone.log"), "ab") as output:
            if subprocess.run(["git", "-C", clone, "checkout", "--quiet", POSTIZ_COMMIT], stderr=output).returncode != 0:
                raise Skipped(f"commit {POSTIZ_COMMIT} not in the clone")
    return clone, POSTIZ_COMMIT


def copy_source(origin: str, target: str) -> None:
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    if is_git(origin):
        archive = "git -C \"$1\" archive --format=tar HEAD | tar -x -C \"$2\""
    else:
        archive = "tar -C \"$1\" --exclude=./node_modules --exclude=dist -cf - . | tar -x -C \"$2\""
    if subprocess.run(["bash", "-o", "pipefail", "-c", archive, "copy", origin, target]).returncode != 0:
        raise Skipped(f"{'git archive of' if is_git(origin) else 'copying'} {origin} failed")


def prepare(context: Context) -> None:
    """Install and build Postiz's backend in .bench/postiz/src; Skipped says which step could not be done."""
    started = time.time()
    postiz = folder(context)
    os.makedirs(postiz, exist_ok=True)
    check_tools(context)
    origin, commit = source(context)
    record("scalar", "PZ_COMMIT_USED", commit)
    if commit != POSTIZ_COMMIT:
        note(f"Postiz source at {commit}, not the pinned {POSTIZ_COMMIT[:8]}: the two changes below may not apply as they are")
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    stamp, src = f"{commit} recipe {POSTIZ_RECIPE} node {node}", os.path.join(postiz, "src")
    ready_stamp = os.path.join(src, ".bench-ready")
    if read_text(ready_stamp).strip() == stamp and os.environ.get("BENCH_POSTIZ_REBUILD") != "1":
        log(f"Postiz: reusing the copy prepared in {src} ({stamp})")
        record("scalar", "PZ_PREP_S", "0")
        return
    copy_source(origin, src)
    install(context, postiz, src)
    with open(ready_stamp, "w") as written:
        written.write(stamp + "\n")
    record("scalar", "PZ_PREP_S", str(int(time.time() - started)))


def install(context: Context, postiz: str, src: str) -> None:
    """pnpm install, Prisma 6.19.3 engine-free beside it, bcrypt from source, nest build."""
    # pnpm as Postiz pins it; its install without scripts: Postiz's postinstall runs `pnpm dlx prisma@6.5.0
    # generate`, the step that downloads the Rust engine.
    pnpm = f"{postiz}/tools/node_modules/.bin/pnpm"
    if not os.access(pnpm, os.X_OK):
        step(context, "npm install pnpm@10.6.1", 600, "npm-pnpm",
             ["npm", "i", "--prefix", f"{postiz}/tools", "--no-audit", "--no-fund", "pnpm@10.6.1"])
    step(context, "pnpm install --frozen-lockfile --ignore-scripts (about 4,000 packages)", 2400, "pnpm-install",
         [pnpm, "install", "--frozen-lockfile", "--ignore-scripts", "--store-dir", f"{postiz}/pnpm-store"], cwd=src)
    engine_free_prisma(context, postiz, src)
    # bcrypt 5.1.1's prebuilt binary is another download: built from source against Node's headers.
    step(context, "building bcrypt from source", 600, "bcrypt",
         ["node", f"{src}/node_modules/@mapbox/node-pre-gyp/bin/node-pre-gyp", "install", "--fallback-to-build",
          "--nodedir=/usr"], cwd=f"{src}/node_modules/bcrypt")
    step(context, "nest build (the backend)", 1800, "nest-build", [f"{src}/node_modules/.bin/nest", "build"],
         cwd=f"{src}/apps/backend", env={"NODE_ENV": "production"})
    if not os.path.isfile(f"{src}/apps/backend/{BACKEND_MAIN}"):
        raise Skipped(f"nest build made no apps/backend/{BACKEND_MAIN}")


def engine_free_schema(schema: str) -> str:
    """schema.prisma with `engineType = "client"` in its prisma-client-js generator."""
    changed = re.sub(r'^([ \t]*provider[ \t]*=[ \t]*"prisma-client-js")[ \t]*$', r'\1\n  engineType = "client"', schema,
                     flags=re.M)
    if not re.search(r'^  engineType = "client"', changed, re.M):
        raise Skipped('could not add engineType = "client" to schema.prisma\'s generator')
    return changed


def service_with_adapter(service: str) -> str:
    """prisma.service.ts passing a PrismaPg adapter on DATABASE_URL to PrismaClient's constructor."""
    changed = re.sub(r"^import \{ PrismaClient \} from '@prisma/client';",
                     lambda found: found.group(0) + "\nimport { PrismaPg } from '@prisma/adapter-pg';", service, flags=re.M)
    changed = re.sub(r"^([ \t]*)super\(\{[ \t]*$", lambda found: found.group(0) + "\n" + found.group(1)
                     + "  adapter: new PrismaPg({ connectionString: process.env.DATABASE_URL }),", changed, flags=re.M)
    if changed.count("PrismaPg") != 2:
        raise Skipped("could not pass the adapter in prisma.service.ts")
    return changed


def engine_free_prisma(context: Context, postiz: str, src: str) -> None:
    """Prisma 6.19.3 in a side folder, engine-free (the driver adapter does the database work in JavaScript),
    and the two changes to Postiz's own files: the generator's engine, and the adapter in PrismaService."""
    side, schema, service = f"{postiz}/prisma-6.19.3", f"{src}/{SCHEMA}", f"{src}/{PRISMA_SERVICE}"
    if not (os.path.isfile(schema) and os.path.isfile(service)):
        raise Skipped(f"no schema.prisma / prisma.service.ts where commit {POSTIZ_COMMIT[:8]} has them")
    if not os.access(f"{side}/node_modules/.bin/prisma", os.X_OK):
        step(context, "npm install prisma@6.19.3 @prisma/client@6.19.3 @prisma/adapter-pg@6.19.3 pg (no scripts)", 900,
             "npm-prisma", ["npm", "i", "--prefix", side, "--no-audit", "--no-fund", "--ignore-scripts", "prisma@6.19.3",
                            "@prisma/client@6.19.3", "@prisma/adapter-pg@6.19.3", "pg"])
    open(f"{postiz}/no-engine", "w").close()
    with open(os.path.join(context.files, "prisma.config.ts"), encoding="utf-8") as template:
        config = template.read().replace("@SCHEMA@", schema)
    with open(f"{side}/prisma.config.ts", "w", encoding="utf-8") as written:
        written.write(config)
    for path, change in ((schema, engine_free_schema), (service, service_with_adapter)):
        changed = change(read_text(path))
        with open(path, "w", encoding="utf-8") as written:
            written.write(changed)
    # Postiz's tree resolves @prisma/client, @prisma/adapter-pg and the generated .prisma/client to the side folder
    # (symlinks: Node and tsc follow them, so their own dependencies come from there too).
    os.makedirs(f"{src}/node_modules/@prisma", exist_ok=True)
    os.makedirs(f"{side}/node_modules/.prisma", exist_ok=True)
    for name in ("@prisma/client", "@prisma/adapter-pg", ".prisma"):
        link = f"{src}/node_modules/{name}"
        if os.path.islink(link) or os.path.isfile(link):
            os.remove(link)
        shutil.rmtree(link, ignore_errors=True)
        os.symlink(f"{side}/node_modules/{name}", link)
    step(context, "prisma generate (engineType client)", 600, "prisma-generate",
         ["node_modules/.bin/prisma", "generate", "--schema", schema], cwd=side, env=prisma_env(postiz))
    if os.path.exists(f"{postiz}/init.sql"):
        os.remove(f"{postiz}/init.sql")  # made again from this schema once PostgreSQL is up (bench/postiz.py)


def main() -> int:
    stop_on_sigterm()
    context = Context.from_environment()
    ready = os.path.join(folder(context), "ready")
    if os.path.exists(ready):
        os.remove(ready)
    try:
        prepare(context)
    except Skipped as reason:
        note(f"Postiz rows skipped: {reason}")
        return 0
    open(ready, "w").close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
