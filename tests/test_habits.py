"""The suite's habits (habits.py) catch what they promise: each violation is planted in a scratch test
folder, run by a separate pytest with the habits loaded, and shown to fail there (and its fixed form to
pass)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def _pytest(folder: Path, *args: str, require_all: bool = False, extra_path: Path | None = None,
            plugin: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("BLINDACT_REQUIRE_ALL", "PYTEST_ADDOPTS")}
    if require_all:
        env["BLINDACT_REQUIRE_ALL"] = "1"
    # this test's own tripwire (habits) stays out of the inner run's PATH: the inner run sets its own
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if "xvfb-tripwire" not in p)
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (extra_path, TESTS, ROOT) if p)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "-W", "ignore::pytest.PytestUnknownMarkWarning"]
    if plugin:
        cmd += ["-p", "habits"]
    return subprocess.run([*cmd, *args, str(folder)], capture_output=True, text=True, env=env, cwd=folder,
                          timeout=300)


def _plant(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


MODULE_SKIP = "import pytest\n\npytest.importorskip('no_such_module_anywhere')\n\n\ndef test_never():\n    pass\n"


def test_a_module_level_skip_fails_under_require_all(tmp_path):
    folder = _plant(tmp_path / "t", {"test_planted.py": MODULE_SKIP, "test_fine.py": "def test_ok():\n    pass\n"})
    lenient = _pytest(folder)
    assert lenient.returncode == 0 and "1 passed, 1 skipped" in lenient.stdout, lenient.stdout
    strict = _pytest(folder, require_all=True)
    assert strict.returncode != 0, strict.stdout
    assert "skipped, but BLINDACT_REQUIRE_ALL=1 requires every test to run" in strict.stdout
    assert "no_such_module_anywhere" in strict.stdout
    # without the habits the same module slips through: the plugin is what catches it
    assert _pytest(folder, require_all=True, plugin=False).returncode == 0


def test_a_skip_in_a_fixture_or_a_test_fails_under_require_all(tmp_path):
    folder = _plant(tmp_path / "t", {"test_planted.py": (
        "import pytest\n\n@pytest.fixture\ndef part():\n    pytest.skip('part missing')\n\n"
        "def test_setup_skip(part):\n    pass\n\n"
        "@pytest.mark.skipif(True, reason='marked away')\ndef test_marked_skip():\n    pass\n\n"
        "def test_body_skip():\n    pytest.skip('body')\n\n"
        "@pytest.mark.xfail(reason='known')\ndef test_xfail():\n    assert False\n")})
    assert "3 skipped, 1 xfailed" in _pytest(folder).stdout
    # -rN: no short summary, whose lines carry the message or not by the terminal's width (COLUMNS)
    strict = _pytest(folder, "-rN", require_all=True)
    # the two skipped in setup are errors, the one skipped in its body a failure; the xfail stays one
    assert "1 failed, 1 xfailed, 2 errors" in strict.stdout, strict.stdout
    assert strict.stdout.count("skipped, but BLINDACT_REQUIRE_ALL=1") == 3, strict.stdout


def test_the_real_ray_module_skip_is_caught(tmp_path):
    # tests/test_ray.py skips at module level without ray: a `ray` that cannot be imported, in front
    fake = _plant(tmp_path / "noray" / "ray", {"__init__.py": "raise ModuleNotFoundError('ray hidden for this test', name='ray')\n"}).parent
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
         str(TESTS / "test_ray.py")],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
        env={**{k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}, "BLINDACT_REQUIRE_ALL": "1",
             "PYTHONPATH": os.pathsep.join([str(fake), str(ROOT)])})
    assert proc.returncode != 0, proc.stdout
    assert "BLINDACT_REQUIRE_ALL=1 requires every test to run" in proc.stdout and "ray hidden" in proc.stdout


DESKTOP_CONFTEST = "import pytest\n\n@pytest.fixture\ndef desktop():\n    yield 'a stand-in: nothing starts'\n"


def test_a_desktop_fixture_without_the_marker_stops_collection(tmp_path):
    folder = _plant(tmp_path / "t", {"conftest.py": DESKTOP_CONFTEST, "test_planted.py": (
        "import pytest\n\n@pytest.fixture\ndef screen(desktop):\n    return desktop\n\n"
        "def test_unmarked(screen):\n    pass\n\n"
        "@pytest.mark.desktop\ndef test_marked(desktop):\n    pass\n")})
    proc = _pytest(folder)
    assert proc.returncode == 4, proc.stdout + proc.stderr  # pytest's usage error
    assert "test_planted.py::test_unmarked" in proc.stderr and "test_marked" not in proc.stderr
    (folder / "test_planted.py").write_text((folder / "test_planted.py").read_text().replace(
        "def test_unmarked", "@pytest.mark.desktop\ndef test_unmarked"))
    assert _pytest(folder).returncode == 0


def test_an_unmarked_test_that_starts_xvfb_fails_naming_itself(tmp_path):
    folder = _plant(tmp_path / "t", {"test_planted.py": (
        "import os, subprocess, sys\nimport pytest\n\n"
        "def test_sneaky():\n"
        "    # as a CLI run in a subprocess would: Xvfb is looked up on PATH\n"
        "    subprocess.run([sys.executable, '-c', \"import subprocess; subprocess.run(['Xvfb', ':99'])\"])\n\n"
        "def test_innocent():\n    pass\n\n"
        "@pytest.mark.desktop\ndef test_marked():\n    assert 'xvfb-tripwire' not in os.environ['PATH']\n")})
    proc = _pytest(folder)
    assert proc.returncode == 1 and "3 passed, 1 error" in proc.stdout, proc.stdout
    assert "test_planted.py::test_sneaky started a desktop (Xvfb) but is not marked desktop" in proc.stdout
    assert "test_innocent started" not in proc.stdout
