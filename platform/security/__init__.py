"""What every HTTP request passes before the API or the UI sees it, shared by both: who may call
(`auth`, `sessions`, `lockout`), what a browser may make Weir do (`guard`, `headers`), and how much
a request body may cost (`bodies`, `budget`)."""
