"""The chat apps: a platform's adapter (``telegram``, ``slack``, ``discord``) over one vocabulary
(``base``) and one core that links identities, renders cards and reads replies (``core``)."""
