"""Everything askuser sends out of the process: one outbox engine and its kinds.

``outbox`` claims, sends, records and retries; ``webhooks`` signs and posts
results to agents' callback URLs; ``chats/`` holds the chat apps (Telegram,
Slack, Discord) and ``notifiers/`` the one-way reminders (email, Web Push),
each with its adapter, views and urls; ``egress`` is the one way out to a
network address that has been checked.

May import: ``runtime``, ``domain``, ``askuser_app.models`` and the SDKs.
"""
