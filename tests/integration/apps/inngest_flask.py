"""Official-SDK functions served by `inngest.flask` (plain functions, a WSGI app)."""

import flask
import inngest.flask

from tests.integration.apps.inngest_sync_functions import FUNCTIONS, client

app = flask.Flask(__name__)
inngest.flask.serve(app, client, FUNCTIONS)
