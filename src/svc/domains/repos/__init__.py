"""Git repositories of projects: the API, git over HTTPS and SSH, ref history, browsing, deploy on push."""
