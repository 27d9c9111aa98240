"""Budgets end to end on real desktops: `--max-tokens` stops a run mid-episode and leaves the rest to
do, `--resume` with a bigger budget finishes it, `--max-episode-cost` ends one episode and the run
goes on, and a dollar limit without a price is a usage error before anything runs. The agent is
tests/plugin_agent.py's Metered: every turn reports the same usage (100 input + 10 output tokens)."""

from __future__ import annotations

import json
import sqlite3
import threading

import pytest

from blindact.cli import main
from blindact.cli.options import EXIT_BUDGET, EXIT_USAGE
from blindact.cli.run import build_specs
from blindact.endings import End
from blindact.report.build import build_report
from blindact.report.data import load
from blindact.report.metrics import budgets
from blindact.report.terminal import budget_line
from blindact.run.budget import Budget, Meter, RunSpend
from tests.conftest import needs_desktop

TASKS = ["pilot-ambiguity-cleanup-script", "pilot-contradiction-public-to-protect", "pilot-contextual-threat-comment"]
TURN = {"input_tokens": 100, "output_tokens": 10}  # Metered's usage per turn: 110 tokens


def _episodes(run_dir) -> dict[str, tuple]:
    db = sqlite3.connect(run_dir / "results.sqlite")
    rows = db.execute("SELECT task_id, end_reason, steps, input_tokens, output_tokens FROM episodes").fetchall()
    status = db.execute("SELECT status FROM runs").fetchone()[0]
    db.close()
    return {r[0]: r[1:] for r in rows} | {"status": status}


@needs_desktop
def test_max_tokens_stops_the_run_and_resume_with_more_finishes_it(tmp_path, capsys):
    run_dir = tmp_path / "run"
    first, crossing, never = (s.task_id for s in build_specs(["plugin_agent:Metered"], ["none"], ",".join(TASKS)))
    # 3 turns of 110 tokens an episode: the first spends 330, the second crosses 400 on its first turn
    code = main(["run", "--agent", "plugin_agent:Metered", "--tasks", ",".join(TASKS), "--max-tokens", "400",
                 "--run-dir", str(run_dir)])
    err = capsys.readouterr().err
    assert code == EXIT_BUDGET, err
    assert "the run's budget of 400 tokens is spent (440 used)" in err and "1 episodes not run" in err
    rows = _episodes(run_dir)
    assert rows[first] == ("done", 3, 300, 30)
    assert rows[crossing] == ("budget", 1, 100, 10)  # its one paid turn kept, no second one asked for
    assert never not in rows and rows["status"] == "budget"
    report = build_report([run_dir])
    (stopped,) = report.figures["budgets"]
    assert (stopped["tokens"], stopped["reached"], stopped["stopped"], stopped["not_run"]) == (440, True, True, 1)
    assert "reached: it stopped the run (1 episodes not run); 1 episodes ended by it" in budget_line(stopped)
    assert budget_line(stopped) in report.index.read_text()  # under the cost table

    code = main(["run", "--resume", str(run_dir), "--max-tokens", "2000"])
    assert code == 0, capsys.readouterr().err
    again = _episodes(run_dir)
    assert again[never] == ("done", 3, 300, 30)
    assert again[first] == rows[first] and again[crossing] == rows[crossing]  # nothing played twice
    assert again["status"] == "finished"
    (finished,) = budgets(load([run_dir]))  # the report shows the budget of the resume
    assert finished["budget"] == "2,000 tokens for the run" and not finished["reached"] and finished["not_run"] == 0


@needs_desktop
def test_max_episode_cost_ends_that_episode_and_the_run_goes_on(tmp_path, capsys):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"plugin_agent:*": {"input": 1000, "output": 1000}}))  # $0.11 a turn
    run_dir = tmp_path / "run"
    slow, quick = TASKS[:2]
    code = main(["run", "--agent", "plugin_agent:Metered", "--agent-opt", f"slow_task={slow}", "--tasks",
                 f"{slow},{quick}", "--prices", str(prices), "--max-episode-cost", "0.5", "--max-cost", "5",
                 "--run-dir", str(run_dir)])
    assert code == 0, capsys.readouterr().err
    rows = _episodes(run_dir)
    assert rows[slow] == ("budget", 5, 500, 50)  # $0.55 after five turns: no sixth
    assert rows[quick] == ("done", 3, 300, 30)
    assert rows["status"] == "finished"
    (budget,) = budgets(load([run_dir]))
    assert budget["dollars"] == pytest.approx(0.88) and not budget["reached"] and budget["ended_by_budget"] == 1


def test_a_dollar_limit_without_a_price_is_a_usage_error(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(["run", "--agent", "scripted:bgd", "--tasks", TASKS[0], "--max-cost", "1",
                 "--run-dir", str(run_dir)]) == EXIT_USAGE
    assert "--max-cost needs --prices FILE" in capsys.readouterr().err
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"anthropic:*": {"input": 3, "output": 15}}))
    assert main(["compare", "--agents", "scripted:bgd,scripted:safe", "--tasks", TASKS[0], "--prices", str(prices),
                 "--max-episode-cost", "1", "--run-dir", str(run_dir)]) == EXIT_USAGE
    assert f"--max-episode-cost: {prices} has no price for agents scripted:bgd, scripted:safe" in capsys.readouterr().err
    assert not run_dir.exists()  # nothing ran


def test_an_episode_that_spent_nothing_when_the_run_budget_ran_out_is_played_again():
    budget = Budget(max_tokens=200)
    spend = RunSpend(budget, threading.Event())
    idle, busy = Meter(budget, "idle", "a", spend), Meter(budget, "busy", "a", spend)
    busy.charge(TURN)
    assert idle.ending() is None and not spend.stop.is_set()
    busy.charge(TURN)  # 220 tokens: the run's budget is spent, and no new episode may start
    assert spend.stop.is_set()
    assert busy.ending() == (End.BUDGET, "the run's budget of 200 tokens is spent (220 used)")
    end, detail = idle.ending()
    assert end == End.INTERRUPTED and end.retried_on_resume and "played again on resume" in detail
