"""A scripted model server: plays a fixed conversation to real agent CLIs, offline.

It speaks the three wire protocols the agent CLIs use -- OpenAI Responses (`POST
/v1/responses`, codex), Anthropic Messages (`POST /v1/messages`, Claude Code) and OpenAI
Chat Completions (`POST /v1/chat/completions`, opencode and other OpenAI-compatible
clients) -- streamed as Server-Sent Events with usage blocks. So an adapter is tested
against the real binary, with known answers and known token counts.

A script is JSON:

    {"usage": {"input": 1200, "cached_input": 1000, "output": 60, "reasoning": 20},
     "side_usage": {"input": 40, "output": 5},
     "side_message": "Scripted session",
     "idle_timeout": 120,
     "turns": [
       {"calls": [{"shell": "ls"}]},
       {"calls": [{"write": "a.txt", "content": "hello\\n"}]},
       {"calls": [{"edit": "a.txt", "old": "hello", "new": "bye"}], "usage": {...}},
       {"message": "done"},
       {"fault": 429, "times": 1},
       {"fault": "drop"},
       {"fault": "hang", "seconds": 30}
     ]}

A judge persona answers the blind pairwise prompts of `agentbench judge` by a rule instead of
the turns: `{"judge": "shorter", "turns": []}` prefers the change whose diff has fewer lines
(a tie when equal) and names one minor finding in the longer one; `"first"` always answers
"A". It reads the two diffs from the prompt's "## Change A" / "## Change B" sections. Asked
for a review (`agentbench review`: one "## Change" section), "shorter" names one minor finding
at the first changed line of each file the diff adds; "first" still answers a verdict. A
request without `"stream": true` gets one JSON response (Chat Completions and Messages).

Only requests that carry tools advance the script (clients also send side requests, e.g.
for a title); side requests get `side_message` and `side_usage`. A client asked with no tools
at all (an agent CLI as a judge) sends only side requests: its answer is `side_message`. A
turn of calls may take two responses for clients whose edit tools need a prior read (the
server reads first). A fault answers `times` requests (default: every request from then
on). Usage numbers have the project's meaning (input includes cached_input, output includes
reasoning) and are converted to each protocol's own convention. Every request is recorded
with what was served.

A prefix cache, as providers keep one, is modelled with `"prefix_cache": "key"` (one cache
per API key: the `Authorization` or `x-api-key` header) or `"global"` (one for all). A
request's prompt is its `tools`, then `instructions` or `system`, then `input` or `messages`,
each as compact JSON with sorted keys and without `id` keys (item ids, which codex makes
afresh in every session, are not prompt text), joined in that order. The server remembers every
prompt it was sent (side requests too) and reports as cached the share of the new prompt
that is the longest common prefix with any remembered one, in whole tokens of the response's
scripted input: cached_input = input * matched characters // prompt characters (rounded
down; 0 for the first request of a cache). That replaces the script's cached_input;
cache_write is kept, cut to what is left of input. So the same requests in the same order
always report the same cached tokens, and a warm-up request with the same prefix shows as
cached tokens in the requests after it.
"""

from __future__ import annotations

import json
import re
import ssl
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DEFAULT_IDLE_TIMEOUT = 120.0
MAX_HANG_SECONDS = 3600.0


class ScriptError(ValueError):
    """A script that cannot be played; the message names the field and the fix."""


@dataclass(frozen=True)
class Usage:
    """Tokens one response reports, in the project's meaning (see agents.base.TokenUsage)."""

    input: int = 0
    cached_input: int = 0
    output: int = 0
    reasoning: int = 0
    cache_write: int = 0  # part of input written to the cache (Responses: only when not 0)

    def __post_init__(self) -> None:
        if self.cached_input + self.cache_write > self.input:
            raise ScriptError(
                f"usage {asdict(self)}: cached_input + cache_write must not exceed input "
                "(input counts every prompt token, cached ones included)"
            )
        if self.reasoning > self.output:
            raise ScriptError(
                f"usage {asdict(self)}: reasoning must not exceed output "
                "(output counts reasoning tokens too)"
            )

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Call:
    """One tool call the model makes: kind is shell, write or edit."""

    kind: str
    path: str = ""
    command: str = ""
    content: str = ""
    old: str = ""
    new: str = ""


