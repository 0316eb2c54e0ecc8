"""Events coming in: validation (`validate`) and the worker processes that parse large bodies
off the serving process (`workers`)."""
