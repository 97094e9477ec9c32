from ragmeter.cli.app import main

main()
