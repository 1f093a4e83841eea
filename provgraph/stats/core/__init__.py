"""The numerical core: numpy arrays in, statistics out; nothing here knows about graphs."""
