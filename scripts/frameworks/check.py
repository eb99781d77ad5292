"""What nine agent frameworks make of svc-mcp's tools, with no model in the loop.

Runs in an environment of its own (scripts/frameworks/requirements.txt, set up by
scripts/frameworks.py), never in the product's: it imports only the frameworks and the official
MCP client. The server is `SVC_MCP_COMMAND` over stdio, its backends the demo stubs named by the
variables it inherits.

For every tool and every converter it takes what a model would read (the parameters schema the
framework sends) and checks, against the tool's own input schema, that:
- no optional input is forced: a non-strict converter leaves it out of `required`; a strict one
  (which requires every input) leaves it able to say "not given": `null`, or a neutral value
  (a blank text or list, any page size), never a choice without a null branch;
- no object is emptied: a declared object keeps its fields, an open one stays open (or the
  framework falls back to a non-strict schema, as openai-agents and pydantic-ai do);
- no allowed value or range is lost: each `enum` value and the input's description (which
  states ranges and defaults) is still somewhere in what the model reads.
FastMCP's client and langchain-mcp-adapters list the tools over stdio with their own MCP clients;
their tools go through the same checks (FastMCP's client hands the model the listed schema as is,
langchain-mcp-adapters' tools go through `convert_to_openai_tool`).
Then it calls every list tool with only its required arguments (none) through smolagents',
openai-agents' and langchain-mcp-adapters' tool-call paths, and `get_positions {"limit": 2}`
through smolagents'.

Prints one line per failure and a closing `N passed, N failed`; exits 1 on any failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from agents import Agent, RunContextWrapper
from agents.mcp import MCPServerStdio, MCPUtil
from agents.tool_context import ToolContext
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StdioTransport
from google.genai import types as genai
from jsonschema_pydantic import jsonschema_to_pydantic
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_mcp_adapters.tools import load_mcp_tools
from llama_index.core.tools import ToolMetadata
from llama_index.tools.mcp.base import McpToolSpec
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import Tool
from mcp_use.agents.adapters.langchain_adapter import LangChainAdapter
from mcpadapt.smolagents_adapter import SmolAgentsAdapter
from pydantic_ai.profiles.google import GoogleJsonSchemaTransformer, GoogleOpenAPISchemaTransformer
from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer
from smolagents import ToolCollection
from smolagents.models import get_tool_json_schema
from smolagents.tools import validate_tool_arguments

Schema = dict[str, Any]
failures: list[str] = []
passed = 0
KNOWN = {
    "LangChain convert_to_openai_tool(strict=True): submit_intel.envelope.body is open, the "
    "model is told it must be empty": "LangChain's strict mode closes every object, an open one "
    "too; pydantic-ai closes one that does not say it is open, so body says it (README)",
}
"""Findings that no spelling of ours avoids, each with why; printed, not counted as failures."""


def check(condition: bool, what: str) -> None:
    global passed
    if condition:
        passed += 1
    elif what in KNOWN:
        print(f"KNOWN {what}: {KNOWN[what]}", flush=True)
    else:
        failures.append(what)
        print(f"FAILED {what}", flush=True)


# What each framework sends a model as a tool's parameters. `strict` says whether it requires
# every input (OpenAI's strict mode).


def openai_agents(tool: Tool) -> tuple[Schema, bool]:
    converted = MCPUtil.to_function_tool(tool, _AGENTS_SERVER, convert_schemas_to_strict=True)
    return converted.params_json_schema, converted.strict_json_schema


def pydantic_ai_openai(tool: Tool) -> tuple[Schema, bool]:
    """pydantic-ai's default (`strict=None`): strict when the schema allows it, else as is."""
    probe = OpenAIJsonSchemaTransformer(copy.deepcopy(tool.inputSchema), strict=None)
    schema = probe.walk()
    if probe.is_strict_compatible:
        return OpenAIJsonSchemaTransformer(
            copy.deepcopy(tool.inputSchema), strict=True
        ).walk(), True
    return schema, False


