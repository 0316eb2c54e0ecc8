"""Inside a call: the step API, the ops it records, parallel groups, memos and execution."""
