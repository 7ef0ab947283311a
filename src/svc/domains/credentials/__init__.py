"""Personal access tokens and SSH keys of the signed-in user (spec section 4, 'Repositories, SSH keys,
access tokens': the /v1/me/ssh-keys and /v1/me/tokens rows; section 5 points 4, 5 and 8)."""
