"""dcpinspect: a packet inspector and capture analyser for database replication protocols."""

__version__ = "0.1.0"
