"""nn.functional's family modules; `candle_bind.nn.functional` re-exports them and is the public module."""
