"""The command line's entry (the console script, ``python -m dcpinspect``): a command that
:mod:`.arguments` reads by its table, given plainly, runs without the typer app (no typer,
click or rich imported); any other command line goes to the typer app (:mod:`.cli`)."""

import sys


def main() -> None:
    from dcpinspect.arguments import QUICK, guarded, parsed  # absolute: spark-submit runs this file by its path

    args = sys.argv[1:]
    if args and args[0] in QUICK:
        table, command = QUICK[args[0]]
        options = parsed(table, args[1:])
        if options is not None:
            guarded(lambda: command(options))
            return
    from dcpinspect.cli import main as typer_main

    typer_main()


if __name__ == "__main__":
    main()
