"""What every tab shares: server guards, deep links, present mode, the view cache, API input checks, escaping and error helpers, vendored JavaScript."""
