"""ragmeter.cli."""
