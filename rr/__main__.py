from rr.cli import main

main()
