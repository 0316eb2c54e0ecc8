from weir.platform.cli import main

main()
