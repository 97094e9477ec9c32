"""ragmeter.runner."""
