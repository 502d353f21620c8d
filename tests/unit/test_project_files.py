"""The files a Hugging Face Space and CI read: front matter, pins, the README's commands."""

from __future__ import annotations

import re

import yaml

from helpers import REPO


def _pins(name: str) -> dict[str, str]:
    pins = {}
    for line in (REPO / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            package, _, version = line.partition("==")
            assert version, f"{name}: {line!r} is not pinned with =="
            pins[package.lower()] = version
    return pins


def test_space_front_matter_matches_the_pins():
    text = (REPO / "README.md").read_text()
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert match, "README.md must open with the Space's YAML front matter"
    meta = yaml.safe_load(match.group(1))
    assert meta["sdk"] == "gradio"
    assert meta["sdk_version"] == _pins("requirements.txt")["gradio"]
    assert (REPO / meta["app_file"]).is_file()
    assert str(meta["python_version"]) == "3.11"


def test_every_dependency_is_pinned():
    runtime, tests = _pins("requirements.txt"), _pins("requirements-test.txt")
    assert runtime["torch"] == "2.13.0"
    assert not set(runtime) & set(tests)


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    commands = re.search(r"```bash\n(.*?)```", readme, re.S).group(1)
    assert re.search(r"^make run\b", commands, re.M) and re.search(r"^make test\b", commands, re.M)
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^\s*(exec\s+)?make test\s*$", ci, re.M)
