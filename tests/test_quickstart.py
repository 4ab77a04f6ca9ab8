"""README's quickstart, followed as printed, by a user with a fresh virtual environment
outside the clone: the first install line of "Use it in your project" (the clone's path put
in), the five-line test saved as `test_quickstart.py` in an empty project, and the printed
`pytest` command. The install builds the package from the clone as pip does for any user
(an isolated build); pip takes the dependencies from the package index or its local cache.
Nothing of the test's own environment leaks in: no PYTHONPATH, another HOME, a PATH with the
fresh environment's bin first."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = "/path/to/workspace-api-mock"


def _readme_blocks(language: str) -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Use it in your project", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"^```{language}\n(.*?)^```", section, re.S | re.M)


def test_readme_quickstart_as_printed(tmp_path: Path) -> None:
    install, *_ = _readme_blocks("sh")[0].splitlines()
    words = shlex.split(install, comments=True)
    assert words[:2] == ["pip", "install"] and PLACEHOLDER in words, install
    [five_lines] = _readme_blocks("python")
    assert len(five_lines.splitlines()) == 5, five_lines
    [run] = [b for b in _readme_blocks("sh") if b.startswith("pytest")]

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)  # `python -m venv`; its pip is this one (`--python`)
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{env_dir / 'bin'}{os.pathsep}/usr/bin:/bin", "HOME": str(home),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "VIRTUAL_ENV": str(env_dir)}
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_CACHE_DIR",
                 "XDG_CACHE_HOME", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "SSL_CERT_FILE",
                 "PIP_CERT", "REQUESTS_CA_BUNDLE"):
        if name in os.environ:  # where pip finds packages, as the user's own pip would
            env[name] = os.environ[name]
    env.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))  # the usual cache
    arguments = [str(ROOT) if w == PLACEHOLDER else w for w in words[2:]]
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"),
                           "install", "--quiet", *arguments], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]

    project = tmp_path / "project"
    project.mkdir()
    (project / "test_quickstart.py").write_text(five_lines, encoding="utf-8")
    done = subprocess.run(shlex.split(run.strip()), env=env, cwd=project, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout, done.stdout
    # It ran the installed package, not the clone.
    where = subprocess.run([str(env_dir / "bin" / "python"), "-c",
                            "import mockserver; print(mockserver.__file__)"],
                           env=env, cwd=project, capture_output=True, text=True, check=True)
    assert str(env_dir) in where.stdout and str(ROOT) not in where.stdout, where.stdout
