"""The foundation every room stands on: typed records, Weir's words (enums), the clock, ids and
JSON values. It imports nothing of Weir."""
