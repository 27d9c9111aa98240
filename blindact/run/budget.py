"""Budgets: what a run may spend (`--max-cost` dollars, `--max-tokens` input + output tokens) and
what one episode may spend (`--max-episode-cost` dollars), counted turn by turn from each
AgentTurn.usage and priced through blindact.prices.

Before each of the agent's turns its episode asks its `Meter` whether money or tokens are left. An
episode whose own budget is spent ends with End.BUDGET and the run goes on. Once the run's budget is
spent, the run's stop event is set: no new episode starts (those stay to do, so `--resume` with a
bigger budget runs them), and each episode in flight ends before its next turn, with End.BUDGET when
it spent something (kept, like any cutoff) or End.INTERRUPTED when it had not yet (played again on
resume). The run's budget counts every episode its store keeps, those recorded before a resume
included. The turn that crosses a budget has been paid for, so a run can overshoot by the turns in
flight at that moment.

Episodes in this process (the local executor) share one live `RunSpend`; an executor whose workers
run elsewhere (Ray) leaves them the episode's budget only, and the run's is checked as each of their
episodes comes back.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from blindact.endings import End
from blindact.prices import dollars, price_for


def tokens_of(usage: dict) -> int:
    """The tokens a budget counts: input plus output."""
    return int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))


@dataclass(frozen=True)
class Budget:
    """The limits of one run (None: no such limit) and the price of each of its agents."""

    max_cost: float | None = None
    max_tokens: int | None = None
    max_episode_cost: float | None = None
    prices: dict[str, dict] = field(default_factory=dict)  # agent spec -> {input, output} dollars per 1M tokens

    @classmethod
    def make(cls, agents: list[str], prices: dict, prices_file: str | None, *, max_cost: float | None = None,
             max_tokens: int | None = None, max_episode_cost: float | None = None) -> Budget | None:
        """The budget of a run of these agents; None when no limit is given. A limit in dollars needs a
        price for every agent: a ValueError names the flag, the file and the agents without one."""
        if max_cost is None and max_tokens is None and max_episode_cost is None:
            return None
        found = {a: p for a in sorted(set(agents)) if (p := price_for(a, prices)) is not None}
        flag = "--max-cost" if max_cost is not None else "--max-episode-cost"
        if max_cost is not None or max_episode_cost is not None:
            if not prices_file:
                raise ValueError(f"{flag} needs --prices FILE (JSON or YAML: agent spec or glob -> {{input, output}} "
                                 "dollars per 1M tokens) to turn tokens into dollars")
            unpriced = [a for a in sorted(set(agents)) if a not in found]
            if unpriced:
                raise ValueError(f"{flag}: {prices_file} has no price for agent{'s' * (len(unpriced) > 1)} "
                                 f"{', '.join(unpriced)} (its keys: {', '.join(prices) or 'none'})")
        return cls(max_cost, max_tokens, max_episode_cost, found)

    @classmethod
    def from_record(cls, record: dict | None) -> Budget | None:
        return cls(**record) if record else None

    def record(self) -> dict:
        """As stored with the run (its config's `budget`), for the report."""
        return {"max_cost": self.max_cost, "max_tokens": self.max_tokens, "max_episode_cost": self.max_episode_cost,
                "prices": self.prices}

    def describe(self) -> str:
        parts = [f"${self.max_cost:g} for the run" if self.max_cost is not None else "",
                 f"{self.max_tokens:,} tokens for the run" if self.max_tokens is not None else "",
                 f"${self.max_episode_cost:g} per episode" if self.max_episode_cost is not None else ""]
        return ", ".join(p for p in parts if p)

    def cost(self, agent: str, usage: dict) -> float:
        """The dollars of a usage by this agent (0 when the run has no price for it: no dollar limit then)."""
        price = self.prices.get(agent)
        return dollars(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), price) if price else 0.0

    def run_spent(self, tokens: int, cost: float) -> str:
        """Why the run's budget is spent at that spend, or ''."""
        if self.max_tokens is not None and tokens >= self.max_tokens:
            return f"the run's budget of {self.max_tokens:,} tokens is spent ({tokens:,} used)"
        if self.max_cost is not None and cost >= self.max_cost:
            return f"the run's budget of ${self.max_cost:g} is spent (${cost:.4f} used)"
        return ""

    def episode_spent(self, cost: float) -> str:
        """Why an episode's budget is spent at that spend, or ''."""
        if self.max_episode_cost is not None and cost >= self.max_episode_cost:
            return f"the episode's budget of ${self.max_episode_cost:g} is spent (${cost:.4f} used)"
        return ""


