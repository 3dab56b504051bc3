"""`python -m tunerguard.path`: print the absolute path of the packaged
libtunerguard.so, for people who set LD_PRELOAD themselves:

    LD_PRELOAD=$(python -m tunerguard.path) python train.py
    # in a Dockerfile, ENV LD_PRELOAD=<what it printed in the image>

Exit status 2 and one line on stderr when the library is not there.
"""
import sys

from tunerguard import lib_path


def main():
    try:
        print(lib_path())
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
