"""Everything a tier is: each module implements one tier (or two, for ``generation.py``) and
declares it with :func:`ragmeter.tiers.registry.register_tier`; ``registry.py`` lists them,
``context.py`` is what a tier gets at run time, ``options.py`` validates a tier's options."""
