"""One module per ``kerneltui`` subcommand."""
