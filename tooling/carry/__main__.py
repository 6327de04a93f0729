from carry.cli import main

main()
