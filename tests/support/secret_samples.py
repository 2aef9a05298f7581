"""Credentials of every shape redaction knows, as a model or a tool would write them.

Each sample is fake (no service issued it) but has the real shape. :data:`SHAPED_SECRETS`
maps a shape's kind to a text holding one credential of that kind, and
:data:`SECRET_PARTS` to the part of that text that must not survive redaction.
"""

from __future__ import annotations

GITHUB_TOKEN = "ghp_Zx9aB3cD4eF5gH6iJ7kL8mN9oP0qR1sT2uV3w"
GITHUB_PAT = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ"
AWS_ACCESS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SLACK_TOKEN = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_WEBHOOK_PATH = "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
GOOGLE_API_KEY = "AIzaSyA1234567890abcdefghijklmnopqrstuv"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM_BODY = "MIIEowIBAAKCAQEA1234567890abcdefXYZ\nabcdefABCDEF0123456789+/==QRS"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
PASSWORD = "hunter2!"
OPENAI_KEY = "sk-proj-Ab3dEf6hIj9lMn2pQr5tUv8x"

SHAPED_SECRETS: dict[str, str] = {
    "github-token": GITHUB_TOKEN,
    "aws-access-key-id": AWS_ACCESS_KEY_ID,
    "aws-secret-access-key": f"aws_secret_access_key = {AWS_SECRET}",
    "slack-token": SLACK_TOKEN,
    "slack-webhook": f"https://hooks.slack.com/services/{SLACK_WEBHOOK_PATH}",
    "google-api-key": GOOGLE_API_KEY,
    "jwt": JWT,
    "private-key": PEM,
    "password-assignment": f"DB_PASSWORD={PASSWORD}",
    "openai-style-key": OPENAI_KEY,
    "bearer-token": "Bearer abcdefghijklmnopqrstuvwxyz0123",
}
"""A text holding one credential of each kind."""

SECRET_PARTS: dict[str, str] = {
    "github-token": GITHUB_TOKEN,
    "aws-access-key-id": AWS_ACCESS_KEY_ID,
    "aws-secret-access-key": AWS_SECRET,
    "slack-token": SLACK_TOKEN,
    "slack-webhook": SLACK_WEBHOOK_PATH,
    "google-api-key": GOOGLE_API_KEY,
    "jwt": JWT,
    "private-key": PEM_BODY,
    "password-assignment": PASSWORD,
    "openai-style-key": OPENAI_KEY,
    "bearer-token": "abcdefghijklmnopqrstuvwxyz0123",
}
"""What of each text in :data:`SHAPED_SECRETS` is the secret."""
