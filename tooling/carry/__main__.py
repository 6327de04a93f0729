from carry.cli.main import main

main()
