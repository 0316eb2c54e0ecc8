"""The `weir` command: `weir dev` and `weir start` (`main`), the subcommands that talk to a
running Weir (`sync`, `capacity`, `lanes`), and booting the HTTP server with its banner."""
