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

    assert list(TAB_PICTURES) == [tab.slug for tab in TABS] and len(TABS) == 13
    readme = (REPO / "README.md").read_text()
    browser_tests = "".join(p.read_text() for p in (REPO / "tests" / "e2e").glob("test_*.py"))
    for picture, source in PICTURES.items():
        assert f"(docs/screenshots/{picture}.png)" in readme, f"the README does not show {picture}.png"
        # a screenshot some browser test saves under that name (the arrival walk names each tab's)
        saved = f'"{source}"' in browser_tests or (source.startswith("arrival-") and '"arrival-"' in browser_tests)
        assert saved, f"no browser test saves {source}.png"
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^screenshots:.*\n\t.*pytest tests/e2e.*\n\t.*-m scripts\.readme_screenshots", makefile, re.M)


# --- no development log in product files -----------------------------------------------------
# Product texts describe the product as it is; how it got there lives in git's log. Each pattern
# names one way a development log leaks in, worded so that the product's own uses of the same
# words stay legal (a bench's "rounds 3-4", "the vectors used to search", "8 requests per session").
DEV_LOG = {
    "a numbered session of work": r"\bsessions? #?\d+",
    "a numbered issue": r"\bissues? #?\d+",
    "a numbered ticket": r"\btickets? #?\d+",
    "a numbered round of work": r"\b(?:work|development|review) rounds? #?\d+|\bround #?\d+ of (?:work|development)\b",
    "a numbered stop": r"\bstop #?\d+\b(?!\s*(?:%|s\b|ms\b|min|steps?\b|seconds?\b|minutes?\b|tokens?\b))",
    "a numbered task": r"\btask #?\d+\b",
    "an issue's closing note": r"\bclosing note",
    "a change narrative": r"\bwas changed\b|\bbefore this change\b|\bno longer\b",
    "'used to' as the past": (r"(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bwere )(?<!\bbe )(?<!\bbeen )(?<!\bbeing )"
                              r"\bused to (?:be|have|take|run|return|cost|give|show|load|wait|live|sit)\b"),
    "a dated change note": r"\b(?:since|until|as of|changed on|fixed on|measured again on) 20\d\d-\d\d-\d\d",
    "a change since a commit": r"\bsince (?:commit )?[0-9a-f]{7,40}\b",
    "a target that was another": r"\(was [\d.]+\)",
}
_DEV_LOG = re.compile("|".join(f"(?:{p})" for p in DEV_LOG.values()), re.IGNORECASE)
PRODUCT = re.compile(r"^(?:README\.md|BENCHMARKS\.md|app\.py|Makefile|docs/.*\.md|deploy/.*|"
                     r"(?:models|components|scripts|bench)/.*\.(?:py|js|css|html|md)|"
                     r"assets/(?!vendor/).*\.(?:js|css|html)|weights/.*/MODEL_CARD\.md)$")


def _product_files() -> list[str]:
    import subprocess

    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [path for path in tracked.splitlines() if PRODUCT.match(path) and (REPO / path).is_file()]


def test_the_dev_log_patterns_catch_its_phrases_and_spare_the_product_s_own_words():
    caught = ["as measured in session 40", "sessions 34-37", "(issue 27; was 500)", "issue #61",
              "ticket 12", "in work round 3", "stop 4 of the plan", "task 7", "in the issue's closing note",
              "the words strip used to be a second event", "the default was changed", "it no longer loads",
              "since 2026-11-28 the fast path", "Since 1119fd8 the loss", "TARGET = 0.5  # (was 0.7)"]
    spared = ["rounds 3–4 adding 15–85 MB", "the classroom game's rounds", "round 2 of the quiz",
              "the vectors used to search", "the seed is used to draw", "8 requests per session",
              "stop 30 s before the deadline", "ENCODER_LAB_SESSIONS, 256", "trained on 2026-11-27",
              "the issue a student meets", "a sentence-pair task"]
    assert [text for text in caught if not _DEV_LOG.search(text)] == []
    assert [text for text in spared if _DEV_LOG.search(text)] == []


def test_no_product_file_points_into_the_development_log():
    files = _product_files()
    assert "README.md" in files and "models/__init__.py" in files and any(f.startswith("weights/") for f in files)
    found = []
    for path in files:
        for number, line in enumerate((REPO / path).read_text(encoding="utf-8").splitlines(), 1):
            if match := _DEV_LOG.search(line):
                found.append(f"{path}:{number}: {match.group(0)!r}")
    assert found == [], "development-log references (git's log is their place):\n" + "\n".join(found)
