"""Live capacities: operators changing the size of a limit or a rate meter, and shared meters
declared across apps."""
