"""Everything askuser sends out of the process: one delivery engine and its kinds.

``engine`` claims, attempts, records and retries every kind's rows, shared
out fairly (per owner first, then per host) with a pause for a host that
keeps timing out; ``webhooks`` is the kind that signs and posts results to
agents' callback URLs; ``messages`` the kind that sends prompts to people,
each through its channel's adapter (``adapters`` finds them all): ``chats/``
holds the chat apps (Telegram, Slack, Discord) and ``notifiers/`` the one-way
reminders (email, Web Push), each one folder with its adapter, views, urls and
templates, found by being there; ``egress`` is the one way out to a network
address that has been checked.

May import: ``runtime``, ``domain``, ``askuser_app.models`` and the SDKs.
"""
