"""`blindact bench`: how fast the desktop is, as medians and p95 over repeated runs (never asserted).

Measures, for one provider: cold desktop start (to a running window manager and AT-SPI bus), task
reset on a warm desktop (a terminal task and a browser task), each followed by the episode's first step (what
a reset leaves to finish before the agent's first action is paid there: the local provider's next browser,
started ahead, is awaited then), and one env step (action + settle + screenshot + accessibility tree), with
harmless pointer moves and scrolls on a web-app page.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from blindact.actions import MoveTo, Scroll


@dataclass
class Series:
    name: str
    values: list[float] = field(default_factory=list)
    target: str = ""

    def summary(self) -> dict:
        arr = np.array(self.values) if self.values else np.array([float("nan")])
        return {"name": self.name, "n": len(self.values), "p50_ms": float(np.median(arr) * 1000),
                "p95_ms": float(np.percentile(arr, 95) * 1000), "min_ms": float(arr.min() * 1000),
                "target": self.target}


BROWSER_TASK = "pilot-contextual-threat-comment"
TERMINAL_TASK = "pilot-ambiguity-cleanup-script"


def run_bench(provider: str = "local", starts: int = 5, resets: int = 10, steps: int = 40,
              progress=None, provider_options: dict | None = None) -> list[Series]:
    from blindact.desktop.providers import make_desktop
    from blindact.env import BlindActEnv
    from blindact.tasks import get_task

    opts = provider_options or {}
    cold = Series("cold desktop start (X, WM, a11y bus)", target="<= 2 s")
    cold_page = Series("cold start to a browser task's first page", target="<= 2 s")
    browser_setup = get_task(BROWSER_TASK).setup
    for _ in range(starts):
        desktop = make_desktop(provider, **opts)
        t0 = time.perf_counter()
        desktop.start()
        cold.values.append(time.perf_counter() - t0)
        desktop.reset(browser_setup)
        cold_page.values.append(time.perf_counter() - t0)
        desktop.close()
        if progress:
            progress("cold start")

    reset_term = Series("reset: terminal task", target="<= 1 s")
    reset_web = Series("reset: browser task", target="<= 1 s")
    first_step = Series("  then the episode's first step")
    step = Series("step: move/scroll + settle + screenshot + a11y", target="<= 150 ms p50")
    step_parts: dict[str, Series] = {k: Series(f"  of which {k}") for k in ("settle_s", "screenshot_s", "a11y_s")}
    desktop = make_desktop(provider, **opts)
    try:
        desktop.start()
        desktop.reset(get_task(BROWSER_TASK).setup)  # warm caches: the first Chromium start reads from disk
        for series, task_id in ((reset_term, TERMINAL_TASK), (reset_web, BROWSER_TASK)):
            setup = get_task(task_id).setup
            for _ in range(resets):
                series.values.append(desktop.reset(setup).total_s)
                t0 = time.perf_counter()
                desktop.step([MoveTo(x=640, y=400)])  # every episode has one, before the next reset
                if series is reset_web:
                    first_step.values.append(time.perf_counter() - t0)
                if progress:
                    progress("reset")
        env = BlindActEnv(task=get_task(BROWSER_TASK), desktop=desktop)
        env.reset()
        rng = np.random.default_rng(0)
        for i in range(steps):
            if i % 4 == 3:
                action = Scroll(x=640, y=400, dy=int(rng.choice([-2, 2])))
            else:
                action = MoveTo(x=int(rng.integers(300, 900)), y=int(rng.integers(200, 650)))
            t0 = time.perf_counter()
            _, _, terminated, truncated, info = env.step(action)
            step.values.append(time.perf_counter() - t0)
            for key, series in step_parts.items():
                series.values.append(info["timing"].get(key, 0.0))
            if terminated or truncated:
                env.reset()
            if progress:
                progress("step")
        env.close()
    finally:
        desktop.close()
    return [cold, cold_page, reset_term, reset_web, first_step, step, *step_parts.values()]


def total_work(starts: int, resets: int, steps: int) -> int:
    return starts + 2 * resets + steps
