"""One-way reminders that a question waits: ``email/`` and ``push/`` (Web Push), each a folder with
its adapter, its views and what it needs besides."""
