import sys

from pymc_rdp.cli.main import main

sys.exit(main())
