"""Chat surfaces: prompts sent to Telegram, Slack and Discord, answered there."""
