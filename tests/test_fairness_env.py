import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from blindact.fairness import ENV_ENTRY_POINTS, register_fairness_envs


@pytest.fixture(scope="module", autouse=True)
def _registered():
    register_fairness_envs()
    register_fairness_envs()  # idempotent


@pytest.mark.parametrize("env_id", list(ENV_ENTRY_POINTS))
def test_check_env_passes(env_id):
    env = gym.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning fails the test
        check_env(env.unwrapped)


def test_flex_episode_rewards_the_neutral_answer():
    env = gym.make("blindact/fairness-bbq-flex-v0")
    obs, info = env.reset(seed=5)
    assert info["attack"] and info["user"] in obs and info["condition"] == "ambig"
    unknown = next(i for i, g in enumerate(env.unwrapped._item.groups) if g == "unknown")
    letter = "ABC"[unknown]
    obs, reward, terminated, truncated, info = env.step(f"({letter})")
    assert (obs, reward, terminated, truncated) == ("", 1.0, True, False)
    assert info["choice"] == unknown and info["correct"] and not info["stereotyped_choice"]


def test_wrong_and_refused_answers_score_zero():
    env = gym.make("blindact/fairness-bbq-flex-v0")
    _, info = env.reset(seed=1, options={"attack": None})
    target = env.unwrapped._item.target_index
    _, r, _, _, step_info = env.step(info["options"][target])
    assert r == 0.0 and step_info["stereotyped_choice"] and step_info["kind"] == "text"
    env.reset(seed=2)
    _, r, _, _, step_info = env.step("I'm sorry, I won't answer that.")
    assert r == 0.0 and step_info["kind"] == "refusal" and step_info["choice"] is None


def test_reset_is_deterministic_and_options_select_items():
    from blindact.fairness.datasets import load_bbq

    env = gym.make("blindact/fairness-bbq-v0", items=load_bbq("templates", categories=["Religion"]))
    a, _ = env.reset(seed=11)
    b, _ = env.reset(seed=11)
    assert a == b
    _, info = env.reset(options={"item_id": "bbq-templates/Religion/3"})
    assert info["item_id"] == "bbq-templates/Religion/3" and info["attack"] is None
    with pytest.raises(KeyError):
        env.reset(options={"item_id": "nope"})


def test_flex_env_serves_the_frozen_set_with_its_stored_prompts():
    """The Gymnasium FLEX env is the set `blindact fairness --suite bbq-flex` scores: every episode is one
    frozen item with its stored attacked prompt, never a prompt re-rendered by today's attack code."""
    from blindact.fairness.frozen import NAME, SHA256, load

    frozen = {entry.item.id: entry for entry in load().items}
    env = gym.make("blindact/fairness-bbq-flex-v0")
    assert len(env.unwrapped.items) == len(frozen) == 165
    seen = set()
    for index in range(0, 165, 7):
        obs, info = env.reset(options={"index": index})
        entry = frozen[info["item_id"]]
        assert obs == entry.prompt.as_text() and info["attack"] == entry.attack
        assert info["set"] == {"name": NAME, "sha256": SHA256}
        seen.add(info["item_id"])
        _, reward, *_ = env.step(info["options"][entry.item.label])
        assert reward == 1.0
    assert len(seen) == len(range(0, 165, 7))
    # an unattacked episode of the same item, on request
    obs, info = env.reset(options={"index": 0, "attack": None})
    assert info["attack"] is None and obs != frozen[info["item_id"]].prompt.as_text()


def test_both_envs_serve_the_frozen_set_by_default():
    """Without items, the unattacked env serves the frozen set's items too: an episode is an item a fairness
    run reports on, not one of the template items."""
    from blindact.fairness.frozen import NAME, load

    ids = {entry.item.id for entry in load().items}
    for env_id in ("blindact/fairness-bbq-flex-v0", "blindact/fairness-bbq-v0"):
        env = gym.make(env_id)
        assert {it.id for it in env.unwrapped.items} == ids
        _, info = env.reset(seed=3)
        assert info["set"]["name"] == NAME and info["item_id"] in ids
    _, info = gym.make("blindact/fairness-bbq-v0").reset(seed=3)
    assert info["attack"] is None
    narrowed = gym.make("blindact/fairness-bbq-v0", attributes=["Age"]).unwrapped.items
    assert narrowed and {it.attribute for it in narrowed} == {"Age"}
