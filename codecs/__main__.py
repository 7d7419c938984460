"""`python -m wirecodecs ...`: the command-line inspector (see wirecodecs.cli)."""

from wirecodecs.cli import main

raise SystemExit(main())
