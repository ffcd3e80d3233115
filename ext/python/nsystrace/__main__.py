import sys

from nsystrace.cli import main

sys.exit(main())
