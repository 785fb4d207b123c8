"""A real job replayed on the emulator: the size estimate, the launcher, the replay."""
