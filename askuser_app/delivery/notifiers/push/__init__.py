"""Web Push: encrypting and sending a push to a person's devices (``adapter``), and subscribing,
testing and removing devices (``views``)."""