def pydantic_ai_google(tool: Tool) -> tuple[Schema, bool]:
    return GoogleJsonSchemaTransformer(copy.deepcopy(tool.inputSchema)).walk(), False


def gemini_declaration(tool: Tool) -> tuple[Schema, bool]:
    """Gemini's function-declaration subset (OpenAPI 3.0 `Schema`), as pydantic-ai maps it."""
    mapped = GoogleOpenAPISchemaTransformer(copy.deepcopy(tool.inputSchema)).walk()
    declaration = genai.FunctionDeclaration(
        name=tool.name, description=tool.description, parameters=genai.Schema.model_validate(mapped)
    )
    assert declaration.parameters is not None
    dumped = declaration.parameters.model_dump(exclude_none=True, mode="json")
    return _lower_types(dumped), False


def langchain_strict(tool: Tool) -> tuple[Schema, bool]:
    function = {"name": tool.name, "description": tool.description, "parameters": tool.inputSchema}
    converted = convert_to_openai_tool(copy.deepcopy(function), strict=True)
    return converted["function"]["parameters"], True


def mcp_use(tool: Tool) -> tuple[Schema, bool]:
    """mcp-use's LangChain adapter: a pydantic model from the schema, then LangChain's tool."""
    fixed = LangChainAdapter().fix_schema(copy.deepcopy(tool.inputSchema))
    model = jsonschema_to_pydantic(fixed)
    return convert_to_openai_tool(model)["function"]["parameters"], False


def llama_index(tool: Tool) -> tuple[Schema, bool]:
    model = McpToolSpec(client=None).create_model_from_json_schema(
        copy.deepcopy(tool.inputSchema), tool.name
    )
    metadata = ToolMetadata(name=tool.name, description=tool.description or "", fn_schema=model)
    return metadata.get_parameters_dict(), False


def smolagents_schema(tool: Tool) -> tuple[Schema, bool]:
    """What smolagents' MCP adapter (mcpadapt) makes of the tool, as smolagents sends it."""
    adapted = SmolAgentsAdapter().adapt(lambda arguments: None, tool)
    return get_tool_json_schema(adapted)["function"]["parameters"], False


CONVERTERS: dict[str, Callable[[Tool], tuple[Schema, bool]]] = {
    "openai-agents (strict)": openai_agents,
    "pydantic-ai OpenAI": pydantic_ai_openai,
    "pydantic-ai Google": pydantic_ai_google,
    "Gemini function declaration": gemini_declaration,
    "LangChain convert_to_openai_tool(strict=True)": langchain_strict,
    "mcp-use (LangChain adapter)": mcp_use,
    "llama-index McpToolSpec": llama_index,
    "smolagents": smolagents_schema,
}


