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


def test_make_screenshots_refreshes_one_picture_per_tab():
    from components.shell.links import TABS
    from scripts.readme_screenshots import PICTURES, TAB_PICTURES

    assert list(TAB_PICTURES) == [tab.slug for tab in TABS] and len(TABS) == 12
    readme = (REPO / "README.md").read_text()
    browser_tests = "".join(p.read_text() for p in (REPO / "tests" / "e2e").glob("test_*.py"))
    for picture, source in PICTURES.items():
        assert f"(docs/screenshots/{picture}.png)" in readme, f"the README does not show {picture}.png"
        # a screenshot some browser test saves under that name (the arrival walk names each tab's)
        saved = f'"{source}"' in browser_tests or (source.startswith("arrival-") and '"arrival-"' in browser_tests)
        assert saved, f"no browser test saves {source}.png"
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^screenshots:.*\n\t.*pytest tests/e2e.*\n\t.*-m scripts\.readme_screenshots", makefile, re.M)
