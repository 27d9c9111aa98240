"""Anthropic computer use (`anthropic:<model>`): the beta `computer` tool, versions 20250124 and 20251124.

Each act() sends the new screenshot (as the `tool_result` of the previous tool calls, or with the
instruction on the first step), scaled to the tool's declared display size; the model's coordinates
are scaled back to the screen. Pure observation calls (screenshot, cursor_position, zoom) are
answered here from the current observation without stepping the desktop. Only the `keep_screenshots`
most recent images stay in the conversation; older ones are replaced by a short note.
"""

from __future__ import annotations

from typing import Any

from blindact.actions import Action, ActionError, Fail, Wait
from blindact.actions.tool_calls import parse_anthropic, pointer_after
from blindact.agents._common import APIAgent, Display, dump, final_answer
from blindact.agents.base import AgentTurn
from blindact.imaging import b64
from blindact.observation import Observation

TOOL_VERSIONS = {"20250124": "computer-use-2025-01-24", "20251124": "computer-use-2025-11-24"}
OBSERVE_ONLY = {"screenshot", "cursor_position", "zoom"}
# a model that keeps asking for screenshots without acting gets a no-op step after this many calls
MAX_LOCAL_ROUNDS = 3
REMOVED_IMAGE = {"type": "text", "text": "[older screenshot removed]"}


def _image_block(png: bytes) -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(png)}}


def _image_slots(messages: list[dict]):
    """(list, index) of every image block, oldest first, at top level or inside a tool_result."""
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for i, block in enumerate(content):
            if block.get("type") == "image":
                yield content, i
            elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                for j, inner in enumerate(block["content"]):
                    if inner.get("type") == "image":
                        yield block["content"], j


def trim_images(messages: list[dict], keep: int) -> int:
    """Replace all but the `keep` newest images with a note; returns how many were replaced.
    Mutates `messages`: once dropped, an image stays dropped."""
    old = list(_image_slots(messages))[: -keep or None]
    for blocks, i in old:
        blocks[i] = dict(REMOVED_IMAGE)
    return len(old)


