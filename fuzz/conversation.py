"""atheris campaign for the ``conversation`` harness (fuzz/harness.py, ``check_conversation``).

    python3 fuzz/conversation.py -atheris_runs=1000000 fuzz/corpus/conversation
"""

from campaign import main

if __name__ == "__main__":
    main("conversation")
