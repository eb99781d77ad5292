"""What the stub servers and the `svc-mcp --http` gateway share to serve HTTP: the loopback
check, uvicorn's fast HTTP protocol bounded in time, bytes and connections, and the check that
refuses guessable secrets. It imports neither side, so the client never depends on the stubs, nor
the stubs on the client."""
