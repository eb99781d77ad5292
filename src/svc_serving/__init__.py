"""What the stub servers and the `svc-mcp --http` gateway share to serve HTTP: the loopback
check and uvicorn's fast HTTP protocol with a bounded request head. It imports neither side, so
the client never depends on the stubs, nor the stubs on the client."""
