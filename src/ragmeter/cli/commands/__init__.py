"""One module per subcommand; each defines ``register(app: typer.Typer) -> None``."""
