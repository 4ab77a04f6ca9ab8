workspace-api-mock serve          # the default fixtures on http://127.0.0.1:8080; Ctrl-C stops it
