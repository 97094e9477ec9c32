"""ragmeter.tiers."""
