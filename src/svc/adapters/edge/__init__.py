"""The edge: the web server in front (nginx) that serves each host's live deployment."""
