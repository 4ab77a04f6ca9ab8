"""The client generators the tests run, each once per test session (all xdist workers).

Versions are pinned: openapi-python-client and openapi-generator-cli (whose PyPI package ships
the generator's jar; it needs Java 17) in pyproject's dev extra, openapi-typescript and
TypeScript in package.json / package-lock.json. What they write goes to pytest's temporary
directory, never into the repository.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec" / "openapi.yaml"
BIN = Path(sys.executable).parent
NODE_BIN = ROOT / "node_modules" / ".bin"


def run(argv: list[str | Path], cwd: Path | None = None, timeout: float = 600) -> str:
    """Run a generator or compiler; its combined output, or a failure that shows it."""
    done = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    output = done.stdout + done.stderr
    if done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, argv))} exited {done.returncode}:\n{output[-6000:]}",
                    pytrace=False)
    return output


def built(tmp_path_factory: pytest.TempPathFactory, name: str,
          build: Callable[[Path], str]) -> tuple[Path, str]:
    """`build(target)` run once per session, whichever worker asks first: (target, its output).

    Workers of one xdist session share the parent of their temporary directories; a file lock
    there makes the others wait for the first build and reuse it."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    target, log = root / name, root / f"{name}.log"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not log.exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            log.write_text(build(target))
    return target, log.read_text()


def python_client(target: Path) -> str:
    """openapi-python-client: the package `wsapi_client` under `target`."""
    config = target / "config.yaml"
    config.write_text("post_hooks: []\n")  # no formatter run: the output is only imported
    return run([BIN / "openapi-python-client", "generate", "--path", SPEC, "--meta", "none",
                "--output-path", target / "wsapi_client", "--config", config])


def typescript_types(target: Path) -> str:
    """openapi-typescript: `api.d.ts` under `target`."""
    return run([NODE_BIN / "openapi-typescript", SPEC, "--output", target / "api.d.ts"])


def openapi_generator(generator: str) -> Callable[[Path], str]:
    """openapi-generator (`python` or `typescript-fetch`) into `target`."""
    def build(target: Path) -> str:
        extra = ["--package-name", "wsapi_og"] if generator == "python" else []
        # No generated tests or docs: only the code is imported / compiled.
        return run([BIN / "openapi-generator-cli", "generate", "--input-spec", SPEC,
                    "--generator-name", generator, "--output", target, *extra,
                    "--global-property", "apiTests=false,modelTests=false,apiDocs=false,modelDocs=false"])
    return build


TSC_STRICT = ["--strict", "--noEmit", "--target", "es2020", "--module", "es2020",
              "--moduleResolution", "node", "--lib", "es2020,dom", "--skipLibCheck"]
