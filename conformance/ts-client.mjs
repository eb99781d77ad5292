// The official TypeScript MCP client against svc-mcp --http (run by scripts/conformance.py,
// through a round-robin proxy in front of two gateways). Usage: node ts-client.mjs URL CALLS
// Prints one JSON line: the negotiated protocol version, the tool count and each call's outcome.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, calls = "8"] = process.argv.slice(2);
const token = process.env.SVC_MCP_GATEWAY_TOKEN;
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "svc-mcp-ts-check", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const outcomes = [];
for (let i = 0; i < Number(calls); i++) {
  const result = await client.callTool({ name: "portal_page", arguments: {} });
  outcomes.push(result.content?.[0]?.text?.split(":")[0] ?? "no content");
}
console.log(JSON.stringify({
  protocolVersion: transport.protocolVersion ?? null,
  sessionId: transport.sessionId ?? null,
  tools: tools.length,
  outcomes,
}));
await client.close();
