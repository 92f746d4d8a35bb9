"""atheris campaign for the ``hex`` harness (fuzz/harness.py, ``check_hex``).

    python3 fuzz/hex.py -atheris_runs=1000000 fuzz/corpus/hex
"""

from campaign import main

if __name__ == "__main__":
    main("hex")
