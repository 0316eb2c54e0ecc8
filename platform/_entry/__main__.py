from weir.app import main

main()
