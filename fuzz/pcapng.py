"""atheris campaign for the ``pcapng`` harness (fuzz/harness.py, ``check_pcapng``).

    python3 fuzz/pcapng.py -atheris_runs=1000000 fuzz/corpus/pcapng
"""

from campaign import main

if __name__ == "__main__":
    main("pcapng")
