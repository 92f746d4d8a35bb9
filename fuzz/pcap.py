"""atheris campaign for the ``pcap`` harness (fuzz/harness.py, ``check_pcap``).

    python3 fuzz/pcap.py -atheris_runs=1000000 fuzz/corpus/pcap
"""

from campaign import main

if __name__ == "__main__":
    main("pcap")
