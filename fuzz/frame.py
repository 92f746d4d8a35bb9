"""atheris campaign for the ``frame`` harness (fuzz/harness.py, ``check_frame``).

    python3 fuzz/frame.py -atheris_runs=1000000 fuzz/corpus/frame
"""

from campaign import main

if __name__ == "__main__":
    main("frame")
