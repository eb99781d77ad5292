"""The MCP face: the server over stdio (`server`), the `--http` gateway (`gateway`, its sockets and
token), the tools' output schemas, trace spans, the MCP App views and the process's confinement."""
