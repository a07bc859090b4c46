"""The SQL both bundled stores share, written once over a :class:`~.dialect.Dialect`."""