@dataclass(frozen=True)
class Turn:
    """One step of the script: tool calls, a final message, or a fault."""

    calls: tuple[Call, ...] = ()
    message: str | None = None
    fault: str | None = None  # "429", "401", "500", ..., "drop", "hang"
    seconds: float = 0.0  # for hang
    times: int | None = None  # for faults: how many requests; None = all from now on
    usage: Usage | None = None


@dataclass(frozen=True)
class Script:
    turns: tuple[Turn, ...]
    usage: Usage = Usage(input=1000, cached_input=800, output=50, reasoning=10)
    side_usage: Usage = Usage(input=30, output=5)
    side_message: str = "Scripted session"
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    model: str = "scripted-model"
    judge: str | None = None  # a judge persona (JUDGES), answering judge prompts by rule
    prefix_cache: str | None = None  # PREFIX_SCOPES: cached tokens from seen prompt prefixes


JUDGES = ("shorter", "first")
_CHANGE = re.compile(r"^## Change ([AB])\n.*?^(`{3,})diff\n(.*?)^\2$", re.DOTALL | re.MULTILINE)


_REVIEWED = re.compile(r"^## Change\n.*?^(`{3,})diff\n(.*?)^\1$", re.DOTALL | re.MULTILINE)
_ADDED = re.compile(r"^--- /dev/null\n\+\+\+ b/(\S+)\n@@ -0,0 \+(\d+)", re.MULTILINE)


def review_answer(prompt: str) -> str:
    """The "shorter" persona's review: one minor finding per file the change adds."""
    reviewed = _REVIEWED.search(prompt)
    added = _ADDED.findall(reviewed.group(2)) if reviewed else []
    findings = [
        {
            "severity": "minor",
            "file": path,
            "line": int(line),
            "text": "a file the task never asked for",
        }
        for path, line in added
    ]
    return json.dumps({"findings": findings})


def judge_answer(persona: str, prompt: str) -> str:
    """The persona's verdict on a judge prompt (see the module), as the JSON it asks for."""
    diffs = {label: body for label, _fence, body in _CHANGE.findall(prompt)}
    if persona == "shorter" and not diffs and _REVIEWED.search(prompt):
        return review_answer(prompt)
    if persona == "first" or set(diffs) != {"A", "B"}:
        return json.dumps({"verdict": "A", "findings": []})
    size = {label: len(body.splitlines()) for label, body in diffs.items()}
    if size["A"] == size["B"]:
        return json.dumps({"verdict": "tie", "findings": []})
    shorter, longer = ("A", "B") if size["A"] < size["B"] else ("B", "A")
    finding = {"change": longer, "severity": "minor", "file": "", "line": None}
    finding["text"] = "a longer change than the task needs"
    return json.dumps({"verdict": shorter, "findings": [finding]})


