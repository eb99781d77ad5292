from svc_serving.startup import long_lived_imports

with long_lived_imports():
    from server_stub.cli import main

main()
