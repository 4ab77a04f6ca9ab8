"""The documentation's shell samples, run as written against a real `serve` on loopback, and
the rules that keep every code sample a file CI runs.

README.md and the docs pages (`docs/**/*.md`, built by MkDocs) hold no sample of their own:

- a page's sample fence (`python`, `sh`, `bash`, `shell`, `console`, bare, `yaml`,
  `javascript`, `typescript` ...: SAMPLE_LANGUAGES) holds only snippet lines,
  `--8<-- "docs/snippets/NAME"` (pymdownx.snippets includes the file when the site is built);
  output and synopses go in `text` fences;
- README.md, which GitHub shows unbuilt, holds copies: each of its code blocks is exactly the
  content of a file under docs/snippets/;
- every shell snippet (`docs/snippets/*.sh`) has an entry in `docs/snippets/checks.yaml`:

      NAME.sh:
        serve: [OPTIONS]          run against `python -m mockserver serve OPTIONS`
        expect:                   one line per command of the snippet, in order: the HTTP
          - '200'                 status its curl answered (or `exit N`, the command's exit
          - '201 "count":null'    status) and, optionally, text its output must contain
          - 'exit 0'
      OTHER.sh:
        skip: WHY                 not run here, and why (runs until stopped, needs Docker)

mockserver/conform/README.md and examples/*/README* (not part of the site's own pages) keep
the older convention: an HTML comment right above each shell block,

    <!-- readme-test: skip WHY -->  or  <!-- readme-test: run [serve OPTIONS]
    200 ...                                (the same expectation lines)
    -->

A command is a line of the block (lines ending in `\\` continue it); blank and comment lines
are not commands. Each run block gets a fresh server on a free loopback port: `:8080` in a
command is replaced by that port, and nothing else is changed. `curl` is the system's, with a
`--write-out` added that reports the status on stderr (stdout stays as the reader sees it);
`python` is the test's interpreter. A block without an entry or comment, or whose expectations
do not match its commands, fails the test, so a change cannot skip it silently.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SNIPPETS = DOCS / "snippets"
CHECKS = SNIPPETS / "checks.yaml"
SHELL_LANGUAGES = {"", "sh", "bash", "shell", "console"}
SAMPLE_LANGUAGES = SHELL_LANGUAGES | {"python", "py", "yaml", "yml", "javascript", "js", "mjs",
                                      "typescript", "ts"}
FENCE = re.compile(r"^```(\S*)(?:\s+[^`]*)?$")  # a language, then attributes (title=...)
MARKER = re.compile(r"<!--\s*readme-test:\s*(.*?)-->\s*$", re.S)
INCLUDE = re.compile(r'^--8<-- "([^"]+)"$')
STATUS_MARK = "readme-test-status"
README_MAX_LINES = 200


def readmes() -> list[Path]:
    """The files that keep the comment convention (the site's pages use snippets)."""
    return [ROOT / "mockserver" / "conform" / "README.md",
            *sorted(ROOT.glob("examples/*/README*"))]


def pages() -> list[Path]:
    """The site's Markdown: docs/ (drafts in docs/_incoming are not built) and README.md."""
    return [ROOT / "README.md", *sorted(
        p for p in DOCS.rglob("*.md")
        if p.relative_to(DOCS).parts[0] not in ("_incoming", "snippets", "hooks"))]


def fences(path: Path) -> list[tuple[int, str, list[str]]]:
    """Every fenced block of a Markdown file: its line (1-based), language and lines."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    index = 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        found.append((index + 1, fence.group(1).lower(), lines[index + 1:end]))
        index = end + 1
    return found


def snippet_marker(entry: dict[str, object]) -> str:
    """A checks.yaml entry in the comment convention's words (`run ...` or `skip WHY`)."""
    if "skip" in entry:
        return f"skip {entry['skip']}"
    options = entry.get("serve") or []
    expect = entry.get("expect") or []
    assert isinstance(options, list) and isinstance(expect, list), entry
    return "\n".join([" ".join(["run", *(["serve", *map(str, options)] if options else [])]),
                      *map(str, expect)])


def snippet_blocks() -> list[Block]:
    checks = yaml.safe_load(CHECKS.read_text(encoding="utf-8")) or {}
    blocks = []
    for path in sorted(SNIPPETS.glob("*.sh")):
        entry = checks.get(path.name)
        lines = path.read_text(encoding="utf-8").splitlines()
        blocks.append(Block(path, 1, None if entry is None else snippet_marker(entry),
                            _commands(lines)))
    return blocks


@dataclass(frozen=True)
class Block:
    """One fenced shell block and the comment above it."""

    file: Path
    line: int  # of the opening fence, 1-based
    marker: str | None  # the comment's text after `readme-test:`
    commands: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


def _commands(lines: list[str]) -> tuple[str, ...]:
    commands: list[str] = []
    pending = ""
    for line in lines:
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        commands.append(pending + line)
        pending = ""
    if pending:
        commands.append(pending)
    return tuple(commands)


def shell_blocks(path: Path) -> list[Block]:
    """The shell blocks of a markdown file, each with the readme-test comment above it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        if fence.group(1).lower() in SHELL_LANGUAGES:
            blocks.append(Block(path, index + 1, _marker_above(lines, index),
                                _commands(lines[index + 1:end])))
        index = end + 1
    return blocks


def _marker_above(lines: list[str], fence: int) -> str | None:
    """The readme-test comment ending on the last non-blank line above the fence."""
    end = fence - 1
    while end >= 0 and not lines[end].strip():
        end -= 1
    if end < 0 or not lines[end].rstrip().endswith("-->"):
        return None
    start = end
    while start > 0 and "<!--" not in lines[start]:
        start -= 1
    found = MARKER.search("\n".join(lines[start:end + 1]))
    return found.group(1).strip() if found else None


ALL_BLOCKS = [*snippet_blocks(), *(block for path in readmes() for block in shell_blocks(path))]
RUN_BLOCKS = [b for b in ALL_BLOCKS if b.marker is not None and b.marker.startswith("run")]


@dataclass(frozen=True)
class Expectation:
    status: int | None  # the curl's HTTP status
    exit: int | None  # or the command's exit status
    text: str  # its output contains this ("" for anything)


def expectations(block: Block) -> tuple[list[str], list[Expectation]]:
    """The serve options and one expectation per command of a run block."""
    assert block.marker is not None
    first, *rest = block.marker.splitlines()
    options = first.split()[1:]
    if options and options[0] == "serve":
        options = options[1:]
    elif options:
        raise AssertionError(f"{block.where}: 'run' takes only 'serve OPTIONS', got {first!r}")
    found = []
    for line in filter(str.strip, rest):
        head, _, text = line.strip().partition(" ")
        if head == "exit":
            code, _, text = text.partition(" ")
            found.append(Expectation(None, int(code), text.strip()))
        else:
            found.append(Expectation(int(head), None, text.strip()))
    return options, found


def test_every_shell_block_is_marked() -> None:
    unmarked = [b.where for b in ALL_BLOCKS if b.marker is None]
    assert not unmarked, ("shell blocks without a readme-test comment (see tests/test_readme.py"
                          f"): {', '.join(unmarked)}")
    for block in ALL_BLOCKS:
        assert block.marker is not None
        kind, *words = block.marker.split()
        reason = " ".join(words)
        assert kind in ("run", "skip"), f"{block.where}: readme-test {kind!r}: run or skip"
        if kind == "skip":
            assert reason, f"{block.where}: a skipped block says why"
        else:
            assert len(expectations(block)[1]) == len(block.commands), (
                f"{block.where}: {len(block.commands)} commands, "
                f"{len(expectations(block)[1])} expectations")
    assert RUN_BLOCKS, "no README block is run"


def test_every_shell_snippet_has_one_entry() -> None:
    checks = yaml.safe_load(CHECKS.read_text(encoding="utf-8"))
    names = {p.name for p in SNIPPETS.glob("*.sh")}
    assert set(checks) == names, (f"checks.yaml without a snippet: {sorted(set(checks) - names)}; "
                                  f"snippets without an entry: {sorted(names - set(checks))}")
    for name, entry in checks.items():
        assert set(entry) in ({"skip"}, {"serve", "expect"}), f"{name}: {entry}"


def test_pages_include_their_samples() -> None:
    """A docs page's code sample (Python, shell, YAML, JavaScript, TypeScript) is a file
    (included when the site is built), never a copy; output and synopses are `text`."""
    for page in pages()[1:]:
        for line, language, body in fences(page):
            if language not in SAMPLE_LANGUAGES:
                continue
            where = f"{page.relative_to(ROOT)}:{line}"
            assert body, f"{where}: an empty sample"
            for text in body:
                found = INCLUDE.match(text.strip())
                assert found, (f"{where}: a {language or 'bare'} fence holds {text!r}: put the "
                               "sample in docs/snippets/ and include it (--8<-- \"PATH\")")
                assert (ROOT / found.group(1)).is_file(), f"{where}: no file {found.group(1)}"


def test_readme_is_a_front_page_of_snippet_copies() -> None:
    """README.md: at most 200 lines, no test comments, every code block a snippet's content."""
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES, len(text.splitlines())
    assert "readme-test" not in text and "<!--" not in text
    snippets = {p.read_text(encoding="utf-8"): p.name for p in SNIPPETS.iterdir() if p.is_file()}
    blocks = fences(readme)
    assert any(language == "python" for _, language, _ in blocks)
    for line, language, body in blocks:
        content = "\n".join(body) + "\n"
        assert content in snippets, (
            f"README.md:{line}: this {language or 'bare'} block is not the content of a file "
            "in docs/snippets/ (copy it from there, or add it there and to checks.yaml)")


TEST_NAME = re.compile(r"`((?:[\w/]+/)?test_\w+\.py)?(?:::(\w+))?`")


def named_tests(text: str) -> list[tuple[str, str | None]]:
    """The tests a page names in backticks: `dir/test_x.py::test_y`, `dir/test_x.py` (all of
    it), and `::test_z` (a test of the file named last before it on the same line)."""
    found: list[tuple[str, str | None]] = []
    for line in text.splitlines():
        current = None
        for match in TEST_NAME.finditer(line):
            path, name = match.groups()
            if path is None and name is None:
                continue
            current = path or current
            assert current is not None, f"{match.group(0)} names no file before it: {line}"
            found.append((current, name))
    return found


def test_security_guarantees_name_tests_that_exist() -> None:
    """README's Security section gives each guarantee a `file::test` that holds it, and every
    test it and docs/security.md name (under tests/) exists."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Security\n", 1)[1].split("\n## ", 1)[0]
    items = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(items) >= 15, items  # one line per guarantee of issue 38 (and round 1)
    for item in items:
        assert any(name for _, name in named_tests(item)), f"names no test by name: {item}"
    security = (DOCS / "security.md").read_text(encoding="utf-8")
    named = named_tests(section) + named_tests(security)
    assert len(named) > 60, len(named)
    for path, name in named:
        file = ROOT / "tests" / path
        assert file.is_file(), f"no test file tests/{path}"
        if name is not None:
            source = file.read_text(encoding="utf-8")
            assert re.search(rf"^(async )?def {name}\(", source, re.M), (
                f"tests/{path} has no test {name}")


def test_the_marker_parser() -> None:
    text = ("Intro\n\n<!-- readme-test: run serve --rate-limit 0\n200 \"a\":1\nexit 0\n-->\n"
            "```sh\ncurl -X POST \\\n  localhost:8080/x   # note\n# a comment\n\npython -V\n```\n"
            "```python\nprint()\n```\n```\nbare\n```\n")
    path = ROOT / "tests" / "_readme_probe.md"
    try:
        path.write_text(text, encoding="utf-8")
        first, bare = shell_blocks(path)
    finally:
        path.unlink()
    assert first.commands == ("curl -X POST    localhost:8080/x   # note", "python -V")
    assert expectations(first) == (["--rate-limit", "0"], [Expectation(200, None, '"a":1'),
                                                         Expectation(None, 0, "")])
    assert bare.marker is None and bare.commands == ("bare",)


# -- running them ------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def shims(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`curl` reporting its status on stderr, `python` the test's interpreter."""
    curl = shutil.which("curl")
    assert curl, "the README test needs curl (apt-get install curl)"
    folder = tmp_path_factory.mktemp("readme-bin")
    (folder / "curl").write_text(
        f"#!/bin/sh\nexec {curl} \"$@\" --write-out '%{{stderr}}{STATUS_MARK} %{{http_code}}\\n'\n")
    (folder / "curl").chmod(0o755)
    # A script, not a symlink: a venv's interpreter reached through a link elsewhere finds no
    # pyvenv.cfg beside it and runs without the venv's packages (mockserver among them).
    (folder / "python").write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    (folder / "python").chmod(0o755)
    return folder


@pytest.fixture
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[int]:
    """A `serve` with the block's options on a free loopback port; yields the port."""
    options: list[str] = request.param
    port = _free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "mockserver", "serve", "--port", str(port), "--quiet",
             *options], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            try:
                httpx.get(f"http://127.0.0.1:{port}/__mock__/clock", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "serve did not start within 60 s"
                time.sleep(0.1)
        yield port
    finally:
        process.kill()
        process.wait(20)


def _run(command: str, port: int, shims: Path, cwd: Path) -> tuple[int, int | None, str]:
    """Exit status, curl's HTTP status (None without curl) and stdout of one command."""
    command = command.replace(":8080", f":{port}")
    env = {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=60)
    statuses = re.findall(rf"^{STATUS_MARK} (\d+)$", done.stderr, re.M)
    return done.returncode, (int(statuses[-1]) if statuses else None), done.stdout


@pytest.mark.parametrize(("block", "served"),
                         [pytest.param(b, expectations(b)[0], id=b.where) for b in RUN_BLOCKS],
                         indirect=["served"])
def test_readme_block_runs_as_written(block: Block, served: int, shims: Path,
                                      tmp_path: Path) -> None:
    _, wanted = expectations(block)
    for command, expected in zip(block.commands, wanted, strict=True):
        code, status, out = _run(command, served, shims, tmp_path)
        said = f"{block.where}: `{command}` exited {code}, HTTP {status}, printed {out[:300]!r}"
        if expected.exit is not None:
            assert code == expected.exit, said
        else:
            assert code == 0 and status == expected.status, said
        assert expected.text in out, said
