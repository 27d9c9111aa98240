"""What the verbs that run suites share: consoles, the options built from the registries (providers,
executors), turning them into SuiteOptions, and the checks that make a run fail before any desktop
starts when it could not work (unknown agent, missing key, unreachable server, no sandbox, no image)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from rich.console import Console

# In a log (no terminal) tables are laid out wide instead of cut at 80 columns.
console = Console(stderr=False, width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 200)

# Exit codes, shown in `blindact --help`.
EXIT_OK = 0
EXIT_PROBLEMS = 1   # validate found problems; a check failed
EXIT_USAGE = 2      # bad input: unknown task or agent, missing key, unreachable server; nothing ran
EXIT_SOME_ERRORS = 3  # the run finished, but some episodes ended in errors (kept; --resume retries desktop errors)
EXIT_ALL_ERRORS = 4   # every episode ended in an error: nothing was measured
EXIT_BUDGET = 5       # the run's budget stopped it; --resume with a bigger one runs the rest
EXIT_INTERRUPTED = 130
EXIT_CODES = f"""exit codes:
  {EXIT_OK}    done
  {EXIT_PROBLEMS}    `validate` (or a check) found problems
  {EXIT_USAGE}    bad input: unknown task or agent, missing API key, unreachable server, no sandbox or image; nothing ran
  {EXIT_SOME_ERRORS}    the run finished but some episodes ended in an error (they are recorded; --resume plays desktop errors again)
  {EXIT_ALL_ERRORS}    every episode ended in an error: nothing was measured
  {EXIT_BUDGET}    the run's budget (--max-cost, --max-tokens) stopped it: finished episodes are kept; --resume with a bigger budget runs the rest
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C, SIGTERM): finished episodes are kept"""


class UsageError(ValueError):
    """Input that cannot work, found before anything ran (exit code 2)."""


def default_run_dir(label: str) -> Path:
    return Path("runs") / f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{label}"


def split_list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def positive_float(text: str) -> float:
    """An argparse type: a number above zero (seconds, dollars)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number above 0, not {text}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text}")
    return value


def port_number(text: str) -> int:
    """A TCP port for argparse: 0 (any free one) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {value}")
    return value


def add_suite_options(p: argparse.ArgumentParser, *, run_dir_help: str = "where the run goes (default runs/<time>-<label>)") -> None:
    """Where and how a suite runs: provider (with each provider's own options), workers, executor."""
    from blindact.desktop.providers import providers
    from blindact.run.executors import EXECUTOR_HELP

    known = providers()
    p.add_argument("--provider", default="local", choices=list(known),
                   help="; ".join(f"{name}: {prov.summary}" for name, prov in known.items()))
    p.add_argument("--workers", type=positive_int, default=1, help="desktops running at once (default 1)")
    p.add_argument("--run-dir", help=run_dir_help)
    p.add_argument("--episode-timeout", type=positive_float, default=None,
                   help="seconds before an episode is cut off (the agent's own thinking included); default: none")
    group = p.add_argument_group("provider options (each applies to its provider only)")
    seen: set[str] = set()
    for prov in known.values():
        for opt in prov.options:
            if opt.cli_flag not in seen:
                seen.add(opt.cli_flag)
                group.add_argument(opt.cli_flag, dest=f"provider_{opt.name}", type=opt.type, default=opt.default,
                                   help=opt.help)
    p.add_argument("--executor", default="local", choices=list(EXECUTOR_HELP),
                   help="; ".join(f"{k}: {v}" for k, v in EXECUTOR_HELP.items()))
    p.add_argument("--ray-address", default=None,
                   help="ray: the cluster to join (host:6379, 'auto', ray://host:10001); default: start a local one")
    p.add_argument("--ray-cpus", type=float, default=1.0, help="ray: CPUs reserved per desktop (default 1)")


def add_budget_options(p: argparse.ArgumentParser, *, prices: bool = True) -> None:
    """What a run may spend (blindact.run.budget); `prices`: add --prices (a verb that reports has its own)."""
    group = p.add_argument_group("budgets (given anew on --resume; a reached run budget leaves the rest to do)")
    group.add_argument("--max-cost", type=positive_float, metavar="DOLLARS",
                       help="stop the run once its episodes have cost this much (needs --prices)")
    group.add_argument("--max-tokens", type=positive_int, metavar="N",
                       help="stop the run once its episodes have used this many input + output tokens")
    group.add_argument("--max-episode-cost", type=positive_float, metavar="DOLLARS",
                       help="end an episode (with `budget`) once it has cost this much; the run goes on "
                            "(needs --prices)")
    if prices:
        group.add_argument("--prices", help="JSON or YAML: agent spec or glob -> {input, output} dollars per 1M tokens")


def budget_of(args: argparse.Namespace, agents: list[str]):
    """The run's Budget from its flags (None without any); a dollar limit without a price is a usage error."""
    from blindact.prices import load_prices
    from blindact.run.budget import Budget

    try:
        prices = load_prices(args.prices)
    except OSError as exc:
        raise UsageError(f"--prices {args.prices}: {exc.strerror or exc}") from None
    try:
        return Budget.make(agents, prices, args.prices, max_cost=args.max_cost, max_tokens=args.max_tokens,
                           max_episode_cost=args.max_episode_cost)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def provider_options(args: argparse.Namespace) -> dict:
    """The options of the chosen provider, from its flags (flags of other providers are ignored)."""
    from blindact.desktop.providers import get_provider

    chosen = get_provider(args.provider)
    return {o.name: getattr(args, f"provider_{o.name}") for o in chosen.options
            if getattr(args, f"provider_{o.name}", None) is not None}


def add_agent_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the agent's constructor, typed as it declares (repeat for more), e.g. "
                        "temperature=0.2, max_tokens=2048, thinking_budget=4096, tool_version=20251124, "
                        "observe=a11y, max_display=1024x768; with several agents it goes to each agent that takes it")


