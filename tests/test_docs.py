"""README.md is a front page and docs/ the manual: README stays short and gives exactly the two set-up commands,
every RUSTIZ_* setting the code reads is in docs/configuration.md, and every relative link (with its #anchor)
in README.md and docs/*.md leads somewhere. Reads files only: no server."""
from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
SET_UP_COMMANDS = ["python3 build_zipapp.py && python3 dist/rustiz.pyz serve", "bash run_tests.sh"]


def markdown_files() -> list:
    return [README, *sorted(DOCS.glob("*.md"))]


def section(text: str, title_start: str) -> str:
    """The text under the level-2 heading that starts with `title_start`, up to the next level-2 heading."""
    match = re.search(rf"^## {re.escape(title_start)}.*?$(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"no '## {title_start}' section"
    return match.group(1)


def without_code_blocks(text: str) -> str:
    """Markdown without fenced and indented blocks, whose lines are neither headings nor links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return "\n".join(line for line in text.split("\n") if not line.startswith("    "))


def without_code(text: str) -> str:
    """Markdown without any code, inline code too, where brackets are not links."""
    return re.sub(r"`[^`\n]*`", "", without_code_blocks(text))


def anchors(path: Path) -> set:
    """The #anchors GitHub makes for a file's headings: lower case, punctuation dropped, spaces as hyphens,
    a repeated heading numbered -1, -2..."""
    found: set = set()
    for line in without_code_blocks(path.read_text(encoding="utf-8")).split("\n"):
        heading = re.match(r"^#{1,6} +(.*?) *#* *$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).replace("`", "").lower()).replace(" ", "-")
        unique, number = slug, 0
        while unique in found:
            number += 1
            unique = f"{slug}-{number}"
        found.add(unique)
    return found


def test_the_readme_is_a_front_page():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 300, f"README.md has {lines} lines; the manual belongs in docs/"


def test_the_readme_gives_exactly_the_two_set_up_commands():
    set_up = section(README.read_text(encoding="utf-8"), "Set-up on a fresh machine")
    commands = [line[4:] for line in set_up.split("\n") if line.startswith("    ") and line.strip()]
    assert commands == SET_UP_COMMANDS


def test_every_setting_the_code_reads_is_in_the_configuration_page():
    sources = [ROOT / "rustiz.py", *sorted((ROOT / "rustiz_features").rglob("*.py"))]
    names = {name for path in sources for name in re.findall(r"\bRUSTIZ_[A-Z0-9_]+", path.read_text(encoding="utf-8"))}
    documented = set(re.findall(r"\bRUSTIZ_[A-Z0-9_]+", (DOCS / "configuration.md").read_text(encoding="utf-8")))
    # A name ending in "_" is a prefix the code completes (RUSTIZ_<ID>_AUTH_URL): some documented name starts with it.
    missing = sorted(name for name in names if name != "RUSTIZ_" and
                     not (name in documented if not name.endswith("_") else any(d.startswith(name) for d in documented)))
    assert not missing, f"settings the code reads that docs/configuration.md does not name: {missing}"


def test_every_relative_link_resolves():
    broken = []
    for path in markdown_files():
        for target in re.findall(r"\]\(([^)\s]+)\)", without_code(path.read_text(encoding="utf-8"))):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and (linked.suffix != ".md" or anchor not in anchors(linked)):
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_readme_links_every_page_of_the_manual():
    readme = README.read_text(encoding="utf-8")
    unlinked = [page.name for page in sorted(DOCS.glob("*.md")) if f"(docs/{page.name}" not in readme]
    assert not unlinked, f"docs pages missing from README's table of contents: {unlinked}"
