"""The layout: rustiz.py is the core, which imports only the standard library when it loads, and feature
modules later only from the sites CORE_TO_FEATURE_SITES names; the feature modules of rustiz_features/
import the core and one another as a DAG (imports inside functions count), and no underscore name crosses
from one module to another; and what a start-up loads, and when."""
from __future__ import annotations

import ast
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "rustiz_features"


def modules() -> dict:
    """Dotted module name -> its parsed source, for the core and every feature module."""
    found = {"rustiz": ast.parse((ROOT / "rustiz.py").read_text())}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = ast.parse(path.read_text())
    return found


def is_package(name: str) -> bool:
    return name == PACKAGE or (ROOT / Path(*name.split(".")) / "__init__.py").exists()


def resolved(name: str, node: ast.AST) -> list:
    """(imported module, names) of one `import` or `from ... import` statement of module `name`."""
    if isinstance(node, ast.Import):
        return [(alias.name, ()) for alias in node.names]
    base = node.module or ""
    if node.level:
        package = name if is_package(name) else name.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    names = tuple(alias.name for alias in node.names)
    # `from . import x` and `from .publishers import provider_for` name modules or attributes
    submodules = [f"{base}.{item}" for item in names if f"{base}.{item}" in modules_by_name]
    return [(base, names)] + [(submodule, ()) for submodule in submodules]


def load_time_imports(name: str, tree: ast.Module) -> list:
    """(imported module, names) of the imports that run when `name` loads: those at its top level, not
    inside functions or an `if TYPE_CHECKING:` block."""
    return [found for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
            for found in resolved(name, node)]


def is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def imports_anywhere(name: str, tree: ast.Module) -> list:
    """(imported module, names, site) of every import of `name`, at load time or inside a function (the site:
    the enclosing function, as "Class.method" or "outer.inner"; "" at the top level), but for the body of an
    `if TYPE_CHECKING:` block. A call to importlib.import_module whose argument names the package counts as
    an import of the package (the route table's loader)."""
    found = []

    def visit(node: ast.AST, site: str) -> None:
        for child in ast.iter_child_nodes(node):
            if is_type_checking_block(child):
                for branch in child.orelse:
                    visit_one(branch, site)
            else:
                visit_one(child, site)

    def visit_one(node: ast.AST, site: str) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.extend((module, names, site) for module, names in resolved(name, node))
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("importlib.import_module", "import_module") \
                and node.args and PACKAGE in ast.unparse(node.args[0]):
            found.append((PACKAGE, (), site))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            site = f"{site}.{node.name}" if site else node.name
        visit(node, site)

    visit(tree, "")
    return found


modules_by_name = modules()


# The core reaches feature modules only from these functions of rustiz.py (see docs/architecture.md), each
# importing inside the function so that a start-up loads none of them. The four doors:
CORE_TO_FEATURE_SITES = {
    "App.resolve": "the route table's lazy loader: a route's module, on the first request to one of its routes",
    "run_worker.start_scheduler": "the scheduler's start, once the server listens",
    "main": "the CLI dispatch: every command but init, serve and version is in rustiz_features/cli.py",
    "Store._open_postgres": "the PostgreSQL engine: its connections (rustiz_features/postgres.py)",
    "Store.listen_for_changes": "the PostgreSQL engine: LISTEN for the changes of other processes",
    # ...and the named exceptions, each loading a feature only when a setting or a moment calls for it:
    "_bucket_storage": "RUSTIZ_STORAGE names a bucket: object_storage checks its settings",
    "run_worker": "several workers: metrics shares their counters (GET /metrics sums them)",
    "App.http": "the worker's outbound client (http_client), made on its first use",
    "App.housekeeping": "the primary worker's sweep of uploads abandoned by a crash (media)",
}


def feature_graph() -> dict:
    """Feature module -> the feature modules it imports, at load time or inside its functions."""
    return {name: {imported for imported, _, _ in imports_anywhere(name, tree)
                   if imported.startswith(PACKAGE) and imported != name}
            for name, tree in modules_by_name.items() if name.startswith(PACKAGE)}


