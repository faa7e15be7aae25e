"""Data: the Well-format writer and validator, the channel-slot table, dataset generation and registration."""
