"""Reading an app's sync off the wire: every field, option and trigger into the typed configs of
`weir.platform.functions`, every problem reported at once."""