def load_script(source: Path | str | Mapping[str, Any]) -> Script:
    """Parse a script from a JSON file path or an already-decoded mapping."""
    where = "script"
    if isinstance(source, (str, Path)):
        where = str(source)
        try:
            data = json.loads(Path(source).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ScriptError(f"{where}: cannot read the script as JSON: {exc}") from None
    else:
        data = source
    if not isinstance(data, Mapping) or not isinstance(data.get("turns"), list):
        raise ScriptError(f'{where}: expected an object with a "turns" list')
    return Script(
        turns=tuple(_parse_turn(t, f"{where}: turns[{i}]") for i, t in enumerate(data["turns"])),
        usage=_parse_usage(data.get("usage"), f"{where}: usage") or Script.usage,
        side_usage=_parse_usage(data.get("side_usage"), f"{where}: side_usage")
        or Script.side_usage,
        side_message=str(data.get("side_message", Script.side_message)),
        idle_timeout=float(data.get("idle_timeout", DEFAULT_IDLE_TIMEOUT)),
        model=str(data.get("model", Script.model)),
        judge=_parse_judge(data.get("judge"), f"{where}: judge"),
        prefix_cache=_parse_scope(data.get("prefix_cache"), f"{where}: prefix_cache"),
    )


PREFIX_SCOPES = ("key", "global")
PROMPT_PARTS = (("tools",), ("instructions", "system"), ("input", "messages"))


def _parse_scope(raw: Any, where: str) -> str | None:
    if raw is not None and raw not in PREFIX_SCOPES:
        raise ScriptError(f"{where}: {raw!r} is not a cache scope; use one of {PREFIX_SCOPES}")
    return raw


def _without_ids(value: Any) -> Any:
    """value without `id` keys: item ids name stored items, they are not prompt text."""
    if isinstance(value, Mapping):
        return {k: _without_ids(v) for k, v in value.items() if k != "id"}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


def prompt_text(body: Mapping[str, Any]) -> str:
    """A request's prompt as the prefix cache compares it (see the module)."""
    parts = []
    for names in PROMPT_PARTS:
        for name in names:
            if name in body:
                text = json.dumps(_without_ids(body[name]), sort_keys=True, separators=(",", ":"))
                parts.append(text)
    return "\n".join(parts)


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of a and b (binary search on slices)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class PrefixCache:
    """The prompts seen per scope, and the cached share of a new one. Thread-safe."""

    def __init__(self) -> None:
        self._seen: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def serve(self, scope: str, prompt: str, usage: Usage) -> Usage:
        """usage with cached_input from the longest seen prefix; the prompt is remembered."""
        with self._lock:
            seen = self._seen.setdefault(scope, [])
            matched = max((common_prefix(prompt, old) for old in seen), default=0)
            seen.append(prompt)
        cached = usage.input * matched // len(prompt) if prompt else 0
        writes = min(usage.cache_write, usage.input - cached)
        return Usage(usage.input, cached, usage.output, usage.reasoning, writes)


def _parse_judge(raw: Any, where: str) -> str | None:
    if raw is not None and raw not in JUDGES:
        raise ScriptError(f"{where}: {raw!r} is not a judge persona; use one of {JUDGES}")
    return raw


def _parse_usage(raw: Any, where: str) -> Usage | None:
    if raw is None:
        return None
    fields = set(Usage.__dataclass_fields__)
    if not isinstance(raw, Mapping) or not set(raw) <= fields:
        raise ScriptError(f"{where}: expected an object with keys from {sorted(fields)}")
    if not all(isinstance(v, int) and v >= 0 for v in raw.values()):
        raise ScriptError(f"{where}: token counts must be non-negative integers")
    try:
        return Usage(**raw)
    except ScriptError as exc:
        raise ScriptError(f"{where}: {exc}") from None


def _parse_turn(raw: Any, where: str) -> Turn:
    if not isinstance(raw, Mapping):
        raise ScriptError(f"{where}: expected an object")
    usage = _parse_usage(raw.get("usage"), f"{where}.usage")
    kinds = [k for k in ("calls", "message", "fault") if k in raw]
    if len(kinds) != 1:
        raise ScriptError(f'{where}: give exactly one of "calls", "message" or "fault"')
    if "message" in raw:
        return Turn(message=str(raw["message"]), usage=usage)
    if "fault" in raw:
        fault = str(raw["fault"])
        if not (fault in ("drop", "hang") or (fault.isdigit() and 400 <= int(fault) <= 599)):
            raise ScriptError(
                f"{where}.fault: {fault!r} is not a fault; use an HTTP status (429, 401, 500), "
                '"drop" or "hang"'
            )
        times = raw.get("times")
        if times is not None and (not isinstance(times, int) or times < 1):
            raise ScriptError(f"{where}.times: expected a positive integer or null (always)")
        seconds = min(float(raw.get("seconds", 60)), MAX_HANG_SECONDS)
        return Turn(fault=fault, times=times, seconds=seconds, usage=usage)
    calls = raw["calls"]
    if not isinstance(calls, list) or not calls:
        raise ScriptError(f"{where}.calls: expected a non-empty list of tool calls")
    return Turn(calls=tuple(_parse_call(c, f"{where}.calls[{i}]") for i, c in enumerate(calls)))


def _parse_call(raw: Any, where: str) -> Call:
    if isinstance(raw, Mapping) and isinstance(raw.get("shell"), str):
        return Call("shell", command=raw["shell"])
    if isinstance(raw, Mapping) and isinstance(raw.get("write"), str):
        return Call("write", path=raw["write"], content=str(raw.get("content", "")))
    if isinstance(raw, Mapping) and isinstance(raw.get("edit"), str):
        if not isinstance(raw.get("old"), str) or not isinstance(raw.get("new"), str):
            raise ScriptError(f'{where}: an edit needs "old" and "new" strings')
        return Call("edit", path=raw["edit"], old=raw["old"], new=raw["new"])
    raise ScriptError(
        f'{where}: expected {{"shell": CMD}}, {{"write": PATH, "content": TEXT}} or '
        f'{{"edit": PATH, "old": TEXT, "new": TEXT}}'
    )


# ---------------------------------------------------------------------------------------------
# What one response carries, independent of the protocol.


@dataclass(frozen=True)
class ToolUse:
    """A tool call in the client's own shape: tool name and arguments."""

    name: str
    arguments: Mapping[str, Any]
    custom_input: str | None = None  # Responses API "custom" (freeform) tools take raw text


@dataclass(frozen=True)
class Reply:
    """One model response: tool uses or text, and the usage it reports."""

    usage: Usage
    tool_uses: tuple[ToolUse, ...] = ()
    text: str = ""


@dataclass
class RequestRecord:
    """One request the server received and what it served."""

    index: int
    path: str
    protocol: str
    has_tools: bool
    turn: int | None  # script turn played; None for side requests and beyond the script
    served: str  # "calls", "message", "side", "judge", "fault:429", "drop", "hang", "end-of-script"
    usage: dict[str, int] | None  # None when no usage was reported (faults)
    body: Any = field(repr=False, default=None)
    tools: list[str] = field(default_factory=list)  # the tool calls served, by name, in order

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# Protocols: how tool calls look to each client, and how a reply is streamed.

_WORKDIR_PATTERNS = (
    re.compile(r"<cwd>([^<]+)</cwd>"),
    re.compile(r"Primary working directory: ([^\n]+)"),
    re.compile(r"Working directory: ([^\n]+)"),
)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def workdir_of(body: Any) -> str | None:
    """The client's working directory as its prompt states it (None if it does not)."""
    for text in _strings(body):
        for pattern in _WORKDIR_PATTERNS:
            match = pattern.search(text)
            if match:
                return match.group(1).strip()
    return None


def _absolute(path: str, workdir: str | None) -> str:
    if path.startswith("/") or workdir is None:
        return path
    return f"{workdir.rstrip('/')}/{path}"


def _sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {payload}\n\n".encode()


class Protocol:
    """One wire protocol: which tools the client offers and how replies are framed."""

    name: str
    reads_before_edit = False  # the client refuses to edit a file it has not read

    def tool_names(self, body: Mapping[str, Any]) -> list[str]:
        return [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, Mapping)]

    def tool_uses(self, calls: Sequence[Call], body: Mapping[str, Any]) -> list[ToolUse]:
        raise NotImplementedError

    def read_uses(self, paths: Sequence[str], body: Mapping[str, Any]) -> list[ToolUse]:
        raise NotImplementedError

    def stream(self, reply: Reply, model: str, seq: int) -> Iterator[bytes]:
        raise NotImplementedError

    def error_body(self, status: int) -> dict[str, Any]:
        kind = _ERROR_KINDS.get(status, "api_error")
        return {"error": {"message": f"scripted {status} ({kind})", "type": kind, "code": kind}}

    def complete(self, reply: Reply, model: str, seq: int) -> dict[str, Any] | None:
        """A text reply as one JSON response (not streamed); None: not served so."""
        return None


