"""End to end with a real model on a real server: SmolLM2-135M via llama.cpp's OpenAI-compatible server.

The model is tiny and answers badly; nothing here asserts what it says. The tests check that the loop
runs, every answer is either parsed into actions or recorded as unparseable, usage is counted, and
(with a desktop) that the pilot episode's trajectory is complete.
"""

from __future__ import annotations

import json

import pytest
from fake_apis import brief, observation

from blindact.agents import make_agent
from blindact.llm import chat

pytestmark = pytest.mark.slowmodel

# SmolLM2 is served with a 2048-token context: the action-format prompt takes about half of it,
# so the agent sees only the current step and a short accessibility tree
SMALL = {"observe": "a11y", "history_turns": 0, "max_a11y_chars": 400, "max_tokens": 96, "request_timeout": 120}
PILOT_TASK = "pilot-contextual-threat-comment"




def test_chat_and_json_schema_against_the_real_server(smollm_server):
    reply = chat(smollm_server.spec, [{"role": "user", "content": "Say hello."}], max_tokens=16)
    assert isinstance(reply.text, str)
    assert reply.usage["input_tokens"] > 0 and reply.usage["output_tokens"] > 0

    schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["A", "B", "C"]}},
              "required": ["answer"]}
    reply = chat(smollm_server.spec, [{"role": "user", "content": "Pick A, B or C."}], max_tokens=64,
                 json_schema=schema)
    # the server constrains the output with a grammar built from the schema
    assert json.loads(reply.text)["answer"] in {"A", "B", "C"}


@pytest.mark.parametrize("action_format", ["pyautogui", "json"])
def test_agent_loop_parses_or_records_every_answer(smollm_server, action_format):
    agent = make_agent(smollm_server.spec, mitigation="contextual", action_format=action_format, **SMALL)
    agent.reset(brief(width=1280, height=720, max_steps=3))
    turns = 0
    for step in range(3):
        turn = agent.act(observation(step, width=1280, height=720))
        turns += 1
        # exactly one of: actions, a recorded parse error, or an ending (e.g. the answer hit the token limit)
        assert bool(turn.actions) + bool(turn.parse_error) + (turn.end is not None) == 1, turn
        assert turn.usage["input_tokens"] > 0
        assert turn.raw["choices"][0]["message"]["role"] == "assistant"
        if turn.end is not None:
            assert turn.end_detail, turn  # why it ended (finish_reason=length) is recorded
            break
    assert agent.api_calls == turns
    assert 0 <= agent.parse_errors <= 3


@pytest.mark.desktop
def test_pilot_task_end_to_end(smollm_server, tmp_path):
    from blindact.registration import make_env
    from blindact.run.episode import run_episode
    from blindact.tasks import get_task
    from blindact.trajectory import read_episode

    agent = make_agent(smollm_server.spec, mitigation="reflective", **SMALL)
    # 5 steps instead of 15: each SmolLM2 call takes seconds on 2 cores, and 5 prove the loop as well
    task = get_task(PILOT_TASK).model_copy(update={"max_steps": 5})
    env = make_env(task=task, run_dir=tmp_path, episode_meta={"agent": agent.name, "mitigation": agent.mitigation,
                                                            "mitigation_info": agent.mitigation_info})
    try:
        result = run_episode(env, agent, timeout_s=900)
    finally:
        env.close()

    # the tiny model often rambles past max_tokens: the server says finish_reason=length, a token limit
    assert result.end in {"done", "fail", "ask_user", "max_steps", "token_limit"}, result.error
    assert 1 <= result.steps <= 5
    assert result.unparseable == agent.parse_errors
    assert result.usage["input_tokens"] == agent.usage["input_tokens"] > 0

    episode = read_episode(tmp_path / "episodes" / PILOT_TASK)
    assert episode["meta"]["mitigation_info"]["name"] == "reflective" and episode["meta"]["mitigation"] == "reflective"
    steps = episode["steps"]
    assert [s["step"] for s in steps] == list(range(result.steps + 1))
    for record in steps[1:]:
        assert "thought" in record and "usage" in record and record["usage"]["input_tokens"] > 0
        cut = result.end == "token_limit" and record is steps[-1]
        assert bool(record["actions"]) or bool(record["parse_error"]) or cut, record  # parsed, or recorded as not
    assert sum(bool(s.get("parse_error")) for s in steps) == result.unparseable
    assert episode["result"] is not None
