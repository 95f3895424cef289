"""`python -m cuprobe ...`: the same command as `cuprobe ...`."""
import sys

from ._cli import main

sys.exit(main())
