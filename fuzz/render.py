"""atheris campaign for the ``render`` harness (fuzz/harness.py, ``check_render``).

    python3 fuzz/render.py -atheris_runs=1000000 fuzz/corpus/render
"""

from campaign import main

if __name__ == "__main__":
    main("render")