def agent_options_of(agents: list[str], pairs: list[str]) -> dict[str, dict]:
    """Each agent's options from `--agent-opt` pairs; a pair no agent takes is a usage error."""
    from blindact.agents import agent_options

    out: dict[str, dict] = {}
    problems: dict[str, str] = {}
    for pair in pairs:
        taken = False
        for agent in agents:
            try:
                out.setdefault(agent, {}).update(agent_options(agent, [pair]))
                taken = True
            except ValueError as exc:
                problems[pair] = str(exc)
        if not taken:
            raise UsageError(problems[pair])
    return {a: o for a, o in out.items() if o}


def suite_options(args: argparse.Namespace, *, resume: bool = True, agent_options: dict | None = None):
    from blindact.run.suite import SuiteOptions

    executor_options = {}
    if args.executor == "ray":
        executor_options = {"address": args.ray_address, "cpus_per_worker": args.ray_cpus}
    return SuiteOptions(provider=args.provider, provider_options=provider_options(args),
                        agent_options=dict(agent_options or {}), episode_timeout=args.episode_timeout,
                        workers=args.workers, executor=args.executor, executor_options=executor_options,
                        resume=resume)


def preflight(specs, options) -> None:
    """Fail before any desktop starts when the run cannot work: each distinct agent is built once
    (a missing key, an unknown spec or mitigation, an unreachable server is named here), and the
    provider checks this machine can give its desktop (sandbox, Docker engine, image)."""
    from blindact.agents import make_agent
    from blindact.desktop.base import DesktopError
    from blindact.desktop.providers import get_provider

    seen = set()
    for spec in specs:
        key = (spec.agent, spec.mitigation)
        if key in seen:
            continue
        seen.add(key)
        agent = None
        try:
            agent = make_agent(spec.agent, mitigation=spec.mitigation, task=spec.task,
                               **options.agent_options.get(spec.agent, {}))
            check = getattr(agent, "preflight", None)
            if callable(check):
                check()
        except (ValueError, TypeError, KeyError, RuntimeError, OSError) as exc:
            raise UsageError(f"agent {spec.agent} (mitigation {spec.mitigation}): {exc}") from None
        finally:
            close = getattr(agent, "close", None)
            if callable(close):
                close()
    try:
        get_provider(options.provider).check(**options.provider_options)
    except DesktopError as exc:
        raise UsageError(f"provider {options.provider}: {exc}") from None
