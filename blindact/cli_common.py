"""Pieces shared by the CLI verbs: consoles, progress bars, running a list of episodes."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console(stderr=False)
err = Console(stderr=True)


def progress_bar() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TextColumn("ETA"),
                    TimeRemainingColumn(), console=err, transient=False)


def default_run_dir(label: str) -> Path:
    return Path("runs") / f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{label}"


ERROR_ENDS = ("desktop_error", "agent_error", "timeout")


def add_executor_options(p) -> None:
    """--executor and its Ray options (the verbs that run suites add these)."""
    p.add_argument("--executor", default="local", choices=["local", "ray"],
                   help="local: worker threads here (default); ray: Ray actors on a cluster, one desktop each")
    p.add_argument("--ray-address", default=None,
                   help="Ray cluster to join (host:6379, 'auto', ray://host:10001); default: start a local one")
    p.add_argument("--ray-cpus", type=float, default=1.0, help="CPUs Ray reserves per desktop (default 1)")


def executor_options(args) -> tuple[str, dict]:
    kind = getattr(args, "executor", "local") or "local"
    if kind != "ray":
        return kind, {}
    return kind, {"address": getattr(args, "ray_address", None), "cpus_per_worker": getattr(args, "ray_cpus", 1.0)}


def run_specs(specs, run_dir: Path, args, title: str, *, config: dict | None = None, resume: bool | None = None):
    """Run episodes with a live display (done / failed / running, ETA); returns [(spec, result)]."""
    from blindact.runner import run_suite

    kind, options = executor_options(args)
    running: dict[str, str] = {}  # episode name -> task id
    counts = {"ok": 0, "failed": 0}
    with progress_bar() as progress:
        bar = progress.add_task(title, total=len(specs), status="starting")

        def show() -> None:
            current = ", ".join(sorted(running.values())[:2]) + (" ..." if len(running) > 2 else "")
            progress.update(bar, status=f"done {counts['ok']}, failed {counts['failed']}, running {len(running)}"
                                        + (f" ({current})" if current else ""))

        def on_start(spec):
            running[spec.name] = spec.task_id
            show()

        def on_result(spec, result):
            running.pop(spec.name, None)
            counts["failed" if result.end in ERROR_ENDS else "ok"] += 1
            progress.update(bar, advance=1)
            show()

        if resume is None:
            resume = not getattr(args, "fresh", False)
        results = run_suite(specs, run_dir, provider=args.provider, workers=args.workers,
                            episode_timeout=args.episode_timeout, on_result=on_result, on_start=on_start,
                            resume=resume, executor=kind, executor_options=options, config=config)
    return results


def add_suite_options(p) -> None:
    """Where and how a suite runs (for verbs outside cli.py that run suites, e.g. compare)."""
    p.add_argument("--provider", default="local", choices=["local", "docker"],
                   help="local: host processes in a bubblewrap sandbox (default); docker: one container per desktop")
    p.add_argument("--workers", type=int, default=1, help="desktops running at once (default 1)")
    p.add_argument("--run-dir", help="where the run goes (default runs/<time>-<label>)")
    p.add_argument("--episode-timeout", type=float, default=None, help="seconds before an episode is cut off")
    add_executor_options(p)


def split_list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]
