"""`python run.py ARGS` is `sitestrip run ARGS`; with no arguments it processes the embedded sample into ./out."""
import sys

from sitestrip.pipeline.cli import run

if __name__ == "__main__":
    sys.exit(run(sys.argv[1:], prog="python run.py"))