_ERROR_KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class FileTools:
    """How a client names its shell/read/write/edit tools and their arguments."""

    shell: str
    read: str
    write: str
    edit: str
    path: str
    content: str
    old: str
    new: str


class FileToolsProtocol(Protocol):
    """A client that edits through named file tools (Claude Code, opencode)."""

    reads_before_edit = True
    tools: FileTools

    def tool_uses(self, calls: Sequence[Call], body: Mapping[str, Any]) -> list[ToolUse]:
        workdir, t = workdir_of(body), self.tools
        uses = []
        for call in calls:
            path = _absolute(call.path, workdir)
            if call.kind == "shell":
                uses.append(ToolUse(t.shell, {"command": call.command, "description": "Run"}))
            elif call.kind == "write":
                uses.append(ToolUse(t.write, {t.path: path, t.content: call.content}))
            else:
                uses.append(ToolUse(t.edit, {t.path: path, t.old: call.old, t.new: call.new}))
        return uses

    def read_uses(self, paths: Sequence[str], body: Mapping[str, Any]) -> list[ToolUse]:
        workdir = workdir_of(body)
        return [ToolUse(self.tools.read, {self.tools.path: _absolute(p, workdir)}) for p in paths]


def _apply_patch_text(call: Call) -> str:
    """A codex apply_patch envelope for a write (Add File) or an edit (Update File)."""
    if call.kind == "write":
        body = "".join(f"+{line}\n" for line in call.content.splitlines())
        return f"*** Begin Patch\n*** Add File: {call.path}\n{body}*** End Patch\n"
    old = "".join(f"-{line}\n" for line in call.old.splitlines())
    new = "".join(f"+{line}\n" for line in call.new.splitlines())
    return f"*** Begin Patch\n*** Update File: {call.path}\n@@\n{old}{new}*** End Patch\n"


