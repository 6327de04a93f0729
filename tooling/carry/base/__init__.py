"""What every stage shares and nothing else: errors, atomic writes, scratch names,
redaction. Imports nothing of carry's."""
