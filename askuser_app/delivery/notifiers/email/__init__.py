"""Email: the mail for an unanswered prompt (``adapter``), its signed one-tap answer links
(``views``), and the file backend that keeps mail on disk when no SMTP server is set (``backend``)."""
