"""HTTP to apps: the pooled aiohttp client (`client`) and the lean path for plain `http://`
apps (`lean`)."""
