"""`python -m harness.agent --work DIR --lease SECONDS`: see harness/agent/server.py."""
import sys

from harness.agent.server import main

sys.exit(main())
