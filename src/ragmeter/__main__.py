from ragmeter.cli.entry import main

main()
