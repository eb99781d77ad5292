from svc_mcp.cli import main

main()
