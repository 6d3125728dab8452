"""Everything askuser sends out of the process: one delivery engine and its kinds.

``engine`` claims, attempts, records and retries every kind's rows, shared
out fairly (per owner first, then per host) with a pause for a host that
keeps timing out; ``webhooks`` is the kind that signs and posts results to
agents' callback URLs; ``messages`` the kind that sends prompts to people,
each through its channel's adapter: ``channels/`` is the one registry of
channels, one folder each, chat apps (Telegram, Slack, Discord) and one-way
reminders (email, Web Push) alike, with its adapter, views, urls and templates,
found by being there, and ``channels/chats/`` what the chat apps share; ``egress`` is the one way out to a network
address that has been checked.

May import: ``runtime``, ``domain``, ``askuser_app.models`` and the SDKs.
"""
