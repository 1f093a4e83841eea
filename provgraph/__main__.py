"""``python -m provgraph`` runs the command line."""

from provgraph.cli import main

main()
