"""``python -m askuser_client``: the ``askuser`` command, where it is not on PATH."""

import sys

from askuser_client.cli import main

sys.exit(main())
