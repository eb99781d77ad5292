from svc_mcp.cli.main import main

main()
