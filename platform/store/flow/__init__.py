"""Flow-control state in the store: gate state, run keys, the claim-time throttle and rolling
windows, live capacities and their wake-ups, fencing tokens, FIFO lanes."""
