"""What the stub servers and the `svc-mcp --http` gateway share to serve HTTP: the loopback
check, uvicorn's fast HTTP protocol bounded in time, bytes and connections, the check that refuses
guessable secrets and the Landlock confinement; and one help style for every command line
(`help_style`). It imports neither side, so the client never depends on the stubs, nor the stubs
on the client."""
