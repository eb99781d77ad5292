from server_stub.cli import main

main()
