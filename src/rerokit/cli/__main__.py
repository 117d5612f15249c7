import sys

from rerokit.cli import main

sys.exit(main())
