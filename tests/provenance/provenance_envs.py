"""The testbed's three environments: mail and calendar, a bank, a team chat with web pages.

Written for this project (no public benchmark's tasks or attack strings). Each builder
takes the injections (slot -> text) and returns a fresh world; each environment lives in a
module of its own.
"""

from __future__ import annotations

from provenance_env_bank import BANK
from provenance_env_chat import CHAT
from provenance_env_mail import MAIL

ENVIRONMENTS = (MAIL, BANK, CHAT)
