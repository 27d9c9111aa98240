"""`import blindact` and `blindact --help` stay fast because they import nothing heavy: Gymnasium,
the env, the apps, the desktop, fairness, judging and the agents come in only when used. Checked as a
property (what a fresh interpreter has imported), not as a timing; the envs still register."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# what `import blindact` and the `blindact` parser must not import (each a module or a package)
HEAVY = ("gymnasium", "numpy", "jinja2", "pydantic", "blindact.env", "blindact.wrappers", "blindact.apps",
         "blindact.desktop", "blindact.fairness", "blindact.judging", "blindact.agents", "blindact.tasks",
         "blindact.run", "blindact.report", "blindact.inspect_bridge", "inspect_ai")


def _python(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _imported_after(code: str) -> set[str]:
    return set(json.loads(_python(f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))")))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_import_and_the_parser_import_nothing_heavy():
    modules = _imported_after("import blindact\nfrom blindact.cli import build_parser\nbuild_parser()")
    assert "blindact.cli" in modules
    assert _heavy(modules) == []


def test_the_probe_sees_heavy_imports():
    # the same probe on the full parser (every verb's options, from the registries) does see them
    modules = _imported_after("import blindact\nfrom blindact.cli import build_parser\nbuild_parser('all')")
    assert {"blindact.desktop.providers", "blindact.agents", "blindact.fairness.runner"} <= set(_heavy(modules))


def test_help_imports_nothing_heavy():
    code = ("import contextlib, io\nfrom blindact.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
            "assert 'usage: blindact' in out.getvalue()\n")
    modules = _imported_after(code)
    assert _heavy(modules) == []


def test_gymnasium_make_works_after_import_blindact():
    # Gymnasium imported after blindact: the ids are there, and the env module comes only with make()
    out = _python(
        "import sys, blindact\n"
        "assert 'gymnasium' not in sys.modules\n"
        "import gymnasium as gym\n"
        "from blindact.task_files import task_ids\n"
        "ids = task_ids()\n"
        "assert all(f'blindact/{t}' in gym.registry for t in ids), 'a task id is not registered'\n"
        "assert 'blindact.env' not in sys.modules and 'blindact.tasks' not in sys.modules\n"
        "env = gym.make(f'blindact/{ids[0]}')\n"
        "print(type(env.unwrapped).__name__, env.unwrapped.task.id == ids[0], env.spec.nondeterministic)\n"
        "env.close()\n"
        "fair = gym.make('blindact/fairness-bbq-v0')\n"
        "print(fair.reset(seed=0)[0].splitlines()[0])\n")
    first, second = out.splitlines()[:2]
    assert first == "BlindActEnv True True"
    assert "multiple-choice" in second


def test_registered_when_gymnasium_came_first():
    out = _python("import gymnasium as gym\nimport blindact\nfrom blindact.task_files import task_ids\n"
                  "print(sum(f'blindact/{t}' in gym.registry for t in task_ids()), len(task_ids()),"
                  " 'blindact/fairness-bbq-flex-v0' in gym.registry)")
    registered, total, fairness = out.split()
    assert registered == total and int(total) > 100 and fairness == "True"


@pytest.mark.parametrize("verb", ["tasks", "run", "compare", "validate", "bench", "report", "judge", "label",
                                  "agreement", "fairness", "image"])
def test_each_verb_builds_its_own_options(verb):
    from blindact.cli import VERBS, build_parser

    assert verb in VERBS
    sub = next(a for a in build_parser(verb)._actions if a.dest == "command")
    own = [a for a in sub.choices[verb]._actions if a.dest != "help"]
    assert own, f"`{verb}` has no options of its own: its entry in VERBS does not add it"
    placeholder = next(a for a in build_parser()._actions if a.dest == "command").choices[verb]
    assert [a.dest for a in placeholder._actions] == ["help"]


def test_help_lists_every_verb_with_its_line():
    from blindact.cli import VERBS

    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "blindact", "--help"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0
    for verb, (_, line) in VERBS.items():
        assert f"{verb}" in proc.stdout and line in proc.stdout, verb
