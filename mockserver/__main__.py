from __future__ import annotations

import sys

from .standalone.cli import main

sys.exit(main())
