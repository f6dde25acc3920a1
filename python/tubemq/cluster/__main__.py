"""``python -m tubemq.cluster``: the same as ``tubemq cluster``."""

import sys

from tubemq.cluster.cli import main

sys.exit(main())
