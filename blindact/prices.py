"""What tokens cost: the prices file (`--prices`: agent spec or glob -> {input, output} dollars per
1M tokens), the price of one agent in it, and the dollars of a token count. The report's cost table
and the run's budgets (blindact.run.budget) read prices through here and nowhere else."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path


def load_prices(path: str | Path | None) -> dict[str, dict[str, float]]:
    """Prices per million tokens, {"<agent spec or glob>": {"input": 3.0, "output": 15.0}}, from a
    JSON or YAML file."""
    if not path:
        return {}
    path = Path(path)
    text = path.read_text()
    if path.suffix in (".yaml", ".yml"):
        import yaml

        prices = yaml.safe_load(text)
    else:
        prices = json.loads(text)
    if not isinstance(prices, dict):
        raise ValueError(f"{path}: prices must map an agent spec (or glob) to {{input, output}} per 1M tokens")
    for key, value in prices.items():
        if not isinstance(value, dict) or not {"input", "output"} <= set(value):
            raise ValueError(f"{path}: price for {key!r} needs 'input' and 'output' (dollars per 1M tokens)")
    return prices


def price_for(agent: str, prices: dict) -> dict | None:
    """The first price whose key matches the agent spec, or its model name alone, as a glob."""
    model = agent.split(":", 1)[-1].split("@", 1)[0]
    for pattern, value in prices.items():
        if fnmatch.fnmatchcase(agent, pattern) or fnmatch.fnmatchcase(model, pattern):
            return value
    return None


def dollars(input_tokens: int, output_tokens: int, price: dict) -> float:
    """What that many tokens cost at a price of {input, output} dollars per 1M tokens."""
    return (input_tokens * price["input"] + output_tokens * price["output"]) / 1e6