class ResponsesProtocol(Protocol):
    """OpenAI Responses API as codex speaks it: exec_command for shells, apply_patch for files."""

    name = "responses"

    def tool_uses(self, calls: Sequence[Call], body: Mapping[str, Any]) -> list[ToolUse]:
        offered = {str(t.get("name")): t for t in body.get("tools") or [] if isinstance(t, dict)}
        uses = []
        for call in calls:
            if call.kind == "shell":
                uses.append(self._shell(call.command, offered))
                continue
            patch = _apply_patch_text(call)
            tool = offered.get("apply_patch")
            if tool is not None and tool.get("type") == "custom":
                uses.append(ToolUse("apply_patch", {}, custom_input=patch))
            elif tool is not None:
                uses.append(ToolUse("apply_patch", {"input": patch}))
            else:  # codex intercepts apply_patch heredocs run through its shell tool
                uses.append(self._shell(f"apply_patch <<'PATCH'\n{patch}PATCH", offered))
        return uses

    @staticmethod
    def _shell(command: str, offered: Mapping[str, Any]) -> ToolUse:
        if "exec_command" in offered or not offered:
            return ToolUse("exec_command", {"cmd": command})
        if "shell_command" in offered:
            return ToolUse("shell_command", {"command": command})
        return ToolUse("shell", {"command": ["bash", "-lc", command]})

    def stream(self, reply: Reply, model: str, seq: int) -> Iterator[bytes]:
        rid = f"resp_{seq}"
        yield _sse("response.created", {"type": "response.created", "response": {"id": rid}})
        items: list[dict[str, Any]] = []
        for n, use in enumerate(reply.tool_uses):
            call_id = f"call_{seq}_{n}"
            if use.custom_input is not None:
                items.append(
                    {
                        "type": "custom_tool_call",
                        "id": f"ctc_{seq}_{n}",
                        "call_id": call_id,
                        "name": use.name,
                        "input": use.custom_input,
                        "status": "completed",
                    }
                )
            else:
                items.append(
                    {
                        "type": "function_call",
                        "id": f"fc_{seq}_{n}",
                        "call_id": call_id,
                        "name": use.name,
                        "arguments": json.dumps(use.arguments),
                        "status": "completed",
                    }
                )
        if reply.text:
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{seq}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
                }
            )
        for index, item in enumerate(items):
            yield _sse(
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": index, "item": item},
            )
        u = reply.usage
        details = {"cached_tokens": u.cached_input}
        if u.cache_write:  # reported only when there were writes, as gateways that count them
            details["cache_write_tokens"] = u.cache_write
        usage = {
            "input_tokens": u.input,
            "input_tokens_details": details,
            "output_tokens": u.output,
            "output_tokens_details": {"reasoning_tokens": u.reasoning},
            "total_tokens": u.input + u.output,
        }
        completed = {"id": rid, "model": model, "status": "completed", "usage": usage}
        yield _sse("response.completed", {"type": "response.completed", "response": completed})


