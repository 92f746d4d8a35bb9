"""The single exception type raised by every codec on malformed input."""


class CodecError(ValueError):
    """Malformed input to a decoder, or an unencodable value given to an encoder."""
