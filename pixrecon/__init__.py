"""The ``pixrecon`` console script: wires receiver, worker, reconcile and sandbox together.

Nothing else imports this package; it is the composition root.
"""