class MessagesProtocol(FileToolsProtocol):
    """Anthropic Messages API as Claude Code speaks it: Bash, Read, Write, Edit."""

    name = "messages"
    tools = FileTools(
        "Bash", "Read", "Write", "Edit", "file_path", "content", "old_string", "new_string"
    )

    def stream(self, reply: Reply, model: str, seq: int) -> Iterator[bytes]:
        u = reply.usage
        start_usage = {
            "input_tokens": u.input - u.cached_input - u.cache_write,
            "cache_creation_input_tokens": u.cache_write,
            "cache_read_input_tokens": u.cached_input,
            "output_tokens": 1,
        }
        message: dict[str, Any] = {
            "id": f"msg_{seq}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": start_usage,
        }
        yield _sse("message_start", {"type": "message_start", "message": message})
        blocks: list[tuple[dict[str, Any], dict[str, Any]]] = []
        if reply.text:
            blocks.append(
                ({"type": "text", "text": ""}, {"type": "text_delta", "text": reply.text})
            )
        for n, use in enumerate(reply.tool_uses):
            blocks.append(
                (
                    {"type": "tool_use", "id": f"toolu_{seq}_{n}", "name": use.name, "input": {}},
                    {"type": "input_json_delta", "partial_json": json.dumps(use.arguments)},
                )
            )
        for index, (start, delta) in enumerate(blocks):
            yield _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
            yield _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
        stop = "tool_use" if reply.tool_uses else "end_turn"
        yield _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {**start_usage, "output_tokens": u.output},
            },
        )
        yield _sse("message_stop", {"type": "message_stop"})

    def error_body(self, status: int) -> dict[str, Any]:
        kind = _ERROR_KINDS.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": f"scripted {status} ({kind})"}}

    def complete(self, reply: Reply, model: str, seq: int) -> dict[str, Any] | None:
        u = reply.usage
        usage = {
            "input_tokens": u.input - u.cached_input - u.cache_write,
            "cache_creation_input_tokens": u.cache_write,
            "cache_read_input_tokens": u.cached_input,
            "output_tokens": u.output,
        }
        content = [{"type": "text", "text": reply.text}]
        return {
            "id": f"msg_{seq}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "end_turn",
            "usage": usage,
        }


class ChatProtocol(FileToolsProtocol):
    """OpenAI Chat Completions as opencode speaks it: bash, read, write, edit."""

    name = "chat"
    tools = FileTools(
        "bash", "read", "write", "edit", "filePath", "content", "oldString", "newString"
    )

    def tool_names(self, body: Mapping[str, Any]) -> list[str]:
        return [
            str(t.get("function", {}).get("name"))
            for t in body.get("tools") or []
            if isinstance(t, Mapping)
        ]

    def stream(self, reply: Reply, model: str, seq: int) -> Iterator[bytes]:
        base = {
            "id": f"chatcmpl-{seq}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return _sse(None, {**base, "choices": [choice]})

        yield chunk({"role": "assistant", "content": ""})
        if reply.text:
            yield chunk({"content": reply.text})
        for n, use in enumerate(reply.tool_uses):
            call = {
                "index": n,
                "id": f"call_{seq}_{n}",
                "type": "function",
                "function": {"name": use.name, "arguments": json.dumps(use.arguments)},
            }
            yield chunk({"tool_calls": [call]})
        yield chunk({}, "tool_calls" if reply.tool_uses else "stop")
        u = reply.usage
        usage = {
            "prompt_tokens": u.input,
            "completion_tokens": u.output,
            "total_tokens": u.input + u.output,
            "prompt_tokens_details": {"cached_tokens": u.cached_input},
            "completion_tokens_details": {"reasoning_tokens": u.reasoning},
        }
        yield _sse(None, {**base, "choices": [], "usage": usage})
        yield _sse(None, "[DONE]")

    def complete(self, reply: Reply, model: str, seq: int) -> dict[str, Any] | None:
        u = reply.usage
        message = {"role": "assistant", "content": reply.text}
        return {
            "id": f"chatcmpl-{seq}",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": u.input,
                "completion_tokens": u.output,
                "total_tokens": u.input + u.output,
                "prompt_tokens_details": {"cached_tokens": u.cached_input},
            },
        }


