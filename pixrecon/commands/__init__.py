"""One module per command group of ``pixrecon``; ``pixrecon.cli`` assembles them."""