def test_the_core_imports_only_the_standard_library_when_it_loads():
    standard = sys.stdlib_module_names
    imported = {module.split(".")[0] for module, _ in load_time_imports("rustiz", modules_by_name["rustiz"])}
    assert imported - {"__future__"} <= standard, imported - standard


def function_sites(tree: ast.AST, site: str = "") -> set:
    """Every function of a module by its site name ("Class.method", "outer.inner")."""
    found = set()
    for node in ast.iter_child_nodes(tree):
        inner = site
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = f"{site}.{node.name}" if site else node.name
            if not isinstance(node, ast.ClassDef):
                found.add(inner)
        found |= function_sites(node, inner)
    return found


def test_the_core_imports_feature_modules_only_from_its_named_sites():
    """Inside functions too: a command, a handler or a helper of the core that needs a feature goes through
    one of CORE_TO_FEATURE_SITES (or moves beside the feature)."""
    core = modules_by_name["rustiz"]
    elsewhere = [f"{site or '(top level)'} imports {imported}" for imported, _, site in imports_anywhere("rustiz", core)
                 if imported.startswith(PACKAGE) and site not in CORE_TO_FEATURE_SITES]
    assert not elsewhere, elsewhere
    gone = sorted(set(CORE_TO_FEATURE_SITES) - function_sites(core))
    assert not gone, f"CORE_TO_FEATURE_SITES names functions rustiz.py no longer has: {gone}"


def test_feature_modules_import_one_another_as_a_graph_without_cycles():
    """Counting the imports inside functions: a cycle there is a cycle too, only deferred."""
    graph = feature_graph()
    visiting, done = [], set()

    def visit(module: str) -> None:
        if module in done:
            return
        assert module not in visiting, "import cycle: " + " -> ".join(visiting[visiting.index(module):] + [module])
        visiting.append(module)
        for imported in sorted(graph.get(module, ())):
            visit(imported)
        visiting.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)


def test_storage_modules_import_only_the_core_and_other_storage_modules():
    # storage sits below every feature: a handler or the scheduler calls it, never the other way round
    storage = f"{PACKAGE}.storage"
    upward = [f"{name} imports {imported}" for name, imported_modules in feature_graph().items()
              if name.startswith(storage) for imported in imported_modules if not imported.startswith(storage)]
    assert not upward, upward


def test_no_underscore_name_crosses_from_one_module_to_another():
    crossing = [f"{name} imports {imported}.{item}"
                for name, tree in modules_by_name.items()
                for imported, items, _ in imports_anywhere(name, tree)
                if imported == "rustiz" or imported.startswith(PACKAGE)
                for item in items if item.startswith("_") and item != "__future__"]
    assert not crossing, crossing


def test_refusals_are_raised_never_returned_beside_a_value():
    """A function that finds an organization, a limit or a message either returns it or raises ApiError with
    the refusal: none returns `Union[<value>, Response]` for its callers to test `type(x) is Response`."""
    mixed = []
    for name, tree in modules_by_name.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
                returned = ast.unparse(node.returns)
                if returned.startswith(("Union[", "Optional[")) and "Response" in returned and any(
                        kind in returned for kind in ("str", "list", "tuple", "dict")):
                    mixed.append(f"{name}.{node.name} -> {returned}")
    assert not mixed, mixed


def test_publishers_import_no_other_platform_and_nothing_imports_a_platform():
    from rustiz_features.publishers import PROVIDER_MODULES
    platforms = {f"{PACKAGE}.publishers.{module}" for module in PROVIDER_MODULES.values()}
    graph = feature_graph()
    importers = {module: sorted(imported & platforms) for module, imported in graph.items() if imported & platforms}
    assert not importers, f"platform modules are imported only through publishers.provider_for: {importers}"