def _lower_types(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_lower_types(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: value.lower() if key == "type" and isinstance(value, str) else _lower_types(value)
        for key, value in schema.items()
    }


def _resolve(schema: Schema, root: Schema) -> Schema:
    while "$ref" in schema:
        name = schema["$ref"].rpartition("/")[2]
        schema = {
            **root.get("$defs", {}).get(name, {}),
            **{k: v for k, v in schema.items() if k != "$ref"},
        }
    return schema


def _admits_null(schema: Schema, root: Schema) -> bool:
    schema = _resolve(schema, root)
    kind = schema.get("type")
    branches = [_resolve(b, root) for b in schema.get("anyOf", [])]
    return (
        schema.get("nullable") is True
        or kind == "null"
        or (isinstance(kind, list) and "null" in kind)
        or any(b.get("type") == "null" for b in branches)
    )


def _neutral(original: Schema) -> bool:
    """Whether the input has a value that changes nothing (the server's rule: a blank text or
    list is not given, and `limit` has a default)."""
    kind = original.get("type")
    return (kind in ("string", "array") and "enum" not in original) or kind == "integer"


def _declared(schema: Schema, root: Schema) -> Schema:
    """The object branch of `schema` (strict converters may wrap it in an anyOf)."""
    schema = _resolve(schema, root)
    for branch in schema.get("anyOf", []):
        branch = _resolve(branch, root)
        if branch.get("type") == "object":
            return branch
    return schema


def check_conversion(framework: str, tool: Tool, read: Schema, strict: bool) -> None:
    original = tool.inputSchema
    properties = read.get("properties", {})
    required = set(read.get("required", []))
    for name, given in original.get("properties", {}).items():
        where = f"{framework}: {tool.name}.{name}"
        seen = properties.get(name)
        check(seen is not None, f"{where} is missing")
        if seen is None:
            continue
        if name not in original.get("required", []) and name in required:
            if strict:
                check(
                    _admits_null(seen, read) or _neutral(given),
                    f"{where} is optional but forced, with no null or neutral value",
                )
            else:
                check(False, f"{where} is optional but made required")
        text = json.dumps(seen)
        for value in given.get("enum", []) + [
            v for b in given.get("anyOf", []) for v in b.get("enum", [])
        ]:
            check(str(value) in text, f"{where} lost the allowed value {value!r}")
        if description := given.get("description"):
            check(description in text, f"{where} lost its description {description!r}")
        if given.get("type") == "object" and "properties" in given:
            check_object(where, given, _declared(seen, read), read)


def check_object(where: str, given: Schema, seen: Schema, root: Schema) -> None:
    """The declared fields are still declared, or (where a converter makes every object a plain
    dict, as llama-index does) named in the description the model reads."""
    fields = seen.get("properties", {})
    named = all(name in seen.get("description", "") for name in given["properties"])
    check(
        set(fields) == set(given["properties"]) or (not fields and named),
        f"{where} declares {sorted(given['properties'])}, the model reads {sorted(fields)}",
    )
    for name, field in given["properties"].items():
        if field.get("type") == "object" and "properties" not in field and name in fields:
            inner = _declared(fields[name], root)
            emptied = inner.get("additionalProperties") is False and not inner.get("properties")
            check(not emptied, f"{where}.{name} is open, the model is told it must be empty")


def calls_through_smolagents(server: StdioServerParameters, names: list[str]) -> None:
    """smolagents' MCP client and adapter (`ToolCollection.from_mcp`), and its tool-call path:
    the arguments checked as a ToolCallingAgent checks them, then the tool called."""
    calls = [(name, {}) for name in names] + [("get_positions", {"limit": 2})]
    with ToolCollection.from_mcp(server, trust_remote_code=True, structured_output=True) as tools:
        adapted = {tool.name: tool for tool in tools.tools}
        for name, arguments in calls:
            where = f"smolagents call {name} {json.dumps(arguments)}"
            try:
                validate_tool_arguments(adapted[name], arguments)
                result = adapted[name](**arguments)
            except Exception as refused:
                check(False, f"{where}: {refused!r}")
                continue
            check(isinstance(result, dict) and "result" in result, f"{where}: {str(result)[:200]}")


async def call_through_openai_agents(server: MCPServerStdio, tool: Tool) -> None:
    agent = Agent(name="check")
    tools = await MCPUtil.get_function_tools(
        server, convert_schemas_to_strict=True, run_context=RunContextWrapper(None), agent=agent
    )
    function = next(t for t in tools if t.name == tool.name)
    context = ToolContext(None, tool_name=tool.name, tool_call_id="call", tool_arguments="{}")
    output = await function.on_invoke_tool(context, "{}")
    text = output if isinstance(output, str) else json.dumps(output, default=str)
    with contextlib.suppress(ValueError, KeyError, TypeError):
        text = json.loads(text)["text"]  # one content block: the block as JSON
    check(is_a_list_result(text), f"openai-agents call {tool.name} {{}}: {text[:200]}")


def is_a_list_result(text: str) -> bool:
    """A list tool's text as svc-mcp sends it: `{"result": [...]...`, or with the marker of text
    written by others first (`{"untrusted": {...}, "result": [...]...`, svc_mcp.serve.untrusted)."""
    if text.startswith('{"untrusted":'):
        return '},"result":[' in text
    return text.startswith('{"result":')


def check_listed(framework: str, tools: list[Tool], read: dict[str, tuple[Schema, bool]]) -> None:
    """A framework's own listing, each tool's schema as it reaches a model checked as above."""
    check(set(read) == {t.name for t in tools}, f"{framework} lists {sorted(read)}")
    for tool in tools:
        if tool.name in read:
            check_conversion(framework, tool, *read[tool.name])


async def fastmcp_listing(command: str) -> dict[str, tuple[Schema, bool]]:
    """FastMCP's client over stdio; it hands on each listed input schema as it is."""
    transport = StdioTransport(command=command, args=[], env=dict(os.environ))
    async with FastMCPClient(transport) as client:
        return {tool.name: (tool.inputSchema, False) for tool in await client.list_tools()}


def _langchain_read(tool: BaseTool) -> tuple[Schema, bool]:
    return convert_to_openai_tool(tool)["function"]["parameters"], False


async def through_langchain_mcp_adapters(
    session: ClientSession, tools: list[Tool], lists: list[Tool]
) -> None:
    """langchain-mcp-adapters' `load_mcp_tools` (LangChain tools), as `convert_to_openai_tool`
    sends them; then each list tool called with no arguments through the tool's `ainvoke`."""
    adapted = {tool.name: tool for tool in await load_mcp_tools(session)}
    check_listed(
        "langchain-mcp-adapters", tools, {n: _langchain_read(t) for n, t in adapted.items()}
    )
    for tool in lists:
        where = f"langchain-mcp-adapters call {tool.name} {{}}"
        try:
            output = await adapted[tool.name].ainvoke({})
        except Exception as refused:
            check(False, f"{where}: {refused!r}")
            continue
        blocks = output if isinstance(output, list) else [output]
        text = "".join(b["text"] if isinstance(b, dict) else str(b) for b in blocks)
        check(is_a_list_result(text), f"{where}: {text[:200]}")


_AGENTS_SERVER: Any = None


async def main() -> list[str]:
    global _AGENTS_SERVER
    command = os.environ["SVC_MCP_COMMAND"]
    server = StdioServerParameters(command=command, env=dict(os.environ))
    _AGENTS_SERVER = MCPServerStdio(
        params={"command": command, "env": dict(os.environ)}, name="svc-mcp", cache_tools_list=True
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        check(len(tools) == 24, f"the official client lists 24 tools, not {len(tools)}")
        for tool in tools:
            for framework, convert in CONVERTERS.items():
                try:
                    read_schema, strict = convert(tool)
                except Exception as error:  # a converter that refuses the tool is a failure
                    check(False, f"{framework}: {tool.name} not converted: {error!r}")
                    continue
                check_conversion(framework, tool, read_schema, strict)
        lists = [t for t in tools if "next_cursor" in json.dumps(t.outputSchema or {})]
        check(len(lists) == 18, f"18 list tools, not {len(lists)}")
        await through_langchain_mcp_adapters(session, tools, lists)
    check_listed("FastMCP client", tools, await fastmcp_listing(command))
    async with _AGENTS_SERVER:
        for tool in lists:
            await call_through_openai_agents(_AGENTS_SERVER, tool)
    return [tool.name for tool in lists]


if __name__ == "__main__":
    list_tools = asyncio.run(main())
    server = StdioServerParameters(command=os.environ["SVC_MCP_COMMAND"], env=dict(os.environ))
    calls_through_smolagents(server, list_tools)
    print(f"frameworks: {passed} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)
