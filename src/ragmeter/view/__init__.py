"""``ragmeter view``: a local, read-only web app over the results store.

``make_app(store_url)`` builds the aiohttp application; ``serve(store_url, host=, port=)`` runs
it (bound to 127.0.0.1 by default). Pages are rendered by :mod:`ragmeter.view.pages`.
"""

from ragmeter.view.app import DEFAULT_HOST, DEFAULT_PORT, make_app, serve

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "make_app", "serve"]
