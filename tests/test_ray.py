"""The Ray executor on a local Ray instance gives the same results as the local executor for the
scripted oracle agent, and the trajectories come back into the driver's run folder and store."""

from __future__ import annotations

import json

import pytest

from blindact.run.episode import EpisodeSpec
from blindact.run.store import open_store
from blindact.run.suite import SuiteOptions, run_suite
from blindact.tasks import get_task
from tests.conftest import needs_desktop

ray = pytest.importorskip("ray")

# the oracles that find their targets reliably on a loaded machine (see test_compare.py)
TASKS = ["pilot-ambiguity-cleanup-script", "pilot-contradiction-public-to-protect"]


def _outcomes(run_dir):
    with open_store(run_dir) as store:
        rows = store.episodes()
    return {r["name"]: (r["end_reason"], r["steps"], r["harm"], r["benign"],
                        [(c["name"], c["passed"]) for kind in ("harm", "benign") for c in r["checks"].get(kind, [])])
            for r in rows}, rows


@needs_desktop
def test_ray_matches_local(tmp_path):
    specs = [EpisodeSpec(get_task(t), "scripted:bgd") for t in TASKS]
    run_suite(specs, tmp_path / "local", SuiteOptions(executor="local"))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    live = []  # what the live view is fed from the actors: (worker, episode, steps shown, screenshots)

    def on_step(worker, spec, tail):
        live.append((worker, spec.name, [s.step for s in tail.steps], list(tail.shots.values())))

    try:
        # one desktop at a time: two on this 2-core machine make the oracles miss their targets under load
        results = run_suite(specs, tmp_path / "ray", SuiteOptions(executor="ray"), on_step=on_step)
    finally:
        ray.shutdown()
    assert len(results) == len(TASKS)
    local, _ = _outcomes(tmp_path / "local")
    remote, rows = _outcomes(tmp_path / "ray")
    assert remote == local
    # the live view under Ray: every episode's steps reached the driver as they happened, each as its tail
    # (at most 5 steps) with its latest screenshot only
    for r in rows:
        shown = [steps for worker, name, steps, _ in live if name == r["name"]]
        assert shown and shown[-1][-1] == r["steps"], (r["name"], shown[-1:])
        assert len(shown) >= r["steps"] // 2  # not only the last step: the driver drops only when it lags
    assert all(worker == 0 and len(steps) <= 5 and len(shots) <= 1 for worker, _, steps, shots in live)
    assert all(shot.startswith(b"\x89PNG") for *_, shots in live for shot in shots)
    assert all(r["node"] for r in rows)
    for r in rows:  # the files came back from the Ray workers and match what the store says
        folder = tmp_path / "ray" / r["dir"]
        assert json.loads((folder / "result.json").read_text())["steps"] == r["steps"]
        assert len(list(folder.glob("step_*.png"))) == r["steps"] + 1
    with open_store(tmp_path / "ray") as store:
        run = store.run()
        assert run["status"] == "finished" and run["executor"] == "ray"


@needs_desktop
def test_gui_fairness_variants_run_on_ray(tmp_path):
    """Variant tasks exist only in memory (expanded from a fairness spec): they travel inside the
    episode specs, so Ray workers run them without any registry."""
    from blindact.fairness.gui import load_specs, observations, run_gui_fairness
    from blindact.tasks import load_all

    spec = load_specs()["hr-reject-age"]
    assert not any(v.task_id in load_all() for v in spec.expand())
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        triples = run_gui_fairness([spec], "scripted:merit", tmp_path / "run", options=SuiteOptions(executor="ray"))
    finally:
        ray.shutdown()
    rows, missing = observations(triples)
    assert not missing and len(rows) == len(spec.variants)
    assert all(r.end == "done" and r.favourable for r in rows), [(r.variant, r.end, r.detail) for r in rows]
    with open_store(tmp_path / "run") as store:
        assert {r["node"] for r in store.episodes()} != {""}
        assert set(store.tasks()) == {v.task_id for v in spec.expand()}


@needs_desktop
@pytest.mark.timeout(900)
def test_a_node_killed_mid_run_costs_no_episode(tmp_path):
    """A real three-node Ray cluster on this machine (one raylet per node): episodes spread over the
    nodes; one node is killed while it runs an episode; the run completes with every episode recorded
    exactly once, the lost one played again on another node."""
    import threading

    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})  # the head schedules nothing
    nodes = [cluster.add_node(num_cpus=2, resources={f"node{i}": 1}) for i in range(3)]
    cluster.wait_for_nodes()
    victim = nodes[0]
    specs = [EpisodeSpec(get_task(t), "scripted:bgd", seed=seed) for t in TASKS for seed in range(3)]
    killed = threading.Event()

    def kill_soon():
        import time

        time.sleep(1)  # the finished actor has its next episode: every node is mid-episode now
        cluster.remove_node(victim, allow_graceful=False)
        killed.set()

    def on_result(spec, result):
        if not killed.is_set() and not getattr(on_result, "armed", False):
            on_result.armed = True
            threading.Thread(target=kill_soon, daemon=True).start()

    try:
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        results = run_suite(specs, tmp_path / "run", SuiteOptions(executor="ray", workers=3), on_result=on_result)
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert killed.is_set()
    assert sorted(s.name for s, _ in results) == sorted(s.name for s in specs)
    _, rows = _outcomes(tmp_path / "run")
    assert sorted(r["name"] for r in rows) == sorted(s.name for s in specs)  # each once, none lost
    assert all(r["end_reason"] == "done" and r["harm"] for r in rows), [(r["name"], r["end_reason"]) for r in rows]
    nodes_used = {r["node"] for r in rows}
    assert len(nodes_used) >= 2, nodes_used  # spread over the nodes (SPREAD: one actor per node)
    # the episode in flight on the killed node was played again elsewhere: none ended in an error
    assert not any(r["end_reason"] == "desktop_error" for r in rows)
