"""A stand-in for the Anthropic Messages API on loopback, so that real Claude Code (`claude -p`,
`ANTHROPIC_BASE_URL` pointing here) calls one MCP tool with no model and no network: the first
request that offers the tool is answered with a `tool_use` of it; every other with one text block
holding the tool results the request carries (what Claude Code got back from the tool), which
`claude -p` prints.

    python -m tests.oauth.fake_messages_api PORT TOOL ARGUMENTS_JSON
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Event = tuple[str, dict[str, Any]]


def answer(tool: str, arguments: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The message Claude Code is sent back."""
    offered = [each.get("name") for each in request.get("tools", [])]
    results = [
        block
        for message in request.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    if tool in offered and not results:
        content: list[dict[str, Any]] = [
            {"type": "tool_use", "id": "toolu_1", "name": tool, "input": arguments}
        ]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": "tool results: " + json.dumps(results)}]
        stop = "end_turn"
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "claude"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def stream(message: dict[str, Any]) -> Iterator[Event]:
    """`message` as the server-sent events of a streamed answer."""
    start = {**message, "content": [], "stop_reason": None}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opened = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": opened}  # fmt: skip
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield "message_delta", {"type": "message_delta", "delta": stop, "usage": {"output_tokens": 1}}
    yield "message_stop", {"type": "message_stop"}


def handler(tool: str, arguments: dict[str, Any]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the tests' readiness probe
            self._send(200, "application/json", b"{}")

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            request: dict[str, Any] = json.loads(self.rfile.read(length) or b"{}")
            if "count_tokens" in self.path:
                self._send(200, "application/json", b'{"input_tokens": 1}')
                return
            message = answer(tool, arguments, request)
            if not request.get("stream"):
                self._send(200, "application/json", json.dumps(message).encode())
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for name, data in stream(message):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        def _send(self, status: int, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


if __name__ == "__main__":
    port, tool, arguments = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
    ThreadingHTTPServer(("127.0.0.1", port), handler(tool, arguments)).serve_forever()
