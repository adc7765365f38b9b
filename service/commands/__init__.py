"""One module per `ctxlamp` subcommand: configure(parser) and run(args)."""
