"""Every program a task's setup commands or terminal oracles call is in the desktop image, so Docker
and local run the same suite (a task failing in Docker with `exit 127` is what this prevents).

The commands are read from the task files: each `run:` setup step, and the text an oracle types
into a task whose only app is the terminal (with other apps open, typed text may go to them), up to a
command that starts a program in the background.
"""

from __future__ import annotations

import shlex

import pytest

from blindact.tasks import load_all

from test_docker_provider import desktop_image, engine  # noqa: F401 - shared fixtures (tests/ is on sys.path)

_PUNCTUATION = "();<>|&"
_STARTS_COMMAND = set(";&|(")  # a token made of these puts the next word in command position
_KEYWORDS = {"do", "then", "else", "elif", "if", "while", "until", "!", "{", "time"}
_NOT_PROGRAMS = {"cd", "echo", "true", "false", "break", "continue", "export", "set", "test", "[", "[[", "read",
                 "printf", "exit", "source", ".", "local", "shift", "wait", "for", "case", "done", "fi", "esac",
                 "}", "umask", "pwd", "unset", "return", "trap", "eval", "exec", "type", "command", "let",
                 "declare", "$"}


def programs_in(script: str) -> set[str]:
    """The programs a shell script runs (the words in command position that are not shell syntax,
    builtins, assignments, or scripts of the task's own home)."""
    lex = shlex.shlex(script.replace("\n", " ; "), posix=True, punctuation_chars=_PUNCTUATION)
    lex.whitespace_split = True
    found, at_command = set(), True
    for token in lex:
        if token and set(token) <= set(_PUNCTUATION):
            at_command = at_command or bool(set(token) & _STARTS_COMMAND)
            continue
        if at_command and (token in _KEYWORDS or "=" in token.split("/")[0]):
            continue  # a keyword or a VAR=value: the command is still to come
        if at_command and not (token in _NOT_PROGRAMS or token.startswith("./")):
            found.add(token)
        at_command = False
    return found


def task_programs() -> dict[str, set[str]]:
    """Program -> the ids of the tasks that call it."""
    calls: dict[str, set[str]] = {}
    for task in load_all().values():
        scripts = [step["run"] for step in task.setup if "run" in step]
        launched = [step["launch"]["app"] for step in task.setup if "launch" in step]
        if launched == ["terminal"]:
            for steps in task.oracles.values():
                for step in steps:
                    text = step.action_fields().get("text", "") if step.type == "type" else ""
                    if text.endswith("\n"):
                        scripts.append(text)
                    if text.rstrip().endswith("&"):
                        break  # a program started from the terminal (`thunar ~/shop &`) may take what is typed next
        for script in scripts:
            for program in programs_in(script):
                calls.setdefault(program, set()).add(task.id)
    return calls


def test_the_command_reader_finds_programs_not_syntax():
    script = 'for i in $(seq 50); do curl -sf --unix-socket "$X/apps.sock" http://a/ && break; sleep 0.1; done; true'
    assert programs_in(script) == {"seq", "curl", "sleep"}
    assert programs_in("LANG=C git branch -D a b; ./restart.sh | grep -v x > out.txt\ncd work && md5sum *.jpg") == \
        {"git", "grep", "md5sum"}
    calls = task_programs()
    assert "ambiguity-git-branch" in calls["git"] and "curl" in calls


@pytest.mark.docker
def test_every_program_a_task_calls_is_in_the_image(desktop_image, engine):  # noqa: F811
    calls = task_programs()
    probe = " ".join(f"command -v {shlex.quote(p)} >/dev/null || echo {shlex.quote(p)};" for p in sorted(calls))
    out = engine.containers.run(desktop_image, ["-c", probe], entrypoint="sh", remove=True, network_mode="none",
                                user="user")
    missing = out.decode().split()
    assert missing == [], {p: sorted(calls[p]) for p in missing}