class RunSpend:
    """What a run has spent: the episodes it keeps, plus the turns of those in flight in this process
    (from any worker thread). Setting `stop` once the budget is spent keeps new episodes from starting."""

    def __init__(self, budget: Budget, stop: threading.Event):
        self.budget, self.stop = budget, stop
        self._lock = threading.Lock()
        self._settled = [0, 0.0]
        self._running: dict[str, list] = {}  # episode name -> [tokens, dollars] so far

    def totals(self) -> tuple[int, float]:
        with self._lock:
            return (self._settled[0] + sum(t for t, _ in self._running.values()),
                    self._settled[1] + sum(d for _, d in self._running.values()))

    def spent(self) -> str:
        """Why the run's budget is spent, or ''."""
        return self.budget.run_spent(*self.totals())

    def _add(self, into: list, agent: str, usage: dict) -> None:
        into[0] += tokens_of(usage)
        into[1] += self.budget.cost(agent, usage)

    def charge(self, name: str, agent: str, usage: dict) -> None:
        """One turn of an episode in flight."""
        with self._lock:
            self._add(self._running.setdefault(name, [0, 0.0]), agent, usage)
        self._stop_if_spent()

    def settle(self, name: str, agent: str, usage: dict) -> None:
        """An episode the store keeps (just recorded, or kept from before a resume): its whole usage
        replaces whatever its turns were charged."""
        with self._lock:
            self._running.pop(name, None)
            self._add(self._settled, agent, usage)
        self._stop_if_spent()

    def _stop_if_spent(self) -> None:
        if self.spent():
            self.stop.set()

    @classmethod
    def of(cls, budget: Budget, results: list) -> RunSpend:
        """The spend of a run's (spec, result) pairs."""
        spend = cls(budget, threading.Event())
        for spec, result in results:
            spend.settle(spec.name, spec.agent, result.usage)
        return spend

    def stopped(self, results: list, planned: int) -> str:
        """Why the run's budget stopped the run: it is spent, and episodes were left to do or cut short
        (any `budget` ending then is the run's); else ''."""
        why = self.spent()
        cut = len(results) < planned or any(result.end == End.BUDGET for _, result in results)
        return why if why and cut else ""


class Meter:
    """One episode's spend, against its own budget and (with `run`) the run's."""

    def __init__(self, budget: Budget, name: str, agent: str, run: RunSpend | None = None):
        self.budget, self.name, self.agent, self.run = budget, name, agent, run
        self.tokens, self.cost = 0, 0.0

    def charge(self, usage: dict) -> None:
        self.tokens += tokens_of(usage)
        self.cost += self.budget.cost(self.agent, usage)
        if self.run is not None:
            self.run.charge(self.name, self.agent, usage)

    def ending(self) -> tuple[End, str] | None:
        """How the episode ends before the agent's next turn, or None while budget is left."""
        own = self.budget.episode_spent(self.cost)
        if own:
            return End.BUDGET, own
        run = self.run.spent() if self.run is not None else ""
        if not run:
            return None
        if self.tokens == 0:
            return End.INTERRUPTED, f"{run} before this episode spent anything: it is played again on resume"
        return End.BUDGET, run
