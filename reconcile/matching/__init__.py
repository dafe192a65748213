"""The matching engine: one set-based statement per subject (movements, charges, payouts,
infractions) writes its verdicts into ``reconciliation_item`` — joins on keys in the
database, never Python loops over rows, so a day of a million lines stays fast."""