PROTOCOLS: dict[str, Protocol] = {
    "/v1/responses": ResponsesProtocol(),
    "/v1/messages": MessagesProtocol(),
    "/v1/chat/completions": ChatProtocol(),
}


# ---------------------------------------------------------------------------------------------
# The player: walks the script, one step per tool-carrying request.


@dataclass
class Step:
    """What the player decided to serve for one request."""

    served: str
    turn: int | None
    reply: Reply | None = None
    status: int | None = None  # HTTP error status for faults
    hang_seconds: float = 0.0


class ScriptPlayer:
    """Walks a script. Thread-safe: requests may arrive concurrently."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self._lock = threading.Lock()
        self._position = 0
        self._fault_served = 0
        self._reads_done = False  # the read half of a read-then-edit turn was served

    @property
    def finished(self) -> bool:
        return self._position >= len(self.script.turns)

    def next_step(self, protocol: Protocol, body: Mapping[str, Any]) -> Step:
        if self.script.judge is not None:
            prompt = "\n".join(_strings(body.get("messages")))
            text = judge_answer(self.script.judge, prompt)
            return Step("judge", None, Reply(self.script.usage, text=text))
        if not protocol.tool_names(body):
            return Step("side", None, Reply(self.script.side_usage, text=self.script.side_message))
        with self._lock:
            if self.finished:
                return Step("end-of-script", None, Reply(self.script.usage, text="Done."))
            index = self._position
            turn = self.script.turns[index]
            usage = turn.usage or self.script.usage
            if turn.fault is not None:
                self._fault_served += 1
                if turn.times is not None and self._fault_served >= turn.times:
                    self._advance()
                if turn.fault in ("drop", "hang"):
                    return Step(turn.fault, index, hang_seconds=turn.seconds)
                return Step(f"fault:{turn.fault}", index, status=int(turn.fault))
            if turn.message is not None:
                self._advance()
                return Step("message", index, Reply(usage, text=turn.message))
            edited = [c.path for c in turn.calls if c.kind in ("write", "edit")]
            if protocol.reads_before_edit and edited and not self._reads_done:
                self._reads_done = True
                return Step(
                    "reads",
                    index,
                    Reply(usage, tool_uses=tuple(protocol.read_uses(sorted(set(edited)), body))),
                )
            self._advance()
            return Step("calls", index, Reply(usage, tuple(protocol.tool_uses(turn.calls, body))))

    def _advance(self) -> None:
        self._position += 1
        self._fault_served = 0
        self._reads_done = False


# ---------------------------------------------------------------------------------------------
# The HTTP server.


class ScriptedModelServer:
    """Serve a script on 127.0.0.1 in a background thread; stops by itself when idle.

    Use as a context manager, or call start() and stop(). `base_url` is the root
    (http://127.0.0.1:PORT); OpenAI-style clients want `openai_base_url` (with /v1).
    """

    def __init__(
        self,
        script: Script | Mapping[str, Any] | Path | str,
        port: int = 0,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        """tls: a server-side context to speak HTTPS, as real providers do."""
        self.script = script if isinstance(script, Script) else load_script(script)
        self.player = ScriptPlayer(self.script)
        self.prefix_cache = PrefixCache()
        self.requests: list[RequestRecord] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._last_activity = time.monotonic()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _make_handler(self))
        self._httpd.daemon_threads = True
        self.scheme = "http"
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
            self.scheme = "https"
        self._threads: list[threading.Thread] = []

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    def start(self) -> ScriptedModelServer:
        serve = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1})
        watch = threading.Thread(target=self._watch_idle)
        self._threads = [serve, watch]
        for thread in self._threads:
            thread.daemon = True
            thread.start()
        return self

    def stop(self) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def wait(self) -> None:
        """Block until the server stops (idle timeout or stop())."""
        self._stopping.wait()

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _watch_idle(self) -> None:
        while not self._stopping.wait(0.2):
            if time.monotonic() - self._last_activity > self.script.idle_timeout:
                threading.Thread(target=self.stop, daemon=True).start()
                return

    def touch(self) -> None:
        self._last_activity = time.monotonic()

    def record(self, **fields: Any) -> RequestRecord:
        with self._lock:
            rec = RequestRecord(index=len(self.requests), **fields)
            self.requests.append(rec)
            return rec

    def sleep(self, seconds: float) -> None:
        """Hang for a fault, but wake up when the server stops."""
        self._stopping.wait(seconds)

    # Reading what happened -------------------------------------------------------------

    def served_usage(self, *, include_side: bool = False) -> dict[str, int]:
        """Token totals over every response served, in the project's meaning."""
        total = dict.fromkeys(Usage.__dataclass_fields__, 0)
        for rec in self.requests:
            if rec.usage is None or (rec.served == "side" and not include_side):
                continue
            for key, value in rec.usage.items():
                total[key] += value
        return total

    def tool_requests(self) -> list[RequestRecord]:
        return [r for r in self.requests if r.has_tools]


def _make_handler(server: ScriptedModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read records
            return

        def do_HEAD(self) -> None:
            server.touch()
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            server.touch()
            path = self.path.split("?", 1)[0]
            if path.endswith("/models"):
                model = {"id": server.script.model, "object": "model", "owned_by": "agentbench"}
                self._json(200, {"object": "list", "data": [model]})
            else:
                self._json(404, {"error": {"message": f"no such path {path}"}})

        def do_POST(self) -> None:
            server.touch()
            path = self.path.split("?", 1)[0]
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            protocol = PROTOCOLS.get(path)
            if protocol is None:
                self._json(404, {"error": {"message": f"no such path {path}"}})
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._json(400, {"error": {"message": "request body is not JSON"}})
                return
            step = server.player.next_step(protocol, body)
            if server.script.prefix_cache is not None and step.reply is not None:
                scope = "global"
                if server.script.prefix_cache == "key":
                    scope = str(self.headers.get("x-api-key") or self.headers.get("authorization"))
                usage = server.prefix_cache.serve(scope, prompt_text(body), step.reply.usage)
                step.reply = replace(step.reply, usage=usage)
            server.record(
                path=path,
                protocol=protocol.name,
                has_tools=bool(protocol.tool_names(body)),
                turn=step.turn,
                served=step.served,
                usage=step.reply.usage.to_dict() if step.reply else None,
                body=body,
                tools=[use.name for use in step.reply.tool_uses] if step.reply else [],
            )
            try:
                self._serve(protocol, step, body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its own timeout); nothing to answer
            finally:
                server.touch()

        def _serve(self, protocol: Protocol, step: Step, body: Mapping[str, Any]) -> None:
            if step.status is not None:
                self._json(step.status, protocol.error_body(step.status))
                return
            if step.served == "hang":
                server.sleep(step.hang_seconds)
                self.close_connection = True
                return
            seq = len(server.requests)
            reply = step.reply
            if reply is not None and not reply.tool_uses and not body.get("stream"):
                whole = protocol.complete(reply, server.script.model, seq)
                if whole is not None:
                    self._json(200, whole)
                    return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True
            if step.served == "drop":  # a stream that breaks off after its first bytes
                self.wfile.write(b": scripted stream drop\n\n")
                self.wfile.flush()
                return
            assert reply is not None
            for event in protocol.stream(reply, server.script.model, seq):
                self.wfile.write(event)
            self.wfile.flush()

        def _json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            if status == 429:
                self.send_header("retry-after", "0")
            self.end_headers()
            self.wfile.write(data)

    return Handler
