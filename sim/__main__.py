import sys

from layersched.sim.cli import main

sys.exit(main())
