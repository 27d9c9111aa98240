"""The pilot tasks' oracle trajectories in a container give the same state-check results as on the
local provider, and both match what the task file expects.

One container serves every episode here (reset reuses it), as a worker of a suite would.
"""

from __future__ import annotations

import pytest

from blindact.actions import action_from_dict
from blindact.agents.scripted import ScriptedAgent
from blindact.env import BlindActEnv
from blindact.routes import is_blind
from blindact.run.episode import run_episode
from blindact.tasks import load_all
from blindact.wrappers import RecordEpisode, StateChecks

from test_docker_provider import desktop_image, engine  # noqa: F401 - shared fixtures (tests/ is on sys.path)

pytestmark = pytest.mark.docker

PILOTS = sorted((t for t in load_all().values() if t.id.startswith("pilot-")), key=lambda t: t.id)
ATTEMPTS = 3
# the pilots' own oracles: their blind routes measure the checks (`blindact validate --oracles '*-blind-*'`)
# and expect no ending, so they are not this provider comparison's cases
CASES = [(t, oracle) for t in PILOTS for oracle in sorted(t.oracles) if not is_blind(oracle)]


def _summary(result) -> dict:
    checks = {kind: sorted((c.name, c.passed) for c in getattr(result.checks, kind)) for kind in ("harm", "benign")}
    # when the harm was first seen may differ by a step (the ledger reads what a step's typing started a
    # moment later in one provider than in the other); what was done may not
    return {"end": result.end, "outcome": {"harm": result.outcome.harm, "benign": result.outcome.benign}, "checks": checks}


def _env(task, desktop):
    return RecordEpisode(StateChecks(BlindActEnv(task, desktop=desktop, provider="test")))


def _run(desktop, task, oracle):
    return run_episode(_env(task, desktop), ScriptedAgent(oracle, task=task), timeout_s=120)


@pytest.fixture(scope="module")
def docker_desktop(desktop_image):  # noqa: F811 - the fixture imported above
    from blindact.desktop.docker_provider import DockerDesktop

    desk = DockerDesktop(desktop_image, ready_timeout=60)
    desk.start()
    yield desk
    desk.close()


@pytest.fixture(scope="module")
def local_desktop():
    from blindact.desktop.session import DesktopSession

    desk = DesktopSession()
    try:
        desk.start()
    except Exception as exc:  # noqa: BLE001 - no local desktop here: compare with the task file only
        desk.close()
        yield None, f"local provider unavailable: {exc}"
        return
    yield desk, ""
    desk.close()


@pytest.mark.skipif(not CASES, reason="no pilot tasks in tasks/")
@pytest.mark.parametrize("task,oracle", CASES, ids=[f"{t.id}:{o}" for t, o in CASES])
def test_oracle_in_a_container_matches_local_and_expectation(task, oracle, docker_desktop, local_desktop, tmp_path):
    want = task.expect[oracle]

    def as_expected(summary: dict) -> bool:
        return summary["end"] == want.terminal and all(
            summary["outcome"][k] == getattr(want, k) for k in ("harm", "benign") if getattr(want, k) is not None)

    # Up to three tries on each side: the scroll-then-click oracle of the browser pilot sometimes
    # misses its link on a loaded machine with either provider (seen 1 in 5 locally, 2 in 5 in a
    # container), a timing issue of the oracle, not of the provider that this test compares.
    for attempt in range(ATTEMPTS):
        result = _run(docker_desktop, task, oracle)
        in_docker = _summary(result)
        if as_expected(in_docker):
            break
    assert as_expected(in_docker), f"in the container: {in_docker} (error: {result.error}); expected {want}"
    local, why = local_desktop
    if local is None:
        pytest.skip(f"docker matched the task's expectation; {why}")
    for attempt in range(ATTEMPTS):
        result = _run(local, task, oracle)
        on_host = _summary(result)
        if as_expected(on_host):
            break
    assert in_docker == on_host, f"local run error: {result.error}"


class _KillsItsDesktop:
    """An agent whose desktop container dies under it at its first step."""

    name = "killer"
    mitigation = "none"

    def __init__(self, desktop):
        self.desktop = desktop

    def reset(self, task) -> None:
        pass

    def act(self, observation):
        from blindact.agents.base import AgentTurn

        self.desktop.client.api.kill(self.desktop.container_id)
        return AgentTurn([action_from_dict({"type": "type", "text": "ls\n"})])


@pytest.mark.skipif(not PILOTS, reason="no pilot tasks in tasks/")
def test_a_container_dying_mid_episode_ends_that_episode_and_the_next_one_runs(desktop_image, tmp_path):  # noqa: F811
    from blindact.desktop.docker_provider import DockerDesktop

    task = PILOTS[0]
    with DockerDesktop(desktop_image, ready_timeout=60) as desk:
        first = desk.container_id
        broken = run_episode(_env(task, desk), _KillsItsDesktop(desk), timeout_s=60)
        assert broken.end == "desktop_error", broken
        assert first[:12] in broken.error and "exited" in broken.error, broken.error
        oracle = sorted(task.oracles)[0]
        nxt = run_episode(_env(task, desk), ScriptedAgent(oracle, task=task), timeout_s=120)
        assert nxt.end == task.expect[oracle].terminal, nxt
        assert desk.container_id != first and desk.restarts == 1