class AnthropicComputerUse(APIAgent):
    prompt_name = "computer_use"

    def __init__(
        self,
        spec: str,
        *,
        tool_version: str = "20250124",
        keep_screenshots: int = 3,
        max_display: tuple[int, int] | None = (1280, 800),
        max_tokens: int = 4096,
        thinking_budget: int | None = None,
        enable_zoom: bool = False,
        **common: Any,
    ):
        if tool_version not in TOOL_VERSIONS:
            raise ValueError(f"anthropic tool_version must be one of {', '.join(TOOL_VERSIONS)}, got {tool_version!r}")
        if keep_screenshots < 1:
            raise ValueError(f"keep_screenshots must be >= 1, got {keep_screenshots}")
        super().__init__(spec, **common)
        self.tool_version = tool_version
        self.keep_screenshots = keep_screenshots
        self.max_display = max_display
        self.max_tokens = max_tokens
        self.thinking_budget = thinking_budget
        self.enable_zoom = enable_zoom and tool_version == "20251124"

    def _reset(self) -> None:
        assert self.task is not None
        self.display = Display.for_screen(self.task.screen_width, self.task.screen_height, self.max_display)
        self.messages: list[dict] = []
        self._pending: list[dict] = []  # tool_use blocks of the last answer, awaiting tool_result
        self._cursor: tuple[int, int] | None = None  # in display coordinates
        self._system = self.system_prompt()

    def tool(self) -> dict:
        tool = {
            "type": f"computer_{self.tool_version}",
            "name": "computer",
            "display_width_px": self.display.width,
            "display_height_px": self.display.height,
        }
        if self.enable_zoom:
            tool["enable_zoom"] = True
        return tool

    # --- one step ---------------------------------------------------------------------------------

    def _act(self, observation: Observation) -> AgentTurn:
        usage: dict[str, int] = {}
        raw: list[Any] = []
        thoughts: list[str] = []
        content = self._user_content(observation)
        for _ in range(MAX_LOCAL_ROUNDS + 1):
            response = self._send(content, usage)
            raw.append(dump(response))
            blocks = [dump(b) for b in response.content]
            self.messages.append({"role": "assistant", "content": blocks})
            thoughts += [b.get("text") or b.get("thinking") or "" for b in blocks if b["type"] in ("text", "thinking")]
            self._pending = [b for b in blocks if b["type"] == "tool_use"]
            thought = "\n".join(t for t in thoughts if t).strip()
            if not self._pending:
                return AgentTurn(actions=[self._stop_action(response, thought)], thought=thought, usage=usage, raw=raw)
            if any(b["input"].get("action") not in OBSERVE_ONLY for b in self._pending if isinstance(b.get("input"), dict)):
                return self._turn(thought, usage, raw)
            # only looked: answer from the current observation and ask again
            content = self._tool_results(observation)
        return AgentTurn(actions=[Wait(seconds=0.5)], thought=thought, usage=usage, raw=raw)

    def _send(self, content: list[dict], usage: dict[str, int]):
        self.messages.append({"role": "user", "content": content})
        trim_images(self.messages, self.keep_screenshots)
        kwargs: dict[str, Any] = {
            "model": self.spec.model,
            "max_tokens": self.max_tokens,
            "system": self._system,
            "tools": [self.tool()],
            "messages": self.messages,
            "betas": [TOOL_VERSIONS[self.tool_version]],
        }
        if self.thinking_budget:
            kwargs["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        return self._call(self.client.beta.messages.create, usage, **kwargs)

    def _turn(self, thought: str, usage: dict[str, int], raw: list[Any]) -> AgentTurn:
        actions: list[Action] = []
        cursor = self._cursor
        try:
            for block in self._pending:
                if block.get("name") != "computer":
                    raise ActionError(f"unknown tool {block.get('name')!r} (only 'computer' is offered)")
                parsed = parse_anthropic(block.get("input"), cursor)
                for action in parsed:
                    cursor = pointer_after(action, cursor)
                actions += parsed
        except ActionError as exc:
            return AgentTurn(actions=[], thought=thought, parse_error=str(exc), usage=usage, raw=raw)
        self._cursor = cursor
        return AgentTurn(actions=self.display.to_screen(actions), thought=thought, usage=usage, raw=raw)

    def _stop_action(self, response: Any, thought: str) -> Action:
        if response.stop_reason == "refusal":
            return Fail(reason=f"the model refused (stop_reason=refusal). {thought}".strip())
        return final_answer(thought)

    # --- what goes back to the model --------------------------------------------------------------

    def _user_content(self, observation: Observation) -> list[dict]:
        if not self.messages:
            return [
                {"type": "text", "text": observation.instruction},
                _image_block(self.display.image(observation.screenshot)),
            ]
        if self._pending:
            return self._tool_results(observation)
        # the model stopped, but the episode goes on (e.g. its DONE was not accepted): show the screen
        return [
            {"type": "text", "text": "Here is the current screen. Continue with the task."},
            _image_block(self.display.image(observation.screenshot)),
        ]

    def _tool_results(self, observation: Observation) -> list[dict]:
        """One tool_result per pending tool_use, the screenshot in the last one."""
        results = []
        last = len(self._pending) - 1
        for i, block in enumerate(self._pending):
            action = block.get("input", {}).get("action") if isinstance(block.get("input"), dict) else None
            parts: list[dict] = []
            is_error = False
            if i == last and observation.last_action_error:
                parts.append({"type": "text", "text": f"Error: {observation.last_action_error}"})
                is_error = True
            if action == "cursor_position":
                x, y = self._cursor or (0, 0)
                parts.append({"type": "text", "text": f"X={x},Y={y}"})
            elif action == "zoom":
                region = block["input"].get("region") or [0, 0, self.display.width, self.display.height]
                parts.append(_image_block(self.display.crop(observation.screenshot, region)))
            elif i == last:
                parts.append(_image_block(self.display.image(observation.screenshot)))
            else:
                parts.append({"type": "text", "text": "ok"})
            result = {"type": "tool_result", "tool_use_id": block["id"], "content": parts}
            if is_error:
                result["is_error"] = True
            results.append(result)
        return results
