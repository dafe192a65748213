"""A business day's results as files for finance tools (docs/exports.md): its exceptions
and its reconciled movements from the day's latest completed run, and its statement lines
as booked by the provider — as CSV (plain, or for Excel in Brazil), JSON lines, or OFX
for the statement. Every row carries a ``key`` that stays the same when the day is run or
exported again, so an importer can post each row once.

``files.open_export`` is the one entry point (the ``pixrecon export`` command, ``pixrecon
reconcile --export`` and the dashboard's download links); the rest, one concept each:
``table`` (rows and columns), ``runs`` (which run is the day's answer), ``exceptions``,
``movements`` and ``statement`` (gathering rows), ``tabular`` (CSV and JSON lines) and
``ofx`` (a bank statement)."""
