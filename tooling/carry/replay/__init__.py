"""The replay engine, below every command that turns patches into commits: `chain` (patches
become commits, cached), `targets` (what to replay onto), `drops` (what upstream already has)
and `engine` (the replay itself, with its batches, conflicts and forecast)."""