def test_the_built_server_loads_no_feature_module_to_start(pyz):
    """`rustiz version` and a start-up load the core alone (python -X importtime lists every import)."""
    result = subprocess.run([sys.executable, "-X", "importtime", str(pyz), "version"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    loaded = [line for line in result.stderr.splitlines() if PACKAGE in line]
    assert not loaded, loaded


def test_every_provider_module_is_built_into_the_archive_as_its_source(pyz):
    """Platform modules are compiled on first use: the archive carries their sources, and bytecode only for
    the modules every server loads."""
    import zipfile
    from rustiz_features.publishers import PROVIDER_MODULES
    with zipfile.ZipFile(pyz) as archive:
        names = set(archive.namelist())
    for module in PROVIDER_MODULES.values():
        assert f"{PACKAGE}/publishers/{module}.py" in names and f"{PACKAGE}/publishers/{module}.pyc" not in names
    assert {"rustiz.pyc", f"{PACKAGE}/api_channels.pyc", f"{PACKAGE}/catalogue.pyc"} <= names


def imported_modules(stderr_lines: list) -> list:
    """The modules that `python -X importtime` (PYTHONPROFILEIMPORTTIME=1) reported in these lines, in order."""
    return [line.rsplit("|", 1)[1].strip() for line in stderr_lines if line.startswith("import time:")]


def test_the_server_is_ready_before_loading_the_scheduler_and_never_loads_the_cli_parser(start_server):
    """`serve` needs no argparse; the scheduler is loaded once the server listens, so neither delays the ready
    line; and a scheduler with nothing due loads none of what publishing needs (publishers, outbound client)."""
    server = start_server(env={"PYTHONPROFILEIMPORTTIME": "1"})
    deadline = time.monotonic() + 10
    while not any("scheduler running" in line for line in server.stderr_lines):
        assert time.monotonic() < deadline, "the scheduler did not start"
        time.sleep(0.02)
    lines = list(server.stderr_lines)
    ready = next(index for index, line in enumerate(lines) if " ready on " in line)
    assert [module for module in imported_modules(lines[:ready]) if module.startswith(PACKAGE)] == []
    loaded = set(imported_modules(lines))
    assert "argparse" not in loaded
    assert f"{PACKAGE}.scheduler" in loaded
    # (it reads the catalogue, whose descriptors name each platform's module, and loads none of those modules)
    assert loaded & {f"{PACKAGE}.publishers.base", f"{PACKAGE}.http_client"} == set()


def test_a_server_checking_api_keys_loads_no_openssl(server):
    """Keys are hashed with CPython's own SHA-256: hashlib would load OpenSSL's libcrypto, which costs every
    start some milliseconds and every idle server several MiB."""
    status, _, body = server.request("GET", "/public/v1/integrations", {"Authorization": server.key})
    assert (status, body) == (200, b"[]")
    with open(f"/proc/{server.process.pid}/maps") as handle:
        mapped = handle.read()
    assert "libcrypto" not in mapped and "_hashlib" not in mapped


def test_packed_platform_sources_keep_every_code_line_at_its_line_number(pyz):
    """The archive leaves the platform modules' comments and docstrings out, so a traceback's line numbers
    and code lines must still be the repository's."""
    import zipfile
    from rustiz_features.publishers import PROVIDER_MODULES
    sizes = [0, 0]
    with zipfile.ZipFile(pyz) as archive:
        for module in sorted(set(PROVIDER_MODULES.values()) | {"base", "oauth"}):
            packed = archive.read(f"{PACKAGE}/publishers/{module}.py").decode().splitlines()
            original = (ROOT / PACKAGE / "publishers" / f"{module}.py").read_text().splitlines()
            assert len(packed) == len(original), module
            for number, (line, source) in enumerate(zip(packed, original), 1):
                assert source.startswith(line) or line.strip() in ('"""', '""""""'), (module, number, line, source)
            sizes[0] += len("\n".join(packed))
            sizes[1] += len("\n".join(original))
    assert sizes[0] < 0.85 * sizes[1], sizes
