"""The engines: what turns the commands' inputs into what they print (in process, over
worker processes, on Spark). Each command's engine is imported when the command runs;
this package holds only what every command's exit shares."""


class Unusable(Exception):
    """An input or option a command cannot use: its message is the one line on stderr."""
