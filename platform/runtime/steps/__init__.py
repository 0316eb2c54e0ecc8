"""What a run does between its calls to the app: sleeps and timers, wait_for_event, invoke, and
step.ai.infer, which Weir carries out itself."""
